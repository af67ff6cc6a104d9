import { createHash } from 'node:crypto';
import {
  ChangeMessageVisibilityBatchCommand,
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ListQueuesCommand,
  PurgeQueueCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
} from '@aws-sdk/client-sqs';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { md5OfMessageAttributes } from '../../local/sqs/md5.js';
import { startSqs } from '../../local/sqs/server.js';
import { SystemClock } from '../../local/sqs/clock.js';
import { sqsClient, startSqsFixture } from '../support/sqs.js';
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

async function createQueue(name: string, attributes: Record<string, string> = {}): Promise<string> {
  const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
  if (!QueueUrl) throw new Error('no QueueUrl');
  return QueueUrl;
}

async function receive(QueueUrl: string, extra: Partial<{ MaxNumberOfMessages: number; VisibilityTimeout: number; WaitTimeSeconds: number }> = {}) {
  const out = await client.send(
    new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10, MessageSystemAttributeNames: ['All'], MessageAttributeNames: ['All'], ...extra }),
  );
  return out.Messages ?? [];
}

async function counts(QueueUrl: string) {
  const { Attributes = {} } = await client.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['All'] }));
  return {
    visible: Number(Attributes.ApproximateNumberOfMessages),
    inFlight: Number(Attributes.ApproximateNumberOfMessagesNotVisible),
    delayed: Number(Attributes.ApproximateNumberOfMessagesDelayed),
  };
}

async function errorOf(promise: Promise<unknown>): Promise<{ name: string; Code?: string; message: string; $fault?: string }> {
  try {
    await promise;
  } catch (error) {
    return error as { name: string; Code?: string; message: string };
  }
  throw new Error('expected the call to fail');
}

describe('queues', () => {
  it('returns queue URLs that point back at the server, and resolves them by name', async () => {
    const url = await createQueue('orders');
    expect(url).toBe(`${f.sqs.endpoint}/000000000000/orders`);
    const { QueueUrl } = await client.send(new GetQueueUrlCommand({ QueueName: 'orders' }));
    expect(QueueUrl).toBe(url);
    // An SDK client with no endpoint follows the QueueUrl host (useQueueUrlAsEndpoint).
    const free = new (client.constructor as typeof import('@aws-sdk/client-sqs').SQSClient)({
      region: 'us-east-1',
      credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
      logger: { debug() {}, info() {}, warn() {}, error() {} },
    });
    await free.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'via queue url' }));
    expect((await receive(url))[0]?.Body).toBe('via queue url');
    free.destroy();
  });

  it('answers the same name with the same attributes with the same URL, and different attributes with QueueNameExists', async () => {
    const url = await createQueue('q1', { VisibilityTimeout: '10' });
    expect(await createQueue('q1', { VisibilityTimeout: '10' })).toBe(url);
    const error = await errorOf(createQueue('q1', { VisibilityTimeout: '11' }));
    expect(error.name).toBe('QueueNameExists');
    expect(error.Code).toBe('QueueAlreadyExists');
  });

  it('reports an unknown queue as QueueDoesNotExist with the query code and a client fault', async () => {
    const error = await errorOf(client.send(new GetQueueUrlCommand({ QueueName: 'missing' })));
    expect(error.name).toBe('QueueDoesNotExist');
    expect(error.Code).toBe('AWS.SimpleQueueService.NonExistentQueue');
    expect(error.$fault).toBe('client');
  });

  it('validates names and attributes with the AWS error names', async () => {
    expect((await errorOf(createQueue('bad name'))).name).toBe('InvalidParameterValue');
    expect((await errorOf(createQueue('x.fifo'))).name).toBe('InvalidParameterValue');
    expect((await errorOf(createQueue('y', { FifoQueue: 'true' }))).name).toBe('InvalidParameterValue');
    expect((await errorOf(createQueue('v', { VisibilityTimeout: '43201' }))).name).toBe('InvalidAttributeValue');
    expect((await errorOf(createQueue('w', { Colour: 'blue' }))).name).toBe('InvalidAttributeName');
    expect((await errorOf(createQueue('c', { ContentBasedDeduplication: 'true' }))).name).toBe('InvalidAttributeName');
  });

  it('lists queues by prefix', async () => {
    await createQueue('alpha-1');
    await createQueue('alpha-2');
    await createQueue('beta');
    const { QueueUrls = [] } = await client.send(new ListQueuesCommand({ QueueNamePrefix: 'alpha' }));
    expect(QueueUrls.map((u) => u.split('/').at(-1)).sort()).toEqual(['alpha-1', 'alpha-2']);
  });

  it('reports the queue attributes and the three message counts', async () => {
    const url = await createQueue('counted', { DelaySeconds: '5', VisibilityTimeout: '20' });
    await client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'delayed' }));
    await client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'now', DelaySeconds: 0 }));
    await client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'later', DelaySeconds: 0 }));
    expect(await counts(url)).toEqual({ visible: 2, inFlight: 0, delayed: 1 });
    await receive(url, { MaxNumberOfMessages: 1 });
    expect(await counts(url)).toEqual({ visible: 1, inFlight: 1, delayed: 1 });
    const { Attributes = {} } = await client.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn', 'VisibilityTimeout'] }));
    expect(Attributes).toEqual({ QueueArn: 'arn:aws:sqs:us-east-1:000000000000:counted', VisibilityTimeout: '20' });
  });
});

