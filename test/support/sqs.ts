import { SQSClient } from '@aws-sdk/client-sqs';
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
