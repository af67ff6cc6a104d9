import { CreateQueueCommand, DeleteMessageBatchCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import type { Message } from '@aws-sdk/client-sqs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InboxError } from '../../lambda/inbox/index.js';
import { InvalidMessagesError, SendFailedError, createProducer } from '../../lambda/inbox/producer/producer.js';
import { uuidv7 } from '../../lambda/inbox/producer/uuidv7.js';
import type { OutgoingMessage, ProducerOptions } from '../../lambda/inbox/producer/producer.js';
import { startSqsFixture } from '../support/sqs.js';
import type { SqsFixture } from '../support/sqs.js';

let f: SqsFixture;
let delays: number[];
beforeEach(async () => {
  f = await startSqsFixture({ recordRequests: true });
  delays = [];
});
afterEach(async () => {
  await f.close();
});

async function queue(name: string): Promise<string> {
  const fifo = name.endsWith('.fifo');
  const { QueueUrl } = await f.client.send(new CreateQueueCommand({ QueueName: name, Attributes: fifo ? { FifoQueue: 'true' } : {} }));
  if (!QueueUrl) throw new Error('no QueueUrl');
  return QueueUrl;
}

function producer(queueUrl: string, options: Partial<ProducerOptions> = {}) {
  return createProducer({
    client: f.client,
    queueUrl,
    now: () => f.clock.now(),
    sleep: async (ms) => void delays.push(ms),
    ...options,
  });
}

async function drain(queueUrl: string): Promise<Message[]> {
  const all: Message[] = [];
  for (;;) {
    const { Messages = [] } = await f.client.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        MessageSystemAttributeNames: ['All'],
        MessageAttributeNames: ['All'],
        VisibilityTimeout: 600,
      }),
    );
    if (Messages.length === 0) return all;
    all.push(...Messages);
    // Delete as we go: a FIFO group stays locked while any of its messages is in flight.
    await f.client.send(
      new DeleteMessageBatchCommand({ QueueUrl: queueUrl, Entries: Messages.map((m, i) => ({ Id: `d${i}`, ReceiptHandle: m.ReceiptHandle })) }),
    );
  }
}

const sendBatches = () => f.sqs.requests.filter((r) => r.operation === 'SendMessageBatch');
type WireEntry = { Id: string; MessageDeduplicationId?: string; MessageAttributes?: Record<string, { StringValue?: string }> };
const entriesOf = (i: number): WireEntry[] => (sendBatches()[i]?.input.Entries ?? []) as WireEntry[];
const orders = (n: number, group = (i: number) => `g${i % 3}`): OutgoingMessage[] =>
  Array.from({ length: n }, (_, i) => ({ body: { order: i }, groupId: group(i) }));

describe('keys', () => {
  it('gives each message a UUIDv7 key, set as the deduplication id and the idempotency-key attribute', async () => {
    const url = await queue('keys.fifo');
    const { sent } = await producer(url).send(orders(3));
    expect(sent.map((s) => s.index)).toEqual([0, 1, 2]);
    for (const s of sent) {
      expect(s.key).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(parseInt(s.key.replaceAll('-', '').slice(0, 12), 16)).toBe(f.clock.now());
    }
    expect(new Set(sent.map((s) => s.key)).size).toBe(3);
    const received = await drain(url);
    expect(received.map((m) => [m.MessageId, m.Attributes?.MessageDeduplicationId, m.MessageAttributes?.['idempotency-key']?.StringValue])).toEqual(
      sent.map((s) => [s.messageId, s.key, s.key]),
    );
    expect(received.map((m) => m.Body)).toEqual(['{"order":0}', '{"order":1}', '{"order":2}']);
  });

  it('uses a caller key as given, and on a standard queue sends it only as the attribute', async () => {
    const url = await queue('keys-std');
    const { sent } = await producer(url).send([{ body: 'x', key: 'order-42' }]);
    expect(sent[0]?.key).toBe('order-42');
    expect(entriesOf(0)[0]).not.toHaveProperty('MessageDeduplicationId');
    const [m] = await drain(url);
    expect(m?.MessageAttributes?.['idempotency-key']?.StringValue).toBe('order-42');
    // A String attribute: what the consumer's key 'auto' reads (it refuses a Binary one as no key).
    expect(m?.MessageAttributes?.['idempotency-key']?.DataType).toBe('String');
  });

  it('makes version-7 UUIDs whose first 48 bits are the time', () => {
    const id = uuidv7(0x0123456789ab);
    expect(id.slice(0, 13)).toBe('01234567-89ab');
    expect(id[14]).toBe('7');
  });
});