describe('MD5s the SDK checks', () => {
  it('returns the body MD5 on send and receive, and the AWS attribute MD5', async () => {
    const url = await createQueue('md5');
    const MessageAttributes = {
      ordinal: { DataType: 'Number', StringValue: '1' },
      category: { DataType: 'String', StringValue: 'test' },
      blob: { DataType: 'Binary', BinaryValue: new Uint8Array([0, 1, 2, 255]) },
    };
    const sent = await client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'héllo wörld', MessageAttributes }));
    expect(sent.MD5OfMessageBody).toBe(createHash('md5').update('héllo wörld', 'utf8').digest('hex'));
    const [message] = await receive(url);
    expect(message?.MD5OfBody).toBe(sent.MD5OfMessageBody);
    expect(message?.MD5OfMessageAttributes).toBe(sent.MD5OfMessageAttributes);
    expect(message?.MessageAttributes?.blob?.BinaryValue).toEqual(new Uint8Array([0, 1, 2, 255]));
  });

  it('computes the attribute MD5 exactly as AWS documents it (published vectors)', () => {
    // Vectors from independent SQS implementations checked against AWS.
    expect(
      md5OfMessageAttributes({
        ordinal: { dataType: 'Number', stringValue: '1' },
        category: { dataType: 'String', stringValue: 'test' },
      }),
    ).toBe('d21ae90c49061e927f57df5f5d72be1f');
    expect(md5OfMessageAttributes({ SellerName: { dataType: 'String', stringValue: 'Example Store' } })).toBe('cd28f3b68aeee4b2eac9c66f2f694b58');
  });
});

