import { CreateQueueCommand } from '@aws-sdk/client-sqs';
import type { Message } from '@aws-sdk/client-sqs';
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { inbox } from '../../../lambda/inbox/index.js';
import type { InboxMessage, InboxTransaction } from '../../../lambda/inbox/index.js';
import { outboxKey, sqsOutbox, sweepOutbox } from '../../../lambda/inbox/outbox/index.js';
import type { OutboxSend } from '../../../lambda/inbox/outbox/outbox-message.js';
import { TRANSPORT, inboxFixture, lambdaContext, recordingLogger, recordingMetrics, sqsRecord } from '../../support/inbox.js';
import type { InboxFixture } from '../../support/inbox.js';
import { drain, startSqsFixture } from '../../support/sqs.js';
import type { SqsFixture } from '../../support/sqs.js';
import { applyEach } from '../../support/stream-sources.js';
import { fuzzParameters, fuzzTimeout } from './fuzz-settings.js';
import { MARKER, hostileJson, hostileText, isSqsText } from './hostile-values.js';
import { EXCLUDED } from './known-defects.js';
import type { SendPlan } from './known-defects.js';

// tx.send with hostile bodies, attributes and group ids, to a standard and a FIFO queue of the local SQS.
// Per send of a record whose effect committed: it arrives exactly once, as it was sent (body, attributes,
// group), through the handler's relay or the sweeper; a send that can never arrive is refused by tx.send
// itself, so that its record never commits with it. Nothing is stuck in the outbox after two sweeps.

let db: InboxFixture;
let sqs: SqsFixture;
const queues: Record<'standard' | 'fifo', string> = { standard: '', fifo: '' };
beforeAll(async () => {
  db = await inboxFixture('adversarial_outbox');
  await db.query('CREATE TABLE public.fuzz_sends (consumer text NOT NULL, message_key text NOT NULL)');
  sqs = await startSqsFixture();
  for (const [kind, name] of [
    ['standard', 'fuzz-sends'],
    ['fifo', 'fuzz-sends.fifo'],
  ] as const) {
    const created = await sqs.client.send(new CreateQueueCommand({ QueueName: name, Attributes: kind === 'fifo' ? { FifoQueue: 'true' } : {} }));
    queues[kind] = created.QueueUrl!;
  }
});
afterAll(async () => {
  await sqs.close();
  await db.close();
});

/** SQS's rules for what a send must be, as the local SQS (and AWS) enforce them. */
const FIFO_ID = /^[A-Za-z0-9!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]{1,128}$/;
const ATTRIBUTE_NAME = /^(?!aws\.|amazon\.)(?!\.)(?!.*\.\.)(?!.*\.$)[A-Za-z0-9_.-]{1,256}$/i;

const groupIds = fc.constantFrom('customer-7', 'g!#$%&()*+,-./:;<=>?@[]^_`{|}~', 'x'.repeat(128), 'has space', 'é-unicode', 'x'.repeat(129), 'nul\u0000');
const attributeNames = fc.constantFrom('trace', 'a.b-c_d', 'idempotency-key', 'AWS.trace', 'has space', '.dot', 'x'.repeat(257));
const attributeValues = fc.oneof({ weight: 3, arbitrary: hostileText(8).map((text) => `v${text}`) }, { weight: 1, arbitrary: fc.constant('') });

const sendPlan: fc.Arbitrary<SendPlan> = fc.record({
  fifo: fc.boolean(),
  body: fc.oneof(
    { weight: 4, arbitrary: hostileJson(hostileText()).map((value) => JSON.stringify({ m: MARKER, v: value })) },
    { weight: 2, arbitrary: hostileText(16).map((text) => `${MARKER}${text}`) },
    { weight: 1, arbitrary: fc.constantFrom('', 'x'.repeat(1024 * 1024 - 57), 'x'.repeat(1024 * 1024 + 1)) },
  ),
  groupId: groupIds,
  attributes: fc.dictionary(attributeNames, attributeValues, { maxKeys: 3 }),
});

/** The size SQS counts: the body, and each String attribute's name, type and value, the outbox's idempotency key (a UUID) among them. */
const sqsSize = (send: SendPlan) =>
  [
    send.body,
    ...Object.entries({ ...send.attributes, 'idempotency-key': '00000000-0000-8000-8000-000000000000' }).flatMap(([name, value]) => [name, 'String', value]),
  ]
    .map((text) => Buffer.byteLength(text, 'utf8'))
    .reduce((sum, bytes) => sum + bytes, 0);

/** Whether SQS takes the send: its body, group id and attributes by SQS's rules. */
export function deliverable(send: SendPlan): boolean {
  const values = Object.values(send.attributes);
  return (
    send.body.length > 0 &&
    isSqsText(send.body) &&
    sqsSize(send) <= 1024 * 1024 &&
    (!send.fifo || FIFO_ID.test(send.groupId)) &&
    Object.keys(send.attributes).every((name) => ATTRIBUTE_NAME.test(name) && name !== 'idempotency-key') &&
    values.every((value) => value.length > 0 && isSqsText(value))
  );
}

