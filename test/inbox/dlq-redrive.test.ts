import { GetQueueAttributesCommand, SendMessageCommand, StartMessageMoveTaskCommand } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { KeyStrategy } from '../../lambda/inbox/prepare/keys.js';
import { REDRIVEN_MESSAGE_ID_ATTRIBUTE } from '../../lambda/inbox/prepare/keys.js';
import { redriveDeadLetters, redriveDeduplicationId } from '../../lambda/operations/dead-letter-redrive.js';
import type { DeadLetterRedriveOptions } from '../../lambda/operations/dead-letter-redrive.js';
import { SqsEventSource } from '../../local/event-source.js';
import { countingConsumer, createAppliedTable, timesApplied } from '../support/counting-consumer.js';
import { inbox } from '../../lambda/inbox/index.js';
import { inboxFixture, lambdaContext, recordingLogger, recordingMetrics, sqsRecord } from '../support/inbox.js';
import type { InboxFixture } from '../support/inbox.js';
import { eventually, settle, startSqsFixture } from '../support/sqs.js';
import type { SqsFixture } from '../support/sqs.js';

let db: InboxFixture;
let f: SqsFixture;
beforeAll(async () => {
  db = await inboxFixture('dlq_redrive');
  await createAppliedTable(db);
});
afterAll(async () => db.close());
beforeEach(async () => {
  f = await startSqsFixture();
});
afterEach(async () => {
  db.server.faults.clear();
  await f.close();
});

const VISIBILITY_SECONDS = 30;
const MAX_RECEIVE_COUNT = 3;
let run = 0;

const applied = (orderId: string) => timesApplied(db, orderId);

/**
 * A source queue whose dead-letter queue takes a message after 3 receives, and a consumer of it that counts
 * each order's effect. `send` puts orders on it as a plain producer does (no idempotency-key).
 */
function stage(kind: 'fifo' | 'standard', key: KeyStrategy = 'message-id') {
  run++;
  const suffix = kind === 'fifo' ? '.fifo' : '';
  const fifo: Record<string, string> = kind === 'fifo' ? { FifoQueue: 'true' } : {};
  const dlq = f.sqs.model.createQueue(`orders-dlq-${run}${suffix}`, fifo);
  const queue = f.sqs.model.createQueue(`orders-${run}${suffix}`, {
    ...fifo,
    VisibilityTimeout: String(VISIBILITY_SECONDS),
    RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: MAX_RECEIVE_COUNT }),
  });
  const consumer = `order-worker-${run}`;
  const delivered: SQSRecord[] = [];
  const handler = countingConsumer(db, consumer, key);
  return {
    dlq,
    queue,
    consumer,
    delivered,
    order: (name: string) => `${name}-${run}`,
    async send(orderId: string, extra: { groupId?: string; attributes?: Record<string, string> } = {}) {
      await f.client.send(
        new SendMessageCommand({
          QueueUrl: queue.url,
          MessageBody: JSON.stringify({ orderId }),
          MessageAttributes: Object.fromEntries(
            Object.entries(extra.attributes ?? {}).map(([name, value]) => [name, { DataType: 'String', StringValue: value }]),
          ),
          ...(kind === 'fifo' ? { MessageGroupId: extra.groupId ?? 'g1', MessageDeduplicationId: `${orderId}-send` } : {}),
        }),
      );
    },
    /**
     * Runs the queue through the consumer as Lambda's event source mapping does, receive round after receive
     * round (each after the visibility timeout), until the queue is empty: consumed, or dead-lettered.
     * `afterRound(n)` runs once round n's invocations are over.
     */
    async deliver(afterRound: (round: number) => void = () => {}) {
      const model = f.sqs.model;
      const source = new SqsEventSource({
        model,
        queue: queue.name,
        functionTimeoutMs: 10_000,
        handler: async (event, context) => {
          delivered.push(...event.Records);
          return handler(event, context);
        },
      });
      source.start();
      try {
        for (let round = 1; round <= MAX_RECEIVE_COUNT + 2; round++) {
          const settled = () => model.counts(queue.name).visible === 0 && source.stats.activeInvocations === 0;
          await eventually(settled, 10_000, `receive round ${round}`);
          await settle(20);
          await eventually(settled, 10_000, `receive round ${round}`);
          afterRound(round);
          const { inFlight, delayed } = model.counts(queue.name);
          if (inFlight + delayed === 0) return;
          f.clock.advance(VISIBILITY_SECONDS * 1000 + 1);
        }
        throw new Error('the queue did not empty');
      } finally {
        await source.stop();
      }
    },
    /**
     * Commit answers lost on the first receive (each record's effect commits, as far as it runs), then the
     * database unreachable on every later one: each message fails maxReceiveCount times and is dead-lettered.
     */
    async deadLetter() {
      db.server.faults.dropResponse({ operation: 'CommitTransaction', count: Number.POSITIVE_INFINITY });
      await this.deliver((round) => {
        if (round !== 1) return;
        db.server.faults.clear();
        db.server.faults.serverError({ count: Number.POSITIVE_INFINITY });
      });
      db.server.faults.clear();
    },
    redriveOptions: (extra: Partial<DeadLetterRedriveOptions> = {}): DeadLetterRedriveOptions => ({
      client: f.client,
      deadLetterQueueUrl: dlq.url,
      waitTimeSeconds: 0,
      ...extra,
    }),
  };
}