describe('visibility and receipt handles', () => {
  it('hides a received message for the visibility timeout, then delivers it again with a new handle and a higher receive count', async () => {
    const url = await createQueue('vis', { VisibilityTimeout: '30' });
    await client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'm' }));
    const [first] = await receive(url);
    expect(first?.Attributes?.ApproximateReceiveCount).toBe('1');
    expect(first?.Attributes?.ApproximateFirstReceiveTimestamp).toBe(String(f.clock.now()));
    const firstReceiveAt = f.clock.now();
    f.clock.advance(29_999);
    expect(await receive(url)).toEqual([]);
    f.clock.advance(1);
    const [second] = await receive(url);
    expect(second?.MessageId).toBe(first?.MessageId);
    expect(second?.ReceiptHandle).not.toBe(first?.ReceiptHandle);
    expect(second?.Attributes?.ApproximateReceiveCount).toBe('2');
    expect(second?.Attributes?.ApproximateFirstReceiveTimestamp).toBe(String(firstReceiveAt));
  });

  it('deletes only with the latest receipt handle; an older one succeeds and deletes nothing', async () => {
    const url = await createQueue('handles', { VisibilityTimeout: '1' });
    await client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'm' }));
    const [first] = await receive(url);
    f.clock.advance(1000);
    const [second] = await receive(url);
    await client.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: first?.ReceiptHandle }));
    expect(await counts(url)).toEqual({ visible: 0, inFlight: 1, delayed: 0 });
    await client.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: second?.ReceiptHandle }));
    expect(await counts(url)).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
  });

  it('rejects a malformed receipt handle with ReceiptHandleIsInvalid', async () => {
    const url = await createQueue('bad-handle');
    const error = await errorOf(client.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: 'not-a-handle!' })));
    expect(error.name).toBe('ReceiptHandleIsInvalid');
  });

  it('honours a VisibilityTimeout override on receive and ChangeMessageVisibility counted from the call', async () => {
    const url = await createQueue('change', { VisibilityTimeout: '30' });
    await client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'm' }));
    const [m] = await receive(url, { VisibilityTimeout: 5 });
    f.clock.advance(4000);
    await client.send(new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: m?.ReceiptHandle, VisibilityTimeout: 10 }));
    f.clock.advance(9999);
    expect(await receive(url)).toEqual([]);
    f.clock.advance(1);
    expect(await receive(url)).toHaveLength(1);
  });

  // Once the message is no longer in flight, AWS answers ChangeMessageVisibility with 200 and changes
  // nothing (localstack PR #9632; test_sqs.snapshot.json, test_change_message_visibility_after_visibility_timeout_expiration).
  it('makes a message visible at once with visibility 0; changing it again then succeeds and changes nothing', async () => {
    const url = await createQueue('zero', { VisibilityTimeout: '30' });
    await client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'm' }));
    const [m] = await receive(url);
    await client.send(new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: m?.ReceiptHandle, VisibilityTimeout: 0 }));
    expect(await counts(url)).toEqual({ visible: 1, inFlight: 0, delayed: 0 });
    await client.send(new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: m?.ReceiptHandle, VisibilityTimeout: 5 }));
    expect(await counts(url)).toEqual({ visible: 1, inFlight: 0, delayed: 0 });
  });
});

describe('redrive, retention and delay', () => {
  it('moves a message to the dead-letter queue on the receive after maxReceiveCount, keeping its receive count', async () => {
    const dlq = await createQueue('dlq');
    const { Attributes = {} } = await client.send(new GetQueueAttributesCommand({ QueueUrl: dlq, AttributeNames: ['QueueArn'] }));
    const url = await createQueue('src', {
      VisibilityTimeout: '1',
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: Attributes.QueueArn, maxReceiveCount: 2 }),
    });
    await client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'poison' }));
    expect(await receive(url)).toHaveLength(1);
    f.clock.advance(1000);
    expect(await receive(url)).toHaveLength(1);
    f.clock.advance(1000);
    expect(await receive(url)).toEqual([]);
    expect(await counts(url)).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
    const [moved] = await receive(dlq);
    expect(moved?.Body).toBe('poison');
    expect(moved?.Attributes?.ApproximateReceiveCount).toBe('3');
    expect(moved?.Attributes?.DeadLetterQueueSourceArn).toBe('arn:aws:sqs:us-east-1:000000000000:src');
  });

  it('refuses a redrive policy whose dead-letter queue is missing, or denies it', async () => {
    const missing = JSON.stringify({ deadLetterTargetArn: 'arn:aws:sqs:us-east-1:000000000000:nope', maxReceiveCount: 3 });
    expect((await errorOf(createQueue('s1', { RedrivePolicy: missing }))).name).toBe('InvalidParameterValue');
    await createQueue('closed', { RedriveAllowPolicy: JSON.stringify({ redrivePermission: 'denyAll' }) });
    const denied = JSON.stringify({ deadLetterTargetArn: 'arn:aws:sqs:us-east-1:000000000000:closed', maxReceiveCount: 3 });
    expect((await errorOf(createQueue('s2', { RedrivePolicy: denied }))).message).toMatch(/does not allow/);
  });

  it('drops messages older than MessageRetentionPeriod', async () => {
    const url = await createQueue('retained', { MessageRetentionPeriod: '60' });
    await client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'old' }));
    f.clock.advance(59_999);
    expect((await counts(url)).visible).toBe(1);
    f.clock.advance(1);
    expect(await counts(url)).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
    expect(await receive(url)).toEqual([]);
  });

  it('delays a message by its DelaySeconds', async () => {
    const url = await createQueue('delay');
    await client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'd', DelaySeconds: 10 }));
    expect(await receive(url)).toEqual([]);
    f.clock.advance(10_000);
    expect(await receive(url)).toHaveLength(1);
  });
});

