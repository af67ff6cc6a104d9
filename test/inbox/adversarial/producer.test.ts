import { CreateQueueCommand } from '@aws-sdk/client-sqs';
import type { Message } from '@aws-sdk/client-sqs';
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { inbox } from '../../../lambda/inbox/index.js';
import type { InboxMessage, InboxTransaction } from '../../../lambda/inbox/index.js';
import { InvalidMessagesError, SendFailedError, createProducer } from '../../../lambda/inbox/producer/producer.js';
import type { OutgoingMessage } from '../../../lambda/inbox/producer/producer.js';
import { TRANSPORT, inboxFixture, lambdaContext, recordingLogger, recordingMetrics } from '../../support/inbox.js';
import type { InboxFixture } from '../../support/inbox.js';
import { drain, lambdaRecordOf, startSqsFixture } from '../../support/sqs.js';
import type { SqsFixture } from '../../support/sqs.js';
import { fuzzParameters, fuzzTimeout } from './fuzz-settings.js';
import { MARKER, hostileJson, hostileText, isSqsText } from './hostile-values.js';

// The producer (sqs-inbox/producer) with hostile messages, end to end: what it reports sent is on the queue
// once, as sent, under its key; what it refuses it names, and sends nothing of a refused batch; what SQS
// refuses it reports with the sender at fault. An inbox consuming the queue applies each message sent once,
// however often it is delivered, and however often the producer sends it again under its key.

let db: InboxFixture;
let sqs: SqsFixture;
beforeAll(async () => {
  db = await inboxFixture('adversarial_producer');
  await db.query('CREATE TABLE public.fuzz_received (consumer text NOT NULL, message_key text NOT NULL)');
  sqs = await startSqsFixture();
});
afterAll(async () => {
  await sqs.close();
  await db.close();
});

/** A message as a producer's caller may hand it over: hostile bodies, keys, groups and attributes. */
const outgoing = fc.record(
  {
    body: fc.oneof(
      { weight: 8, arbitrary: hostileJson(hostileText()).map((value) => ({ m: MARKER, v: value }) as object) },
      { weight: 2, arbitrary: hostileText(16).map((text) => `${MARKER}${text}`) },
      { weight: 2, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 16 }) },
      { weight: 1, arbitrary: fc.constantFrom<string | object>('', 'x'.repeat(1024 * 1024 + 1)) },
      { weight: 1, arbitrary: fc.constant('x'.repeat(1024 * 1024 - 200)) },
    ),
    key: fc.oneof(
      { weight: 8, arbitrary: fc.constant(undefined) },
      { weight: 8, arbitrary: fc.uuid() },
      { weight: 3, arbitrary: fc.constant('k!#$%&()*+,-./:;<=>?@[]^_`{|}~') },
      { weight: 1, arbitrary: fc.constantFrom('has space', 'clé', 'x'.repeat(129)) },
    ),
    groupId: fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom('customer-7', 'g!#$%&()') },
      { weight: 1, arbitrary: fc.constantFrom('has space', 'x'.repeat(129)) },
    ),
    attributes: fc.dictionary(
      fc.oneof({ weight: 8, arbitrary: fc.constantFrom('trace', 'a.b-c_d') }, { weight: 1, arbitrary: fc.constantFrom('has space', 'idempotency-key') }),
      fc.oneof({ weight: 3, arbitrary: fc.string({ minLength: 1, maxLength: 6 }) }, { weight: 1, arbitrary: hostileText(6).map((text) => `v${text}`) }),
      { maxKeys: 2 },
    ),
  },
  { requiredKeys: ['body', 'groupId', 'attributes'] },
);

/** Whether SQS takes the message's body and attributes (the producer's own checks aside). */
const takenBySqs = (message: OutgoingMessage) =>
  isSqsText(bodyText(message)) &&
  Object.entries(message.attributes ?? {}).every(([name, value]) => /^[A-Za-z0-9_.-]{1,256}$/.test(name) && typeof value === 'string' && isSqsText(value));

/** The body text the producer sends for a message. */
const bodyText = (message: OutgoingMessage) => (typeof message.body === 'string' ? message.body : JSON.stringify(message.body));

let cases = 0;
const RUNS = 6;

