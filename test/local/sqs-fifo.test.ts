import {
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
} from '@aws-sdk/client-sqs';
import type { Message, SQSClient } from '@aws-sdk/client-sqs';
import { createHash } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSqsFixture } from '../support/sqs.js';
import type { SqsFixture } from '../support/sqs.js';

let f: SqsFixture;
let client: SQSClient;
beforeEach(async () => {
  f = await startSqsFixture();
  client = f.client;
});
afterEach(async () => {
  await f.close();
});

async function fifoQueue(name: string, attributes: Record<string, string> = {}): Promise<string> {
  const { QueueUrl } = await client.send(
    new CreateQueueCommand({ QueueName: name, Attributes: { FifoQueue: 'true', VisibilityTimeout: '30', ...attributes } }),
  );
  if (!QueueUrl) throw new Error('no QueueUrl');
  return QueueUrl;
}

async function send(QueueUrl: string, body: string, group: string, dedup: string = body) {
  return client.send(new SendMessageCommand({ QueueUrl, MessageBody: body, MessageGroupId: group, MessageDeduplicationId: dedup }));
}

async function receive(QueueUrl: string, max = 10, attemptId?: string): Promise<Message[]> {
  const out = await client.send(
    new ReceiveMessageCommand({
      QueueUrl,
      MaxNumberOfMessages: max,
      MessageSystemAttributeNames: ['All'],
      ...(attemptId ? { ReceiveRequestAttemptId: attemptId } : {}),
    }),
  );
  return out.Messages ?? [];
}

const bodies = (messages: Message[]): (string | undefined)[] => messages.map((m) => m.Body);

async function errorName(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return (error as Error).name;
  }
  throw new Error('expected the call to fail');
}

describe('FIFO groups', () => {
  it('returns as many messages of one group as it can, in order, before the next group', async () => {
    const url = await fifoQueue('order.fifo');
    for (const [body, group] of [
      ['a1', 'a'],
      ['b1', 'b'],
      ['a2', 'a'],
      ['b2', 'b'],
      ['a3', 'a'],
    ] as const) {
      await send(url, body, group);
    }
    expect(bodies(await receive(url))).toEqual(['a1', 'a2', 'a3', 'b1', 'b2']);
  });

  it('keeps a group locked while any of its messages is in flight, and serves other groups', async () => {
    const url = await fifoQueue('lock.fifo');
    await send(url, 'a1', 'a');
    await send(url, 'a2', 'a');
    await send(url, 'b1', 'b');
    expect(bodies(await receive(url, 1))).toEqual(['a1']);
    expect(bodies(await receive(url, 10))).toEqual(['b1']);
    expect(await receive(url, 10)).toEqual([]);
  });

  it('unlocks a group when its in-flight message is deleted, and delivers the next in order', async () => {
    const url = await fifoQueue('unlock.fifo');
    await send(url, 'a1', 'a');
    await send(url, 'a2', 'a');
    const [first] = await receive(url, 1);
    await client.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: first?.ReceiptHandle }));
    expect(bodies(await receive(url))).toEqual(['a2']);
  });

  it('redelivers a whole group in order after a visibility timeout, with receive counts', async () => {
    const url = await fifoQueue('redeliver.fifo');
    await send(url, 'a1', 'a');
    await send(url, 'a2', 'a');
    const first = await receive(url);
    expect(bodies(first)).toEqual(['a1', 'a2']);
    f.clock.advance(30_000);
    const again = await receive(url);
    expect(bodies(again)).toEqual(['a1', 'a2']);
    expect(again.map((m) => m.Attributes?.ApproximateReceiveCount)).toEqual(['2', '2']);
  });

  it('keeps the group locked when only a later message of a batch is still in flight', async () => {
    const url = await fifoQueue('partial.fifo');
    await send(url, 'a1', 'a');
    await send(url, 'a2', 'a');
    await send(url, 'a3', 'a');
    const batch = await receive(url, 2);
    await client.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: batch[0]?.ReceiptHandle }));
    // a2 is in flight: a3 must wait, or it would overtake a2.
    expect(await receive(url)).toEqual([]);
    await client.send(new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: batch[1]?.ReceiptHandle, VisibilityTimeout: 0 }));
    expect(bodies(await receive(url))).toEqual(['a2', 'a3']);
  });

  // What locks a group is its head: with the head visible again, the head is delivered and the
  // message behind it, still in flight, is not (localstack tests/aws/services/sqs/test_sqs.py,
  // test_fifo_message_group_visibility_after_terminate_visibility_timeout, validated against AWS).
  it('serves the head of a group again once it is visible, while a later message is still in flight', async () => {
    const url = await fifoQueue('relock.fifo');
    await send(url, 'a1', 'a');
    await send(url, 'a2', 'a');
    const [a1, a2] = await receive(url);
    await client.send(new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: a1?.ReceiptHandle, VisibilityTimeout: 0 }));
    const again = await receive(url);
    expect(bodies(again)).toEqual(['a1']);
    await client.send(new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: a2?.ReceiptHandle, VisibilityTimeout: 0 }));
    // a1 is in flight again (its new receive): the group is locked until it is deleted or visible.
    expect(await receive(url)).toEqual([]);
    await client.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: again[0]?.ReceiptHandle }));
    expect(bodies(await receive(url))).toEqual(['a2']);
  });

  it('sets MessageGroupId, MessageDeduplicationId and increasing SequenceNumbers', async () => {
    const url = await fifoQueue('attrs.fifo');
    const s1 = await send(url, 'x1', 'g', 'd1');
    const s2 = await send(url, 'x2', 'g', 'd2');
    expect(BigInt(s2.SequenceNumber ?? '0')).toBeGreaterThan(BigInt(s1.SequenceNumber ?? '0'));
    const [m1, m2] = await receive(url);
    expect(m1?.Attributes).toMatchObject({ MessageGroupId: 'g', MessageDeduplicationId: 'd1', SequenceNumber: s1.SequenceNumber });
    expect(m2?.Attributes?.SequenceNumber).toBe(s2.SequenceNumber);
  });

  it('enqueues the entries of a SendMessageBatch in order', async () => {
    const url = await fifoQueue('batch.fifo');
    await client.send(
      new SendMessageBatchCommand({
        QueueUrl: url,
        Entries: ['e1', 'e2', 'e3', 'e4'].map((b) => ({ Id: b, MessageBody: b, MessageGroupId: 'g', MessageDeduplicationId: b })),
      }),
    );
    expect(bodies(await receive(url))).toEqual(['e1', 'e2', 'e3', 'e4']);
  });
});