describe('message limits', () => {
  it('accepts exactly 1 MiB of body plus attributes and rejects one byte more', async () => {
    const url = await createQueue('big');
    const attrs = { k: { DataType: 'String', StringValue: 'v' } }; // 1 + 6 + 1 = 8 bytes
    await client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'x'.repeat(1_048_576 - 8), MessageAttributes: attrs }));
    const error = await errorOf(client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'x'.repeat(1_048_576 - 7), MessageAttributes: attrs })));
    expect(error.name).toBe('InvalidParameterValue');
    expect(error.message).toMatch(/Message must be shorter than 1048576 bytes/);
  });

  it('honours a lower MaximumMessageSize', async () => {
    const url = await createQueue('small', { MaximumMessageSize: '1024' });
    await client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'x'.repeat(1024) }));
    expect((await errorOf(client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'x'.repeat(1025) })))).name).toBe('InvalidParameterValue');
  });

  it('rejects characters outside the XML set, an empty body and bad attributes', async () => {
    const url = await createQueue('chars');
    expect((await errorOf(client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'a\u0000b' })))).name).toBe('InvalidMessageContents');
    expect((await errorOf(client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: '' })))).name).toBe('MissingParameter');
    const eleven = Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`a${i}`, { DataType: 'String', StringValue: 'v' }]));
    expect((await errorOf(client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'b', MessageAttributes: eleven })))).message).toMatch(
      /exceeds the allowed maximum \[10\]/,
    );
    const reserved = { 'AWS.x': { DataType: 'String', StringValue: 'v' } };
    expect((await errorOf(client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'b', MessageAttributes: reserved })))).name).toBe(
      'InvalidParameterValue',
    );
  });
});

