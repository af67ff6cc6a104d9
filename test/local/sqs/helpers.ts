import { CreateQueueCommand, GetQueueAttributesCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import type { Message, SQSClient } from '@aws-sdk/client-sqs';
import { afterEach, beforeEach } from 'vitest';
import { startSqsFixture } from '../../support/sqs.js';
import type { SqsFixture } from '../../support/sqs.js';

/** What an SDK call threw, with the fields the tests look at. */
export interface SdkError {
  name: string;
  message: string;
  Code?: string;
  $fault?: string;
  $metadata?: { httpStatusCode?: number };
}

/** A local SQS on a manual clock with a real SDK client, started before and closed after each test of the file. */
export function useSqs(options: Parameters<typeof startSqsFixture>[0] = {}): { readonly f: SqsFixture; readonly client: SQSClient } {
  let fixture: SqsFixture | undefined;
  beforeEach(async () => {
    fixture = await startSqsFixture(options);
  });
  afterEach(async () => {
    await fixture?.close();
    fixture = undefined;
  });
  const current = (): SqsFixture => {
    if (!fixture) throw new Error('the SQS fixture runs only inside a test');
    return fixture;
  };
  return {
    get f() {
      return current();
    },
    get client() {
      return current().client;
    },
  };
}

export async function createQueue(client: SQSClient, name: string, attributes: Record<string, string> = {}): Promise<string> {
  const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
  if (!QueueUrl) throw new Error('no QueueUrl');
  return QueueUrl;
}

export async function receive(
  client: SQSClient,
  QueueUrl: string,
  extra: { MaxNumberOfMessages?: number; VisibilityTimeout?: number } = {},
): Promise<Message[]> {
  const out = await client.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10, MessageSystemAttributeNames: ['All'], ...extra }));
  return out.Messages ?? [];
}

export const bodies = (messages: Message[]): (string | undefined)[] => messages.map((m) => m.Body);

export async function counts(client: SQSClient, QueueUrl: string): Promise<{ visible: number; inFlight: number }> {
  const { Attributes = {} } = await client.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['All'] }));
  return { visible: Number(Attributes.ApproximateNumberOfMessages), inFlight: Number(Attributes.ApproximateNumberOfMessagesNotVisible) };
}

export async function errorOf(promise: Promise<unknown>): Promise<SdkError> {
  try {
    await promise;
  } catch (error) {
    return error as SdkError;
  }
  throw new Error('expected the call to fail');
}

/** A raw AWS JSON 1.0 request, for what no SDK sends (wrong types, wrong content types). */
export async function post(
  endpoint: string,
  operation: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; text: string }> {
  const response = await fetch(endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': `AmazonSQS.${operation}`, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}