const toSend = (send: SendPlan): OutboxSend => ({
  to: send.fifo ? queues.fifo : queues.standard,
  body: send.body,
  ...(send.fifo ? { groupId: send.groupId } : {}),
  attributes: send.attributes,
});

let cases = 0;
const RUNS = 5;

it(
  `tx.send on ${TRANSPORT}: each send of a committed record arrives once, as sent; one that cannot arrive is refused by tx.send`,
  async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(sendPlan, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 4 }),
        fc.boolean(),
        async (planned, batchMode) => {
          const consumer = `fz-outbox-${cases++}`;
          // The known defects' sends are left out, as the records of the other properties are.
          const records = planned.map((sends) => sends.filter((send) => !EXCLUDED.some((defect) => defect.send?.(send, deliverable(send)))));
          const built = records.map((_, index) => sqsRecord({ messageId: `${consumer}-${index}`, body: { index } }));
          const sendsOf = (message: InboxMessage<{ index: number }, unknown>) => records[message.body.index]!;
          const effect = async (tx: InboxTransaction, message: InboxMessage<{ index: number }, unknown>) => {
            await tx.execute('INSERT INTO public.fuzz_sends (consumer, message_key) VALUES (:consumer, :key)', { consumer, key: message.key });
            for (const send of sendsOf(message)) tx.send(toSend(send), message);
          };
          const handler = inbox<{ index: number }>({
            consumer,
            database: db.target,
            logger: recordingLogger(),
            metrics: recordingMetrics(),
            outbox: sqsOutbox({ client: sqs.client }),
            ...(batchMode ? { applyBatch: applyEach(effect) } : { apply: effect }),
          });
          let pending = built;
          for (let round = 0; round < 3 && pending.length > 0; round++) {
            const { batchItemFailures } = await handler({ Records: pending }, lambdaContext());
            const failed = new Set(batchItemFailures.map((failure) => failure.itemIdentifier));
            pending = pending.filter((record) => failed.has(record.messageId));
          }
          for (let sweep = 0; sweep < 2; sweep++)
            await sweepOutbox(db.session, { transport: sqsOutbox({ client: sqs.client }).transport, minAgeMs: 0 }).catch(() => {});

          const applied = new Map<string, number>();
          for (const row of await db.query('SELECT message_key, count(*)::int AS n FROM public.fuzz_sends WHERE consumer = $1 GROUP BY message_key', [
            consumer,
          ])) {
            applied.set(row.message_key, row.n);
          }
          const received = [...(await drain(sqs.client, queues.standard)), ...(await drain(sqs.client, queues.fifo))];
          const byKey = new Map<string, Message[]>();
          for (const message of received) {
            const key = message.MessageAttributes?.['idempotency-key']?.StringValue ?? '';
            byKey.set(key, [...(byKey.get(key) ?? []), message]);
          }
          const found: string[] = [];
          for (const [index, sends] of records.entries()) {
            const key = built[index]!.messageId;
            // A send SQS can never take must be refused by tx.send, so that its record never commits with it.
            const unsendable = sends.find((send) => !deliverable(send));
            const times = applied.get(key) ?? 0;
            if (unsendable && times > 0) {
              found.push(
                `record ${index}: applied ${times} times with a send SQS cannot take, which tx.send must refuse (${JSON.stringify(unsendable).slice(0, 200)}): it never arrives`,
              );
            }
            if (!unsendable && times !== 1) found.push(`record ${index}: applied ${times} times`);
            if (unsendable) continue;
            for (const [position, send] of sends.entries()) {
              const arrived = byKey.get(outboxKey(consumer, key, position)) ?? [];
              if (arrived.length !== 1) found.push(`record ${index}, send ${position}: arrived ${arrived.length} times`);
              const message = arrived[0];
              if (message === undefined) continue;
              if (message.Body !== send.body) found.push(`record ${index}, send ${position}: its body arrived altered`);
              if (send.fifo && message.Attributes?.MessageGroupId !== send.groupId)
                found.push(`record ${index}, send ${position}: its group id arrived altered`);
              for (const [name, value] of Object.entries(send.attributes)) {
                if (message.MessageAttributes?.[name]?.StringValue !== value)
                  found.push(`record ${index}, send ${position}: attribute ${name} arrived altered`);
              }
            }
          }
          const unsent = await db.query('SELECT id, last_error FROM inbox.outbox_message WHERE consumer_name = $1 AND sent_at IS NULL', [consumer]);
          if (unsent.length > 0) found.push(`${unsent.length} outbox rows unsent after two sweeps: ${JSON.stringify(unsent).slice(0, 300)}`);
          expect(found, JSON.stringify(records).slice(0, 2000)).toEqual([]);
        },
      ),
      fuzzParameters(RUNS),
    );
  },
  fuzzTimeout(RUNS, 3_000),
);