describe('FIFO deduplication', () => {
  it('accepts a duplicate within five minutes with the first MessageId, and does not deliver it', async () => {
    const url = await fifoQueue('dedup.fifo');
    const first = await send(url, 'one', 'g', 'k');
    const again = await send(url, 'one-again', 'g', 'k');
    expect(again.MessageId).toBe(first.MessageId);
    expect(again.SequenceNumber).toBe(first.SequenceNumber);
    expect(bodies(await receive(url))).toEqual(['one']);
  });

  it('remembers a deduplication id after the message is deleted, and forgets it after five minutes', async () => {
    const url = await fifoQueue('dedup-window.fifo');
    await send(url, 'v1', 'g', 'k');
    const [m] = await receive(url);
    await client.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: m?.ReceiptHandle }));
    f.clock.advance(5 * 60_000 - 1);
    await send(url, 'v2', 'g', 'k');
    expect(await receive(url)).toEqual([]);
    f.clock.advance(1);
    await send(url, 'v3', 'g', 'k');
    expect(bodies(await receive(url))).toEqual(['v3']);
  });

  it('derives the deduplication id from the SHA-256 of the body with ContentBasedDeduplication', async () => {
    const url = await fifoQueue('content.fifo', { ContentBasedDeduplication: 'true' });
    const a = await client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'same', MessageGroupId: 'g' }));
    const b = await client.send(
      new SendMessageCommand({
        QueueUrl: url,
        MessageBody: 'same',
        MessageGroupId: 'g',
        MessageAttributes: { x: { DataType: 'String', StringValue: 'differs' } },
      }),
    );
    expect(b.MessageId).toBe(a.MessageId);
    const explicit = await client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'same', MessageGroupId: 'g', MessageDeduplicationId: 'own' }));
    expect(explicit.MessageId).not.toBe(a.MessageId);
    const [m] = await receive(url);
    expect(m?.Attributes?.MessageDeduplicationId).toBe(createHash('sha256').update('same').digest('hex'));
  });

  it('scopes deduplication to the queue by default and to the group with DeduplicationScope=messageGroup', async () => {
    const perQueue = await fifoQueue('scope-q.fifo');
    await send(perQueue, 'g1', 'g1', 'k');
    await send(perQueue, 'g2', 'g2', 'k');
    expect(bodies(await receive(perQueue))).toEqual(['g1']);
    const perGroup = await fifoQueue('scope-g.fifo', { DeduplicationScope: 'messageGroup', FifoThroughputLimit: 'perMessageGroupId' });
    await send(perGroup, 'g1', 'g1', 'k');
    await send(perGroup, 'g2', 'g2', 'k');
    await send(perGroup, 'g2-dup', 'g2', 'k');
    expect(bodies(await receive(perGroup))).toEqual(['g1', 'g2']);
  });

  it('allows FifoThroughputLimit=perMessageGroupId only with DeduplicationScope=messageGroup', async () => {
    expect(await errorName(fifoQueue('tp.fifo', { FifoThroughputLimit: 'perMessageGroupId' }))).toBe('InvalidAttributeValue');
    const url = await fifoQueue('tp2.fifo', { DeduplicationScope: 'messageGroup', FifoThroughputLimit: 'perMessageGroupId' });
    const { Attributes = {} } = await client.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['All'] }));
    expect(Attributes).toMatchObject({
      FifoQueue: 'true',
      DeduplicationScope: 'messageGroup',
      FifoThroughputLimit: 'perMessageGroupId',
      ContentBasedDeduplication: 'false',
    });
  });
});