describe('retries', () => {
  it('retries the entries SQS failed with the same keys, and only those', async () => {
    const url = await queue('retry.fifo');
    f.sqs.faults.failEntries('SendMessageBatch', { entries: ['m1', 'm3'] });
    const { sent } = await producer(url).send(orders(5, (i) => `g${i}`));
    expect(sendBatches()).toHaveLength(2);
    const first = entriesOf(0);
    const retry = entriesOf(1);
    expect(retry.map((e) => e.Id)).toEqual(['m1', 'm3']);
    expect(retry.map((e) => e.MessageDeduplicationId)).toEqual([first[1]?.MessageDeduplicationId, first[3]?.MessageDeduplicationId]);
    expect(retry.map((e) => e.MessageAttributes?.['idempotency-key']?.StringValue)).toEqual(retry.map((e) => e.MessageDeduplicationId));
    expect(sent.map((s) => s.key)).toEqual(first.map((e) => e.MessageDeduplicationId));
    expect((await drain(url)).length).toBe(5);
    expect(delays).toHaveLength(1);
  });

  it('turns an entry that was applied but reported failed into no duplicate on FIFO', async () => {
    const url = await queue('ambiguous.fifo');
    f.sqs.faults.failEntries('SendMessageBatch', { entries: 2, mode: 'applyThenFail' });
    const { sent } = await producer(url).send(orders(4));
    const received = await drain(url);
    expect(received.map((m) => m.MessageId).sort()).toEqual(sent.map((s) => s.messageId).sort());
    expect(received).toHaveLength(4);
    // The retry was deduplicated: m0 and m1 keep the sequence numbers of their first, applied send.
    const sequence = sent.map((s) => BigInt(s.sequenceNumber ?? '0'));
    expect([...sequence].sort((a, b) => (a < b ? -1 : 1))).toEqual(sequence);
  });

  it('survives a dropped response: the resend carries the same keys and FIFO drops the copy', async () => {
    const url = await queue('dropped.fifo');
    f.sqs.faults.dropResponses('SendMessageBatch');
    const { sent } = await producer(url).send(orders(3));
    expect(sendBatches().length).toBeGreaterThanOrEqual(2);
    expect(entriesOf(1).map((e) => e.MessageDeduplicationId)).toEqual(entriesOf(0).map((e) => e.MessageDeduplicationId));
    const received = await drain(url);
    expect(received.map((m) => m.Attributes?.MessageDeduplicationId)).toEqual(sent.map((s) => s.key));
  });

  it('gives up after maxAttempts with exponential, capped backoff, naming each failed entry', async () => {
    const url = await queue('stubborn.fifo');
    f.sqs.faults.failEntries('SendMessageBatch', { entries: (id) => id === 'm0', times: 10 });
    const error = await producer(url, { maxAttempts: 3, baseDelayMs: 100, maxDelayMs: 150 })
      .send([
        { body: 'a', groupId: 'g1' },
        { body: 'b', groupId: 'g2' },
      ])
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SendFailedError);
    const failed = error as SendFailedError;
    expect(failed.failures).toEqual([
      expect.objectContaining({ index: 0, id: 'm0', code: 'InternalError', senderFault: false, attempts: 3, key: entriesOf(0)[0]?.MessageDeduplicationId }),
    ]);
    expect(failed.sent.map((s) => s.index)).toEqual([1]);
    expect(sendBatches()).toHaveLength(3);
    expect(delays).toHaveLength(2);
    expect(delays[0]).toBeLessThanOrEqual(100);
    expect(delays[1]).toBeLessThanOrEqual(150);
    expect(failed.message).toMatch(/messages\[0\] \(key [0-9a-f-]{36}\): InternalError/);
  });

  it('does not retry an entry SQS rejected as the sender’s fault, and holds back the rest of its FIFO group', async () => {
    const url = await queue('rejected.fifo');
    f.sqs.faults.failEntries('SendMessageBatch', { entries: ['m0'], code: 'InvalidParameterValue', senderFault: true });
    const messages: OutgoingMessage[] = [
      { body: 'a1', groupId: 'a' },
      { body: 'b1', groupId: 'b' },
      ...Array.from({ length: 3 }, (_, i) => ({ body: `a${i + 2}`, groupId: 'a' })),
    ];
    const error = (await producer(url)
      .send(messages)
      .catch((e: unknown) => e)) as SendFailedError;
    expect(error).toBeInstanceOf(SendFailedError);
    expect(error.failures.map((x) => [x.index, x.code, x.attempts])).toEqual([
      [0, 'InvalidParameterValue', 1],
      [2, 'GroupBlocked', 0],
      [3, 'GroupBlocked', 0],
      [4, 'GroupBlocked', 0],
    ]);
    expect(delays).toEqual([]);
    // One message of a group per request: nothing of group a went out behind its missing head.
    expect(sendBatches().map((r) => (r.input.Entries as { MessageBody: string }[]).map((e) => e.MessageBody))).toEqual([['a1', 'b1']]);
    expect((await drain(url)).map((m) => m.Body)).toEqual(['b1']);
  });

  it('keeps a FIFO group in order through a partial batch failure: the failed entry goes in before the later ones of its group', async () => {
    const url = await queue('partial.fifo');
    // SQS fails the first entry of the first request and accepts the rest.
    f.sqs.faults.failEntries('SendMessageBatch', { entries: 1 });
    const messages: OutgoingMessage[] = [
      { body: 'a1', groupId: 'a' },
      { body: 'a2', groupId: 'a' },
      { body: 'b1', groupId: 'b' },
      { body: 'a3', groupId: 'a' },
    ];
    const { sent } = await producer(url).send(messages);
    expect(sent.map((s) => s.index)).toEqual([0, 1, 2, 3]);
    const received = await drain(url);
    expect(received.filter((m) => m.Attributes?.MessageGroupId === 'a').map((m) => m.Body)).toEqual(['a1', 'a2', 'a3']);
    expect(received.map((m) => m.Body).sort()).toEqual(['a1', 'a2', 'a3', 'b1']);
  });
});

