import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { inbox, kinesisInbox, PermanentError } from '../../lambda/inbox/index.js';
import { ParkedCollisionError } from '../../lambda/inbox/errors.js';
import { parkedMessageStore } from '../../lambda/inbox/parked/store.js';
import { queueUrlFromArn, redriveParked } from '../../lambda/inbox/parked/redrive.js';
import type { RedriveOptions } from '../../lambda/inbox/parked/redrive.js';
import { sqsOutbox, sweepOutbox } from '../../lambda/inbox/outbox/index.js';
import { createProducer } from '../../lambda/inbox/producer/producer.js';
import { SqsEventSource } from '../../local/event-source.js';
import { inboxFixture, lambdaContext, recordingLogger, recordingMetrics, sqsRecord } from '../support/inbox.js';
import type { InboxFixture } from '../support/inbox.js';
import { startSqsFixture } from '../support/sqs.js';
import type { SqsFixture } from '../support/sqs.js';
import { kinesisEvent, kinesisRecord } from '../support/streams.js';
import { parkedMessages } from '../../lambda/inbox/parked/parking.js';

type Order = { orderId: string };

let db: InboxFixture;
let f: SqsFixture;
beforeAll(async () => {
  db = await inboxFixture('parked_redrive');
  await db.query('CREATE TABLE public.applied (order_id text PRIMARY KEY, n int NOT NULL DEFAULT 1)');
});
afterAll(async () => db.close());
beforeEach(async () => {
  f = await startSqsFixture();
});
afterEach(async () => {
  db.server.faults.clear();
  await f.close();
});

let run = 0;
const SIX_MINUTES = 6 * 60_000 + 1000;

/**
 * A FIFO or standard queue on the local SQS, and a consumer of it that parks every order until `fix()`;
 * `deliver()` runs the queue through the consumer as Lambda's event source mapping does, and `delivered`
 * keeps every record the consumer was handed.
 */
function stage(kind: 'fifo' | 'standard') {
  run++;
  const name = `orders-${run}${kind === 'fifo' ? '.fifo' : ''}`;
  const queue = f.sqs.model.createQueue(name, kind === 'fifo' ? { FifoQueue: 'true' } : {});
  const consumer = `order-worker-${run}`;
  let rejecting = true;
  const delivered: SQSRecord[] = [];
  const handler = inbox<Order>({
    consumer,
    database: db.target,
    logger: recordingLogger(),
    metrics: recordingMetrics(),
    onPermanentError: 'park',
    apply: async (tx, message) => {
      if (rejecting) throw new PermanentError('warehouse code unknown');
      await tx.execute('INSERT INTO public.applied (order_id) VALUES (:id) ON CONFLICT (order_id) DO UPDATE SET n = applied.n + 1', {
        id: message.body.orderId,
      });
    },
  });
  const producer = createProducer({ client: f.client, queueUrl: queue.url });
  return {
    queue,
    consumer,
    handler,
    delivered,
    fix: () => void (rejecting = false),
    send: (orderId: string, key: string, extra: { attributes?: Record<string, string> } = {}) =>
      producer.send([{ body: { orderId }, key, ...(kind === 'fifo' ? { groupId: 'customer-1' } : {}), ...extra }]),
    async deliver() {
      const source = new SqsEventSource({
        model: f.sqs.model,
        queue: name,
        functionTimeoutMs: 10_000,
        handler: async (event: SQSEvent, context) => {
          delivered.push(...event.Records);
          return handler(event, context);
        },
      });
      source.start();
      const drained = await source.drain({ timeoutMs: 60_000 });
      await source.stop();
      expect(drained).toBe(true);
    },
    options: (extra: Partial<RedriveOptions> = {}): RedriveOptions => ({
      session: db.session,
      consumer,
      client: f.client,
      now: () => f.clock.now(),
      ...extra,
    }),
  };
}