describe('FIFO send rules', () => {
  it('requires a MessageGroupId, and a deduplication id unless content-based', async () => {
    const url = await fifoQueue('rules.fifo');
    expect(await errorName(client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'x', MessageDeduplicationId: 'd' })))).toBe('MissingParameter');
    expect(await errorName(client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'x', MessageGroupId: 'g' })))).toBe('InvalidParameterValue');
  });

  it('refuses a per-message DelaySeconds, and applies the queue delay in order', async () => {
    const url = await fifoQueue('delay.fifo', { DelaySeconds: '5' });
    expect(
      await errorName(
        client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'x', MessageGroupId: 'g', MessageDeduplicationId: 'd', DelaySeconds: 3 })),
      ),
    ).toBe('InvalidParameterValue');
    await send(url, 'late', 'g');
    expect(await receive(url)).toEqual([]);
    f.clock.advance(5000);
    expect(bodies(await receive(url))).toEqual(['late']);
  });

  it('refuses a MessageDeduplicationId on a standard queue', async () => {
    const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: 'std' }));
    expect(await errorName(client.send(new SendMessageCommand({ QueueUrl, MessageBody: 'x', MessageDeduplicationId: 'd' })))).toBe('InvalidParameterValue');
  });
});

describe('FIFO redrive', () => {
  it('needs a FIFO dead-letter queue', async () => {
    const { QueueUrl: std } = await client.send(new CreateQueueCommand({ QueueName: 'std-dlq' }));
    expect(std).toBeDefined();
    const policy = JSON.stringify({ deadLetterTargetArn: 'arn:aws:sqs:us-east-1:000000000000:std-dlq', maxReceiveCount: 3 });
    expect(await errorName(fifoQueue('src.fifo', { RedrivePolicy: policy }))).toBe('InvalidParameterValue');
  });

  it('moves the head of a group to the FIFO dead-letter queue at maxReceiveCount, then serves the rest of the group', async () => {
    const dlq = await fifoQueue('dead.fifo');
    const url = await fifoQueue('live.fifo', {
      VisibilityTimeout: '10',
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: 'arn:aws:sqs:us-east-1:000000000000:dead.fifo', maxReceiveCount: 2 }),
    });
    await send(url, 'poison', 'g');
    await send(url, 'next', 'g');
    expect(bodies(await receive(url, 1))).toEqual(['poison']);
    f.clock.advance(10_000);
    expect(bodies(await receive(url, 1))).toEqual(['poison']);
    f.clock.advance(10_000);
    expect(bodies(await receive(url, 1))).toEqual(['next']);
    const [dead] = await receive(dlq);
    expect(dead?.Body).toBe('poison');
    expect(dead?.Attributes?.MessageGroupId).toBe('g');
  });
});

describe('ReceiveRequestAttemptId', () => {
  it('returns the same messages and receipt handles on a retry with the same id', async () => {
    const url = await fifoQueue('attempt.fifo');
    await send(url, 'a1', 'a');
    await send(url, 'b1', 'b');
    const first = await receive(url, 1, 'attempt-1');
    const retry = await receive(url, 1, 'attempt-1');
    expect(retry.map((m) => m.ReceiptHandle)).toEqual(first.map((m) => m.ReceiptHandle));
    expect(retry[0]?.Attributes?.ApproximateReceiveCount).toBe('1');
    expect(bodies(await receive(url, 1, 'attempt-2'))).toEqual(['b1']);
  });

  it('starts a new receive once a message of the attempt was deleted', async () => {
    const url = await fifoQueue('attempt2.fifo');
    await send(url, 'a1', 'a');
    await send(url, 'a2', 'a');
    const [first] = await receive(url, 1, 'same');
    await client.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: first?.ReceiptHandle }));
    expect(bodies(await receive(url, 1, 'same'))).toEqual(['a2']);
  });
});