describe('batches', () => {
  it('reports per-entry failures next to successes in SendMessageBatch', async () => {
    const url = await createQueue('batch');
    const out = await client.send(
      new SendMessageBatchCommand({
        QueueUrl: url,
        Entries: [
          { Id: 'ok1', MessageBody: 'a' },
          { Id: 'bad', MessageBody: 'b\u0001' },
          { Id: 'ok2', MessageBody: 'c' },
        ],
      }),
    );
    expect(out.Successful?.map((s) => s.Id)).toEqual(['ok1', 'ok2']);
    expect(out.Failed).toEqual([expect.objectContaining({ Id: 'bad', Code: 'InvalidMessageContents', SenderFault: true })]);
    expect((await counts(url)).visible).toBe(2);
  });

  it.each([
    ['EmptyBatchRequest', []],
    ['TooManyEntriesInBatchRequest', Array.from({ length: 11 }, (_, i) => ({ Id: `e${i}`, MessageBody: 'x' }))],
    [
      'BatchEntryIdsNotDistinct',
      [
        { Id: 'same', MessageBody: 'x' },
        { Id: 'same', MessageBody: 'y' },
      ],
    ],
    ['InvalidBatchEntryId', [{ Id: 'has space', MessageBody: 'x' }]],
    [
      'BatchRequestTooLong',
      [
        { Id: 'a', MessageBody: 'x'.repeat(600_000) },
        { Id: 'b', MessageBody: 'x'.repeat(600_000) },
      ],
    ],
  ])('fails the whole SendMessageBatch with %s', async (name, Entries) => {
    const url = await createQueue('batch-errors');
    const error = await errorOf(client.send(new SendMessageBatchCommand({ QueueUrl: url, Entries })));
    expect(error.name).toBe(name);
    expect((await counts(url)).visible).toBe(0);
  });

  it('deletes and changes visibility in batches with per-entry ReceiptHandleIsInvalid', async () => {
    const url = await createQueue('batch-delete', { VisibilityTimeout: '30' });
    await client.send(new SendMessageBatchCommand({ QueueUrl: url, Entries: [0, 1, 2].map((i) => ({ Id: `m${i}`, MessageBody: `b${i}` })) }));
    const messages = await receive(url);
    expect(messages).toHaveLength(3);
    const changed = await client.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: url,
        Entries: [
          { Id: 'a', ReceiptHandle: messages[0]?.ReceiptHandle, VisibilityTimeout: 0 },
          { Id: 'z', ReceiptHandle: 'garbage', VisibilityTimeout: 0 },
        ],
      }),
    );
    expect(changed.Successful?.map((s) => s.Id)).toEqual(['a']);
    expect(changed.Failed?.[0]).toMatchObject({ Id: 'z', Code: 'ReceiptHandleIsInvalid', SenderFault: true });
    const deleted = await client.send(
      new DeleteMessageBatchCommand({
        QueueUrl: url,
        Entries: [
          { Id: 'b', ReceiptHandle: messages[1]?.ReceiptHandle },
          { Id: 'c', ReceiptHandle: messages[2]?.ReceiptHandle },
          { Id: 'z', ReceiptHandle: 'garbage' },
        ],
      }),
    );
    expect(deleted.Successful?.map((s) => s.Id)).toEqual(['b', 'c']);
    expect(deleted.Failed?.map((e) => [e.Id, e.Code])).toEqual([['z', 'ReceiptHandleIsInvalid']]);
    expect(await counts(url)).toEqual({ visible: 1, inFlight: 0, delayed: 0 });
  });
});

describe('purge', () => {
  it('deletes every message and allows one purge per 60 seconds', async () => {
    const url = await createQueue('purged');
    await client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'a' }));
    await client.send(new PurgeQueueCommand({ QueueUrl: url }));
    expect(await counts(url)).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
    expect((await errorOf(client.send(new PurgeQueueCommand({ QueueUrl: url })))).name).toBe('PurgeQueueInProgress');
    f.clock.advance(60_000);
    await client.send(new PurgeQueueCommand({ QueueUrl: url }));
  });
});

describe('long polling', () => {
  it('wakes a waiting ReceiveMessage as soon as a message is sent, and returns empty after the wait', async () => {
    const sqs = await startSqs({ clock: new SystemClock() });
    const real = sqsClient(sqs.endpoint);
    try {
      const { QueueUrl } = await real.send(new CreateQueueCommand({ QueueName: 'poll' }));
      let started = Date.now();
      const empty = await real.send(new ReceiveMessageCommand({ QueueUrl, WaitTimeSeconds: 1 }));
      expect(empty.Messages ?? []).toEqual([]);
      expect(Date.now() - started).toBeGreaterThanOrEqual(950);
      started = Date.now();
      const waiting = real.send(new ReceiveMessageCommand({ QueueUrl, WaitTimeSeconds: 10 }));
      setTimeout(() => void real.send(new SendMessageCommand({ QueueUrl, MessageBody: 'wake' })), 100);
      const got = await waiting;
      expect(got.Messages?.[0]?.Body).toBe('wake');
      expect(Date.now() - started).toBeLessThan(2000);
    } finally {
      real.destroy();
      await sqs.close();
    }
  });

  it('wakes a long poll when an in-flight message becomes visible again', async () => {
    const url = await createQueue('poll-vis', { VisibilityTimeout: '5' });
    await client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'again' }));
    await receive(url);
    const waiting = receive(url, { WaitTimeSeconds: 20 });
    await new Promise((r) => setTimeout(r, 20));
    f.clock.advance(5000);
    expect((await waiting)[0]?.Body).toBe('again');
  });
});