describe('strictGroupOrder: false', () => {
  it('packs a group into fewer requests, and gives up its order when an entry fails (the documented trade)', async () => {
    const url = await queue('packed.fifo');
    f.sqs.faults.failEntries('SendMessageBatch', { entries: 1 });
    const { sent } = await producer(url, { strictGroupOrder: false }).send(orders(3, () => 'g'));
    expect(sent).toHaveLength(3);
    expect(sendBatches().map((r) => (r.input.Entries as unknown[]).length)).toEqual([3, 1]);
    expect((await drain(url)).map((m) => m.Body)).toEqual(['{"order":1}', '{"order":2}', '{"order":0}']);
  });
});

describe('chunking', () => {
  it('splits into requests of at most 10 entries, in order', async () => {
    const url = await queue('many.fifo');
    const { sent } = await producer(url).send(orders(25, (i) => `g${i}`));
    expect(sendBatches().map((r) => (r.input.Entries as unknown[]).length)).toEqual([10, 10, 5]);
    const received = await drain(url);
    expect(received.map((m) => m.MessageId)).toEqual(sent.map((s) => s.messageId));
  });

  it('sends one message of a FIFO group per request: 25 of one group take 25 requests, in order', async () => {
    const url = await queue('one-group.fifo');
    const { sent } = await producer(url).send(orders(25, () => 'g'));
    expect(sendBatches().map((r) => (r.input.Entries as unknown[]).length)).toEqual(Array.from({ length: 25 }, () => 1));
    expect((await drain(url)).map((m) => m.MessageId)).toEqual(sent.map((s) => s.messageId));
  });

  it('splits so that no request exceeds 1 MiB of messages', async () => {
    const url = await queue('heavy');
    const body = 'x'.repeat(400_000);
    await producer(url).send([{ body }, { body }, { body }, { body: 'small' }]);
    expect(sendBatches().map((r) => (r.input.Entries as unknown[]).length)).toEqual([2, 2]);
    expect((await drain(url)).length).toBe(4);
  });
});

describe('invalid messages', () => {
  it('names every bad message and its field, and sends nothing', async () => {
    const url = await queue('invalid.fifo');
    const error = (await producer(url)
      .send([
        { body: 'fine', groupId: 'g' },
        { body: 'no group' },
        { body: '', groupId: 'g' },
        { body: 'x'.repeat(1_048_577), groupId: 'g' },
        { body: 'bad key', groupId: 'g', key: 'has space' },
        { body: 'reserved', groupId: 'g', attributes: { 'idempotency-key': 'mine' } },
        { body: 'delay', groupId: 'g', delaySeconds: 5 },
      ])
      .catch((e: unknown) => e)) as InvalidMessagesError;
    expect(error).toBeInstanceOf(InvalidMessagesError);
    // Under the package's one root: a caller catching InboxError catches the producer's errors too.
    expect(error).toBeInstanceOf(InboxError);
    expect(error.problems.map((p) => [p.index, p.field])).toEqual([
      [1, 'groupId'],
      [2, 'body'],
      [3, 'body'],
      [4, 'key'],
      [5, 'attributes.idempotency-key'],
      [6, 'delaySeconds'],
    ]);
    expect(error.problems[2]?.message).toMatch(/over the 1048576-byte SQS limit/);
    expect(sendBatches()).toEqual([]);
  });

  it('refuses bad options when created', () => {
    expect(() => createProducer({ client: f.client, queueUrl: 'orders' })).toThrow(/queueUrl: pass the queue URL/);
    expect(() => createProducer({ client: f.client, queueUrl: 'http://x/1/q', maxAttempts: 0 })).toThrow(/maxAttempts/);
  });
});