describe.each(['standard', 'fifo'] as const)('a %s queue whose commit answers were lost until its messages were dead-lettered', (kind) => {
  /** Three orders: a and b in one group, c in another. On FIFO, b never ran: a's failure held it back. */
  async function deadLettered(key: KeyStrategy = 'message-id') {
    const s = stage(kind, key);
    const [a, b, c] = ['a', 'b', 'c'].map(s.order);
    await s.send(a!, { groupId: 'g1', attributes: { tenant: 'acme' } });
    await s.send(b!, { groupId: 'g1' });
    await s.send(c!, { groupId: 'g2' });
    await s.deadLetter();
    expect(f.sqs.model.peekMessages(s.dlq.name)).toHaveLength(3);
    const committedB = kind === 'fifo' ? 0 : 1;
    expect([await applied(a!), await applied(b!), await applied(c!)]).toEqual([1, committedB, 1]);
    return { s, a: a!, b: b!, c: c!, committedB };
  }

  it("SQS's own redrive (StartMessageMoveTask, the console's) applies the committed effects a second time with messageId keys", async () => {
    const { s, a, b, c, committedB } = await deadLettered();
    const dlqIds = f.sqs.model.peekMessages(s.dlq.name).map((m) => m.messageId);

    await f.client.send(new StartMessageMoveTaskCommand({ SourceArn: s.dlq.arn }));
    await s.deliver();

    // The behaviour the docs warn about: new messageIds, new keys, the effects applied again.
    const redelivered = s.delivered.slice(-3);
    expect(redelivered.map((r) => r.messageId).filter((id) => dlqIds.includes(id))).toEqual([]);
    expect([await applied(a), await applied(b), await applied(c)]).toEqual([2, committedB + 1, 2]);
  });

  it('sqs-inbox dlq redrive applies each message exactly once: the committed ones are duplicates, the others take effect', async () => {
    const { s, a, b, c } = await deadLettered();
    const dlqIds = f.sqs.model.peekMessages(s.dlq.name).map((m) => m.messageId);

    const report = await redriveDeadLetters(s.redriveOptions());
    expect(report).toMatchObject({ moved: 3, skipped: 0, failed: 0 });
    expect(report.outcomes.map((o) => o.destination)).toEqual([s.queue.url, s.queue.url, s.queue.url]);
    expect(f.sqs.model.peekMessages(s.dlq.name)).toEqual([]);
    await s.deliver();

    const redelivered = s.delivered.slice(-3);
    expect(redelivered.map((r) => r.messageAttributes[REDRIVEN_MESSAGE_ID_ATTRIBUTE]?.stringValue)).toEqual(dlqIds);
    expect(redelivered.map((r) => r.messageAttributes.tenant?.stringValue)).toEqual(['acme', undefined, undefined]);
    if (kind === 'fifo') expect(redelivered.map((r) => r.attributes.MessageGroupId)).toEqual(['g1', 'g1', 'g2']);
    expect([await applied(a), await applied(b), await applied(c)]).toEqual([1, 1, 1]);
  });

  it("with key 'auto' and no idempotency-key attribute, the redriven messages are claimed under their first messageId too", async () => {
    const { s, a, b, c } = await deadLettered('auto');
    await redriveDeadLetters(s.redriveOptions());
    await s.deliver();
    expect([await applied(a), await applied(b), await applied(c)]).toEqual([1, 1, 1]);
  });

  it("refuses a consumer without the queue it consumes: a dead-letter queue may hold another queue's messages, which its claims must not skip", async () => {
    const s = stage('standard');
    await s.send(s.order('a'));
    await s.deadLetter();
    await expect(redriveDeadLetters(s.redriveOptions({ consumer: s.consumer, session: db.session }))).rejects.toThrow(
      /destinationQueueUrl.*--to with --consumer/,
    );
    expect(f.sqs.model.peekMessages(s.dlq.name)).toHaveLength(1);
  });

  it('with the consumer named, deletes the messages whose effect committed without sending them, and sends the rest', async () => {
    const { s, a, b, c, committedB } = await deadLettered();
    const dry = await redriveDeadLetters(s.redriveOptions({ consumer: s.consumer, session: db.session, destinationQueueUrl: s.queue.url, dryRun: true }));
    expect(dry).toMatchObject({ moved: 1 - committedB, skipped: 2 + committedB, failed: 0 });
    expect(dry.outcomes.map((o) => o.status)).toEqual(['would-skip', committedB ? 'would-skip' : 'would-move', 'would-skip']);
    expect(f.sqs.model.peekMessages(s.dlq.name)).toHaveLength(3);
    f.clock.advance(61_000);

    const report = await redriveDeadLetters(s.redriveOptions({ consumer: s.consumer, session: db.session, destinationQueueUrl: s.queue.url }));
    expect(report).toMatchObject({ moved: 1 - committedB, skipped: 2 + committedB, failed: 0 });
    expect(f.sqs.model.peekMessages(s.dlq.name)).toEqual([]);
    expect(f.sqs.model.peekMessages(s.queue.name)).toHaveLength(1 - committedB);
    await s.deliver();
    expect([await applied(a), await applied(b), await applied(c)]).toEqual([1, 1, 1]);
  });
});

