import { DeleteMessageCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { Message } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import { ManualClock } from '../../local/sqs/clock.js';
import { startSqs } from '../../local/sqs/server.js';
import type { SqsServer, StartSqsOptions } from '../../local/sqs/server.js';

export interface SqsFixture {
  sqs: SqsServer;
  client: SQSClient;
  clock: ManualClock;
  close(): Promise<void>;
}

/** A local SQS front on a manual clock, and a real SDK client pointed at it. */
export async function startSqsFixture(options: Omit<StartSqsOptions, 'clock'> = {}): Promise<SqsFixture> {
  const clock = new ManualClock();
  const sqs = await startSqs({ ...options, clock });
  const client = sqsClient(sqs.endpoint);
  return {
    sqs,
    client,
    clock,
    close: async () => {
      client.destroy();
      await sqs.close();
    },
  };
}

export function sqsClient(endpoint: string, overrides: { maxAttempts?: number } = {}): SQSClient {
  return new SQSClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
    ...overrides,
  });
}

/** Polls `condition` every few real milliseconds until it holds; fails after `timeoutMs`. */
export async function eventually(condition: () => boolean, timeoutMs = 2000, what = 'condition'): Promise<void> {
  const start = Date.now();
  while (!condition()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/** Lets pending promise callbacks and I/O run. */
export function settle(ms = 5): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Receives and deletes every message on the queue, with all their attributes. */
export async function drain(client: SQSClient, url: string): Promise<Message[]> {
  const all: Message[] = [];
  for (;;) {
    const { Messages } = await client.send(
      new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, MessageAttributeNames: ['All'], AttributeNames: ['All'] }),
    );
    if (!Messages?.length) return all;
    for (const m of Messages) {
      all.push(m);
      await client.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: m.ReceiptHandle! }));
    }
  }
}

/** A received message as Lambda's SQS event source hands it over, under `messageId`, from the queue `eventSourceARN`. */
export function lambdaRecordOf(message: Message, messageId: string, eventSourceARN: string): SQSRecord {
  return {
    messageId,
    receiptHandle: `rh-${messageId}`,
    body: message.Body!,
    attributes: { ApproximateReceiveCount: '1', ...message.Attributes } as SQSRecord['attributes'],
    messageAttributes: Object.fromEntries(
      Object.entries(message.MessageAttributes ?? {}).map(([name, value]) => [name, { dataType: value.DataType!, stringValue: value.StringValue }]),
    ) as SQSRecord['messageAttributes'],
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN,
    awsRegion: 'us-east-1',
  };
}