const applied = async (orderId: string) => (await db.query<{ n: number }>('SELECT n FROM public.applied WHERE order_id = $1', [orderId]))[0]?.n ?? 0;
const claims = async (consumer: string, key: string) =>
  (await db.query('SELECT 1 FROM inbox.consumed_message WHERE consumer_name = $1 AND message_id = $2', [consumer, key])).length;

describe('redriving a parked message', () => {
  it('puts it back on its FIFO queue with its body, attributes, group and original key; the consumer applies it once when it comes back', async () => {
    const s = stage('fifo');
    const orderId = `o-${run}`;
    await s.send(orderId, `key-${orderId}`, { attributes: { tenant: 'acme' } });
    await s.deliver();
    const [parked] = await parkedMessages(s.handler).list();
    expect(parked).toMatchObject({ key: `key-${orderId}`, ownsClaim: true, status: 'parked', attributes: { eventSourceARN: s.queue.arn } });
    expect(await applied(orderId)).toBe(0);

    s.fix();
    f.clock.advance(SIX_MINUTES);
    const results = await redriveParked(s.options(), [parked!.id]);

    const queueUrl = `https://sqs.us-east-1.amazonaws.com/000000000000/${s.queue.name}`;
    expect(results).toEqual([{ id: parked!.id, status: 'redriven', queueUrl, key: `key-${orderId}`, outboxId: expect.any(Number), sent: true }]);
    // Its parking claim is released, so that the message takes effect when it comes back.
    expect(await claims(s.consumer, `key-${orderId}`)).toBe(0);
    await s.deliver();
    expect(await applied(orderId)).toBe(1);
    const back = s.delivered.at(-1)!;
    expect(back.body).toBe(JSON.stringify({ orderId }));
    expect(back.attributes.MessageGroupId).toBe('customer-1');
    expect(back.messageAttributes).toMatchObject({ 'idempotency-key': { stringValue: `key-${orderId}` }, tenant: { stringValue: 'acme' } });
    expect(await parkedMessages(s.handler).list()).toEqual([]);
    expect(await parkedMessages(s.handler).list({ includeRedriven: true })).toMatchObject([{ id: parked!.id, status: 'redriven', redrivenTo: queueUrl }]);

    // Its key is claimed again: a later delivery of it is a duplicate.
    f.clock.advance(SIX_MINUTES);
    await s.send(orderId, `key-${orderId}`, { attributes: { tenant: 'acme' } });
    await s.deliver();
    expect(await applied(orderId)).toBe(1);
  });

  it('applies it once when two redrives of it race: one redriven, the other already-redriven, one message sent', async () => {
    const s = stage('standard');
    const orderId = `o-${run}`;
    await s.send(orderId, `key-${orderId}`);
    await s.deliver();
    const [parked] = await parkedMessages(s.handler).list();
    s.fix();
    // Each redrive holds its transaction open at the commit: without the row lock, both would read the
    // message as still parked.
    db.server.faults.latency({ ms: 300, operation: 'CommitTransaction' });
    const results = await Promise.all([redriveParked(s.options(), [parked!.id]), redriveParked(s.options(), [parked!.id])]);
    db.server.faults.clear();

    expect(
      results
        .flat()
        .map((result) => result.status)
        .sort(),
    ).toEqual(['already-redriven', 'redriven']);
    expect(f.sqs.model.counts(s.queue.url).visible).toBe(1);
    expect(await db.query('SELECT 1 FROM inbox.outbox_message WHERE consumer_name = $1', [`${s.consumer}:redrive:${parked!.id}`])).toHaveLength(1);
    await s.deliver();
    expect(await applied(orderId)).toBe(1);
  });

  it('leaves the outbox row when the send fails after the commit; sweepOutbox sends it, and a second send is a duplicate', async () => {
    const s = stage('standard');
    const orderId = `o-${run}`;
    await s.send(orderId, `key-${orderId}`);
    await s.deliver();
    const [parked] = await parkedMessages(s.handler).list();
    s.fix();
    f.sqs.faults.failRequests('SendMessageBatch', { error: 'InternalError', times: 100 });
    const [result] = await redriveParked(s.options(), [parked!.id]);
    f.sqs.faults.clear();

    expect(result).toMatchObject({ status: 'redriven', sent: false, message: expect.stringMatching(/InternalError.*sweepOutbox sends it/) });
    const rows = () => db.query('SELECT sent_at, last_error, idempotency_key FROM inbox.outbox_message WHERE id = $1', [result!.outboxId]);
    expect(await rows()).toMatchObject([{ sent_at: null, last_error: expect.stringMatching(/InternalError/), idempotency_key: `key-${orderId}` }]);
    expect(f.sqs.model.counts(s.queue.url).visible).toBe(0);
    // Committed all the same: the message is redriven, not parked, and a second redrive is refused.
    expect((await redriveParked(s.options(), [parked!.id]))[0]!.status).toBe('already-redriven');

    const transport = sqsOutbox({ client: f.client }).transport;
    expect(await sweepOutbox(db.session, { transport, minAgeMs: 0 })).toMatchObject({ sent: 1 });
    expect((await rows())[0]!.sent_at).toBeInstanceOf(Date);
    // A sweeper that sent it again (its first send's answer lost): the consumer's inbox drops the copy.
    await db.query('UPDATE inbox.outbox_message SET sent_at = NULL WHERE id = $1', [result!.outboxId]);
    await sweepOutbox(db.session, { transport, minAgeMs: 0 });
    expect(f.sqs.model.counts(s.queue.url).visible).toBe(2);
    await s.deliver();
    expect(await applied(orderId)).toBe(1);
  });

  it('redrives a message again that was parked again after its first redrive (still failing), and applies it once after the fix', async () => {
    const s = stage('standard');
    const orderId = `o-${run}`;
    await s.send(orderId, `key-${orderId}`);
    await s.deliver();
    const [first] = await parkedMessages(s.handler).list();
    expect((await redriveParked(s.options(), [first!.id]))[0]).toMatchObject({ status: 'redriven', sent: true });
    await s.deliver();
    // Its cause was not fixed: it is parked again, as a new row under the same key, owning the new claim.
    const [second] = await parkedMessages(s.handler).list();
    expect(second).toMatchObject({ key: `key-${orderId}`, ownsClaim: true, status: 'parked' });
    expect(second!.id).not.toBe(first!.id);

    s.fix();
    expect((await redriveParked(s.options(), [second!.id]))[0]).toMatchObject({ status: 'redriven', sent: true });
    await s.deliver();
    expect(await applied(orderId)).toBe(1);
  });

  it('refuses a FIFO message within 5 minutes of its send, which the queue would drop as a duplicate, and redrives it after', async () => {
    const s = stage('fifo');
    const orderId = `o-${run}`;
    await s.send(orderId, `key-${orderId}`);
    await s.deliver();
    const [parked] = await parkedMessages(s.handler).list();
    s.fix();
    const [refused] = await redriveParked(s.options(), [parked!.id]);
    expect(refused).toMatchObject({ status: 'refused', refusal: 'deduplication-window', message: expect.stringMatching(/redrive it after \d{4}-/) });
    expect(await parkedMessages(s.handler).list()).toHaveLength(1);
    expect(await claims(s.consumer, `key-${orderId}`)).toBe(1);

    f.clock.advance(SIX_MINUTES);
    expect((await redriveParked(s.options(), [parked!.id]))[0]).toMatchObject({ status: 'redriven', sent: true });
    await s.deliver();
    expect(await applied(orderId)).toBe(1);
  });

  it('refuses a message parked before its queue ARN was stored, naming queueUrl, and redrives it to the queueUrl given', async () => {
    const s = stage('standard');
    const orderId = `o-${run}`;
    await s.send(orderId, `key-${orderId}`);
    await s.deliver();
    const [parked] = await parkedMessages(s.handler).list();
    // As sqs-inbox stored an SQS record before it kept the eventSourceARN.
    await db.query("UPDATE inbox.parked_message SET attributes = attributes::jsonb - 'eventSourceARN' WHERE id = $1", [parked!.id]);
    s.fix();
    expect((await redriveParked(s.options(), [parked!.id]))[0]).toMatchObject({
      status: 'refused',
      refusal: 'no-queue',
      message: expect.stringContaining('--queue-url'),
    });
    expect(await claims(s.consumer, `key-${orderId}`)).toBe(1);
    expect((await redriveParked(s.options({ queueUrl: s.queue.url }), [parked!.id]))[0]).toMatchObject({
      status: 'redriven',
      queueUrl: s.queue.url,
      sent: true,
    });
    await s.deliver();
    expect(await applied(orderId)).toBe(1);
  });

  it('sends its body back byte for byte, whatever text it holds', async () => {
    const s = stage('standard');
    const orderId = `o-${run}`;
    const body = `{"orderId":"${orderId}",\r\n\t"note":"😀 é \ufffd \\u0000 \\ud800 \u{10ffff}"}`;
    await s.handler({ Records: [sqsRecord({ body, key: `key-${orderId}` })] }, lambdaContext());
    const [parked] = await parkedMessages(s.handler).list();
    expect(parked!.body).toBe(body);
    s.fix();

    expect((await redriveParked(s.options({ queueUrl: s.queue.url }), [parked!.id]))[0]).toMatchObject({ status: 'redriven', sent: true });
    await s.deliver();

    expect(s.delivered.at(-1)!.body).toBe(body);
    expect(await applied(orderId)).toBe(1);
  });

  it('refuses a body or a message attribute holding text SQS never carries, naming the character', async () => {
    const s = stage('standard');
    const inBody = sqsRecord({ body: `{"orderId":"o-${run}"}\u0001`, key: `body-${run}` });
    const inAttribute = sqsRecord({ body: { orderId: `o-${run}` }, key: `attribute-${run}` });
    inAttribute.messageAttributes.note = { dataType: 'String', stringValue: 'a\u0002' };
    await s.handler({ Records: [inBody, inAttribute] }, lambdaContext());
    const ids = (await parkedMessages(s.handler).list()).map((message) => message.id);

    const results = await redriveParked(s.options({ queueUrl: s.queue.url }), ids);

    expect(results.map(({ status, refusal, message }) => ({ status, refusal, message }))).toEqual([
      {
        status: 'refused',
        refusal: 'unsendable',
        message: expect.stringContaining(`SQS would refuse it: its body holds U+0001 at character ${inBody.body.length - 1} (SQS takes `),
      },
      {
        status: 'refused',
        refusal: 'unsendable',
        message: expect.stringMatching(/^SQS would refuse it: its message attribute "note" holds U\+0002 at character 1 \(SQS takes /),
      },
    ]);
  });

  it('refuses a message that SQS, counting the key attribute the redrive adds, would no longer take; redrives one that fits exactly', async () => {
    const s = stage('standard');
    /** An order whose body is `bytes` long, keyed by `key`: SQS counts the body with the idempotency-key attribute (15 + 6 + the key). */
    const sized = (orderId: string, key: string, bytes: number) => {
      const head = JSON.stringify({ orderId, pad: '' }).length;
      return sqsRecord({ body: JSON.stringify({ orderId, pad: 'x'.repeat(bytes - head) }), key });
    };
    const fits = sized(`fits-${run}`, `fits-${run}`, 1024 * 1024 - 21 - `fits-${run}`.length);
    const over = sized(`over-${run}`, `over-${run}`, 1024 * 1024 - 21 - `over-${run}`.length + 1);
    // One after the other: the list is in parking order.
    for (const record of [fits, over]) await s.handler({ Records: [record] }, lambdaContext());
    const ids = (await parkedMessages(s.handler).list()).map((message) => message.id);
    s.fix();

    const results = await redriveParked(s.options({ queueUrl: s.queue.url }), ids);

    expect(results.map(({ status, refusal, sent, message }) => ({ status, refusal, sent, message }))).toEqual([
      { status: 'redriven', refusal: undefined, sent: true, message: undefined },
      {
        status: 'refused',
        refusal: 'unsendable',
        sent: undefined,
        message: "SQS would refuse it: it is 1048577 bytes with its message attributes and its key attribute, over SQS's limit of 1048576; replay it instead",
      },
    ]);
    await s.deliver();
    expect([await applied(`fits-${run}`), await applied(`over-${run}`)]).toEqual([1, 0]);
    expect(await claims(s.consumer, `over-${run}`)).toBe(1);
  });

  it("refuses a key collision (it owns no claim), and leaves its key's claim alone", async () => {
    const s = stage('standard');
    const orderId = `o-${run}`;
    await s.send(orderId, `key-${orderId}`);
    await s.deliver();
    await s.handler({ Records: [sqsRecord({ body: { orderId: 'another' }, key: `key-${orderId}` })] }, lambdaContext());
    const collided = (await parkedMessages(s.handler).list()).find((message) => message.errorClass === 'KeyCollisionError')!;
    expect(collided.ownsClaim).toBe(false);
    expect((await redriveParked(s.options(), [collided.id]))[0]).toMatchObject({
      status: 'refused',
      refusal: 'key-collision',
      message: expect.stringContaining("replay it with parkedMessages(handler).replay(id, { collision: 'apply-under-new-key' })"),
    });
    // One rule for both: the replay refuses it too, unless told how to apply it.
    await expect(parkedMessages(s.handler).replay(collided.id)).rejects.toThrow(ParkedCollisionError);
    expect(await claims(s.consumer, `key-${orderId}`)).toBe(1);
  });

  it('refuses a message parked by a stream consumer: there is no queue to send it back to', async () => {
    const consumer = `clicks-${++run}`;
    const handler = kinesisInbox({
      consumer,
      database: db.target,
      logger: recordingLogger(),
      metrics: recordingMetrics(),
      onPermanentError: 'park',
      apply: async () => {
        throw new PermanentError('unknown page');
      },
    });
    await handler(kinesisEvent([kinesisRecord({ body: { page: '/' } })]), lambdaContext());
    const [parked] = await parkedMessages(handler).list();
    const [result] = await redriveParked({ session: db.session, consumer, client: f.client, queueUrl: 'https://sqs.us-east-1.amazonaws.com/000000000000/x' }, [
      parked!.id,
    ]);
    expect(result).toMatchObject({ status: 'refused', refusal: 'stream-record', message: expect.stringContaining('replay it') });
    expect(await parkedMessages(handler).list()).toHaveLength(1);
  });

  it('refuses a message whose key was claimed again after its parking claim was purged', async () => {
    const s = stage('standard');
    const orderId = `o-${run}`;
    await s.send(orderId, `key-${orderId}`);
    await s.deliver();
    const [parked] = await parkedMessages(s.handler).list();
    // The purge took the parking claim; a later delivery of the key claimed (and applied) it.
    await db.query("UPDATE inbox.consumed_message SET processed_at = now() + interval '1 hour' WHERE consumer_name = $1", [s.consumer]);
    expect((await redriveParked(s.options(), [parked!.id]))[0]).toMatchObject({ status: 'refused', refusal: 'claimed-again' });
    expect(await claims(s.consumer, `key-${orderId}`)).toBe(1);
  });

  it('reports every id: not-found, and one decision per message (a replayed message is not redriven, a redriven one not replayed)', async () => {
    const s = stage('standard');
    await s.send(`a-${run}`, `key-a-${run}`);
    await s.send(`b-${run}`, `key-b-${run}`);
    await s.deliver();
    const [a, b] = await parkedMessages(s.handler).list();
    s.fix();
    expect(await parkedMessages(s.handler).replay(a!.id)).toBe('replayed');
    const results = await redriveParked(s.options(), [999_999, a!.id, b!.id]);
    expect(results.map((result) => [result.id, result.status])).toEqual([
      [999_999, 'not-found'],
      [a!.id, 'already-replayed'],
      [b!.id, 'redriven'],
    ]);
    expect(await parkedMessages(s.handler).replay(b!.id)).toBe('already-redriven');
    await s.deliver();
    expect([await applied(`a-${run}`), await applied(`b-${run}`)]).toEqual([1, 1]);
  });

  it('refuses, before it reads anything, a client that cannot send, naming the SQS client to give', async () => {
    const s = stage('standard');
    for (const client of [undefined, {}, s.options().session]) {
      await expect(redriveParked({ ...s.options(), client: client as never }, [1])).rejects.toThrow(
        /inbox option "client": must be an SQS client to send the redriven messages with, e.g. new SQSClient\(\{\}\)/,
      );
    }
  });
});

describe('discarding a parked message', () => {
  it('hides it from the list, keeps its claim, and refuses to replay, redrive or discard it again', async () => {
    const s = stage('standard');
    const orderId = `o-${run}`;
    await s.send(orderId, `key-${orderId}`);
    await s.deliver();
    const [parked] = await parkedMessages(s.handler).list();
    const store = parkedMessageStore({ session: db.session, consumer: s.consumer });

    expect(await store.discard([parked!.id, 999_999])).toEqual([
      { id: parked!.id, status: 'discarded' },
      { id: 999_999, status: 'not-found' },
    ]);
    expect(await store.list()).toEqual([]);
    expect(await parkedMessages(s.handler).list()).toEqual([]);
    const [shown] = await store.list({ includeDiscarded: true });
    expect(shown).toMatchObject({ id: parked!.id, status: 'discarded', discardedAt: expect.any(Date), replayedAt: null, redrivenAt: null });
    expect(await store.show(parked!.id)).toEqual(shown);
    expect(await store.show(999_999)).toBeUndefined();

    s.fix();
    expect(await parkedMessages(s.handler).replay(parked!.id)).toBe('already-discarded');
    expect((await redriveParked(s.options(), [parked!.id]))[0]!.status).toBe('already-discarded');
    expect(await store.discard([parked!.id])).toEqual([{ id: parked!.id, status: 'already-discarded' }]);
    // Its claim stays: a later delivery of its key is a duplicate, never applied.
    expect(await claims(s.consumer, `key-${orderId}`)).toBe(1);
    await s.send(orderId, `key-${orderId}`);
    await s.deliver();
    expect(await applied(orderId)).toBe(0);
  });

  it("does not discard another consumer's message", async () => {
    const s = stage('standard');
    await s.send(`o-${run}`, `key-o-${run}`);
    await s.deliver();
    const [parked] = await parkedMessages(s.handler).list();
    const other = parkedMessageStore({ session: db.session, consumer: 'someone-else' });
    expect(await other.discard([parked!.id])).toEqual([{ id: parked!.id, status: 'not-found' }]);
    expect(await parkedMessages(s.handler).list()).toHaveLength(1);
  });
});

describe('queueUrlFromArn', () => {
  it.each([
    ['arn:aws:sqs:eu-west-1:123456789012:orders', 'https://sqs.eu-west-1.amazonaws.com/123456789012/orders'],
    ['arn:aws:sqs:us-east-1:123456789012:orders.fifo', 'https://sqs.us-east-1.amazonaws.com/123456789012/orders.fifo'],
    ['arn:aws-cn:sqs:cn-north-1:123456789012:orders', 'https://sqs.cn-north-1.amazonaws.com.cn/123456789012/orders'],
    ['arn:aws-us-gov:sqs:us-gov-west-1:123456789012:orders_v2-dlq', 'https://sqs.us-gov-west-1.amazonaws.com/123456789012/orders_v2-dlq'],
    ['arn:aws:kinesis:us-east-1:123456789012:stream/orders', undefined],
    ['arn:aws:sqs:us-east-1:123456789012:orders/extra', undefined],
    ['arn:aws:sqs:us-east-1:1234:orders', undefined],
    ['', undefined],
  ])('%s -> %s', (arn, url) => {
    expect(queueUrlFromArn(arn)).toBe(url);
  });
});