describe('the dead-letter redrive', () => {
  it('a resumed run that crashed between a FIFO send and its delete sends nothing twice', async () => {
    const s = stage('fifo');
    const a = s.order('a');
    await s.send(a);
    await s.deadLetter();
    // The first run's send, as a crash before its delete leaves it: the dead-lettered message still there.
    const [dead] = f.sqs.model.peekMessages(s.dlq.name);
    await f.client.send(
      new SendMessageCommand({
        QueueUrl: s.queue.url,
        MessageBody: dead!.body,
        MessageGroupId: 'g1',
        MessageDeduplicationId: redriveDeduplicationId(dead!.messageId, dead!.body),
        MessageAttributes: { [REDRIVEN_MESSAGE_ID_ATTRIBUTE]: { DataType: 'String', StringValue: dead!.messageId } },
      }),
    );
    const report = await redriveDeadLetters(s.redriveOptions());
    expect(report).toMatchObject({ moved: 1, failed: 0 });
    expect(f.sqs.model.peekMessages(s.queue.name)).toHaveLength(1);
  });

  it('a sender who read a dead-lettered messageId in the log cannot have SQS drop its FIFO redrive', async () => {
    const s = stage('fifo');
    await s.send(s.order('a'));
    await s.deadLetter();
    const [dead] = f.sqs.model.peekMessages(s.dlq.name);
    // The consumer logs the messageId of every record it failed; the body is in no log line.
    await f.client.send(
      new SendMessageCommand({
        QueueUrl: s.queue.url,
        MessageBody: '{"orderId":"not-the-real-one"}',
        MessageGroupId: 'g1',
        MessageDeduplicationId: `dlq-redrive:${dead!.messageId}`,
      }),
    );
    const report = await redriveDeadLetters(s.redriveOptions());
    expect(report).toMatchObject({ moved: 1, failed: 0 });
    expect(f.sqs.model.peekMessages(s.queue.name).map((message) => message.body)).toContain(dead!.body);
  });

  it('sends each message back to the queue its DeadLetterQueueSourceArn names, and needs --to when SQS gives none', async () => {
    const s = stage('standard');
    await s.send(s.order('a'));
    await s.deadLetter();
    const { Attributes } = await f.client.send(new GetQueueAttributesCommand({ QueueUrl: s.dlq.url, AttributeNames: ['All'] }));
    expect(Attributes?.RedriveAllowPolicy).toBeUndefined();
    // A message put on the dead-letter queue by hand carries no source.
    await f.client.send(new SendMessageCommand({ QueueUrl: s.dlq.url, MessageBody: JSON.stringify({ orderId: s.order('manual') }) }));
    const report = await redriveDeadLetters(s.redriveOptions());
    expect(report).toMatchObject({ moved: 1, failed: 1 });
    expect(report.outcomes.find((o) => o.status === 'failed')?.reason).toMatch(/source queue is unknown .*give the destination \(--to\)/);

    f.clock.advance(61_000);
    const to = await redriveDeadLetters(s.redriveOptions({ destinationQueueUrl: s.queue.url }));
    expect(to).toMatchObject({ moved: 1, failed: 0 });
  });

  it('leaves a message SQS would refuse, and the later messages of its FIFO group behind it', async () => {
    const s = stage('fifo');
    const ten = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`attribute-${i}`, 'x']));
    await s.send(s.order('full'), { groupId: 'g1', attributes: ten });
    await s.send(s.order('next'), { groupId: 'g1' });
    await s.send(s.order('other'), { groupId: 'g2' });
    await s.deadLetter();
    const report = await redriveDeadLetters(s.redriveOptions());
    expect(report).toMatchObject({ moved: 1, failed: 2 });
    expect(report.outcomes.map((o) => [o.groupId, o.status])).toEqual([
      ['g1', 'failed'],
      ['g1', 'failed'],
      ['g2', 'moved'],
    ]);
    expect(report.outcomes[0]!.reason).toMatch(/SQS would refuse 11 \(at most 10\)/);
    expect(report.outcomes[1]!.reason).toMatch(/an earlier message of group "g1" failed/);
  });

  it('carries any attributes and group ids it is given through, under the first messageId (generated inputs)', async () => {
    const name = fc.stringMatching(/^[A-Za-z0-9_-]{1,20}$/).filter((n) => n !== 'idempotency-key' && n !== REDRIVEN_MESSAGE_ID_ATTRIBUTE);
    const value = fc.string({ minLength: 1, maxLength: 40, unit: 'grapheme' }).filter((v) => !/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/u.test(v));
    const group = fc.stringMatching(/^[A-Za-z0-9!#$%&'()*+,\-./:;<=>?@[\]^_`{|}~]{1,16}$/);
    await fc.assert(
      fc.asyncProperty(fc.dictionary(name, value, { maxKeys: 9 }), group, async (attributes, groupId) => {
        const s = stage('fifo');
        const orderId = s.order('gen');
        await s.send(orderId, { groupId, attributes });
        const [sent] = f.sqs.model.peekMessages(s.queue.name);
        await s.deadLetter();
        expect(await redriveDeadLetters(s.redriveOptions())).toMatchObject({ moved: 1, failed: 0 });
        await s.deliver();
        const record = s.delivered.at(-1)!;
        expect(record.attributes.MessageGroupId).toBe(groupId);
        expect(Object.fromEntries(Object.entries(record.messageAttributes).map(([n, v]) => [n, v.stringValue]))).toEqual({
          ...attributes,
          [REDRIVEN_MESSAGE_ID_ATTRIBUTE]: sent!.messageId,
        });
        expect(await applied(orderId)).toBe(1);
      }),
      { seed: 35_104, numRuns: 8 },
    );
  });
});