it(
  `on ${TRANSPORT}: what the producer reports sent arrives once, as sent, and an inbox applies it once however often it comes`,
  async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(outgoing, { minLength: 1, maxLength: 5 }), fc.boolean(), async (messages, fifo) => {
        const consumer = `fz-producer-${cases++}`;
        // A queue per case: a FIFO queue remembers a deduplication id for 5 minutes, and cases reuse keys.
        const name = `fuzz-produced-${cases}${fifo ? '.fifo' : ''}`;
        const queueUrl = (await sqs.client.send(new CreateQueueCommand({ QueueName: name, Attributes: fifo ? { FifoQueue: 'true' } : {} }))).QueueUrl!;
        const producer = createProducer({ client: sqs.client, queueUrl, maxAttempts: 2, sleep: async () => {} });
        const planned = messages.map((message) => (fifo ? message : { ...message, groupId: undefined }));
        const found: string[] = [];
        const sendAll = async (batch: readonly OutgoingMessage[] = planned) => {
          try {
            return { sent: (await producer.send(batch)).sent, failed: [] as number[] };
          } catch (error) {
            if (error instanceof InvalidMessagesError) return { invalid: error.problems.map((problem) => problem.index) };
            if (error instanceof SendFailedError) {
              for (const failure of error.failures) {
                // Nothing SQS refuses for good may be reported as worth resending unchanged.
                if (!failure.senderFault && failure.code !== 'GroupBlocked')
                  found.push(`message ${failure.index}: failed with ${failure.code}, not the sender's fault`);
              }
              return { sent: error.sent, failed: error.failures.map((failure) => failure.index) };
            }
            throw error;
          }
        };
        const first = await sendAll();
        const received = await drain(sqs.client, queueUrl);
        if ('invalid' in first) {
          if (received.length > 0) found.push(`the producer refused the batch, yet ${received.length} messages are on the queue`);
          if (first.invalid!.length === 0) found.push('the producer refused the batch naming no message');
          expect(found).toEqual([]);
          return;
        }
        const sentKeys = new Map(first.sent!.map((sent) => [sent.key, sent.index]));
        for (const message of received) {
          const key = message.MessageAttributes?.['idempotency-key']?.StringValue;
          const index = key === undefined ? undefined : sentKeys.get(key);
          if (index === undefined) {
            found.push(`a message on the queue the producer did not report sent: key ${key}`);
            continue;
          }
          const given = planned[index]!;
          if (message.Body !== bodyText(given)) found.push(`message ${index}: its body arrived altered`);
          for (const [name, value] of Object.entries(given.attributes ?? {})) {
            if (message.MessageAttributes?.[name]?.StringValue !== value) found.push(`message ${index}: attribute ${name} arrived altered`);
          }
        }
        if (received.length !== first.sent!.length) found.push(`${first.sent!.length} reported sent, ${received.length} on the queue`);
        for (const index of first.failed!) if (!fifo && takenBySqs(planned[index]!)) found.push(`message ${index}: SQS refused a message it takes`);

        // An inbox takes what arrived, twice; then what the producer sends again under the same keys.
        const handler = inbox<unknown>({
          consumer,
          database: db.target,
          logger: recordingLogger(),
          metrics: recordingMetrics(),
          apply: async (tx: InboxTransaction, message: InboxMessage<unknown>) => {
            await tx.execute('INSERT INTO public.fuzz_received (consumer, message_key) VALUES (:consumer, :key)', { consumer, key: message.key });
          },
          parse: (body: string) => body,
        });
        const arn = `arn:aws:sqs:us-east-1:123456789012:${name}`;
        const asRecords = (list: readonly Message[], round: number) =>
          list.map((message, index) => lambdaRecordOf(message, `${consumer}-${round}-${index}`, arn));
        for (let round = 0; round < 2; round++) {
          const { batchItemFailures } = await handler({ Records: asRecords(received, round) }, lambdaContext());
          if (batchItemFailures.length > 0) found.push(`the inbox failed ${batchItemFailures.length} produced messages`);
        }
        // A resend is a send of the same messages under the keys they were sent with.
        await sendAll(first.sent!.map((sent) => ({ ...planned[sent.index]!, key: sent.key })));
        await handler({ Records: asRecords(await drain(sqs.client, queueUrl), 2) }, lambdaContext());
        const applied = await db.query('SELECT message_key AS key, count(*)::int AS n FROM public.fuzz_received WHERE consumer = $1 GROUP BY message_key', [
          consumer,
        ]);
        for (const row of applied) if (row.n !== 1) found.push(`key ${row.key}: applied ${row.n} times`);
        if (applied.length !== first.sent!.length) found.push(`${first.sent!.length} sent, ${applied.length} applied`);
        expect(found, JSON.stringify(planned).slice(0, 1500)).toEqual([]);
      }),
      fuzzParameters(RUNS),
    );
  },
  fuzzTimeout(RUNS, 3_000),
);