describe("the redrive's stamp as a key", () => {
  const STAMP = 'sqs-inbox-redriven-message-id';
  const stamped = (messageId: string, value: SQSRecord['messageAttributes'][string], extra: SQSRecord['messageAttributes'] = {}): SQSRecord => ({
    ...sqsRecord({ messageId, body: { orderId: `stamped-${run}` } }),
    messageAttributes: { [STAMP]: value, ...extra },
  });
  const claimed = async (consumer: string) =>
    (await db.query('SELECT message_id FROM inbox.consumed_message WHERE consumer_name = $1', [consumer])).map((row) => row.message_id);

  it.each(['message-id', 'auto'] as const)(
    "key '%s' claims under the first messageId a record carries, so a second redrive of it is a duplicate",
    async (key) => {
      run++;
      const consumer = `stamp-reader-${run}`;
      const handler = countingConsumer(db, consumer, key);
      const first = { dataType: 'String', stringValue: `first-${run}` };
      expect(await handler({ Records: [stamped(`redriven-a-${run}`, first)] }, lambdaContext() as never)).toEqual({ batchItemFailures: [] });
      expect(await handler({ Records: [stamped(`redriven-b-${run}`, first)] }, lambdaContext() as never)).toEqual({ batchItemFailures: [] });
      expect(await claimed(consumer)).toEqual([`first-${run}`]);
      expect(await applied(`stamped-${run}`)).toBe(1);
    },
  );

  it("key 'auto' takes the producer's idempotency-key before the stamp", async () => {
    run++;
    const consumer = `stamp-reader-${run}`;
    const record = stamped(
      `redriven-${run}`,
      { dataType: 'String', stringValue: `first-${run}` },
      {
        'idempotency-key': { dataType: 'String', stringValue: `producer-${run}` },
      },
    );
    await countingConsumer(db, consumer, 'auto')({ Records: [record] }, lambdaContext() as never);
    expect(await claimed(consumer)).toEqual([`producer-${run}`]);
  });

  it.each([
    ['a Binary stamp', { dataType: 'Binary', binaryValue: 'AAE=' }, /message attribute \\?"sqs-inbox-redriven-message-id\\?" holds no text/],
    ['a stamp with a control character', { dataType: 'String', stringValue: 'first\u0000id' }, /control character/],
  ])('fails a record with %s as a KeyError, claiming nothing', async (_, value, text) => {
    run++;
    const consumer = `stamp-reader-${run}`;
    const logger = recordingLogger();
    const handler = inbox({ consumer, key: 'message-id', database: db.target, logger, metrics: recordingMetrics(), apply: async () => {} });
    const record = stamped(`redriven-${run}`, value as SQSRecord['messageAttributes'][string]);
    expect(await handler({ Records: [record] }, lambdaContext() as never)).toEqual({ batchItemFailures: [{ itemIdentifier: record.messageId }] });
    expect(await claimed(consumer)).toEqual([]);
    expect(JSON.stringify(logger.lines)).toMatch(text);
  });
});
