import { request } from 'node:http';
import { ListQueuesCommand, ReceiveMessageCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { MAX_REQUEST_BYTES } from '../../../local/sqs/request-body.js';
import { sendOversized } from '../../support/oversized-request.js';
import { bodies, createQueue, errorOf, post, receive, useSqs } from './helpers.js';

const sqs = useSqs();

/** A real SDK client whose requests are altered on the way out: what a hand-built client might send. */
function alteredClient(endpoint: string, alter: (request: { headers: Record<string, string>; body: unknown }) => void): SQSClient {
  // md5: false, since an altered body no longer matches the MD5 the client computed before altering it.
  const client = new SQSClient({ endpoint, region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' }, maxAttempts: 1, md5: false });
  client.middlewareStack.add(
    (next) => async (args) => {
      const req = args.request as { headers: Record<string, string>; body: unknown };
      alter(req);
      if (typeof req.body === 'string') req.headers['content-length'] = String(Buffer.byteLength(req.body));
      return next(args);
    },
    { step: 'build', name: 'alterRequest' },
  );
  return client;
}

describe('content type', () => {
  // SQS serves its query protocol and AWS JSON 1.0 on one endpoint and tells them apart by Content-Type;
  // a request that is not JSON and names no Action is an unknown operation: HTTP 404, body
  // "<UnknownOperationException/>" (localstack TestSqsQueryApi::test_get_without_query_returns_unknown_operation,
  // validated against AWS; the 29-byte body as dynalite recorded it from the same AWS front, test/connection.js).
  it('answers a request that is not application/x-amz-json-1.0 with 404 UnknownOperationException, and accepts a charset parameter', async () => {
    const wrong = alteredClient(sqs.f.sqs.endpoint, (req) => {
      req.headers['content-type'] = 'application/json';
    });
    try {
      const error = await errorOf(wrong.send(new ListQueuesCommand({})));
      expect(error.$metadata?.httpStatusCode).toBe(404);
    } finally {
      wrong.destroy();
    }
    const raw = await post(sqs.f.sqs.endpoint, 'ListQueues', {}, { 'content-type': 'text/plain' });
    expect([raw.status, raw.text]).toEqual([404, '<UnknownOperationException/>\n']);
    // Parameters of the media type are ignored (smithy-lang/smithy, smithy-aws-protocol-tests/model/awsJson1_0/content-type.smithy).
    const charset = await post(sqs.f.sqs.endpoint, 'ListQueues', {}, { 'content-type': 'application/x-amz-json-1.0; charset=utf-8' });
    expect(charset.status).toBe(200);
  });

  it('answers a GET with 404 UnknownOperationException', async () => {
    const response = await fetch(sqs.f.sqs.endpoint);
    expect([response.status, await response.text()]).toEqual([404, '<UnknownOperationException/>\n']);
  });
});

describe('operation names', () => {
  // The JSON front answers a target it does not know as AWS's coral front does: 400 with only
  // {"__type":"com.amazon.coral.service#UnknownOperationException"} (dynalite test/connection.js recorded
  // the same front of DynamoDB). A name the handler table inherits from Object.prototype is not an operation.
  it.each(['Nope', 'constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf', '__defineGetter__'])(
    'answers AmazonSQS.%s with 400 UnknownOperationException and changes nothing',
    async (operation) => {
      const url = await createQueue(sqs.client, 'names');
      const raw = await post(sqs.f.sqs.endpoint, operation, { QueueUrl: url });
      expect([raw.status, JSON.parse(raw.text)]).toEqual([400, { __type: 'com.amazon.coral.service#UnknownOperationException' }]);
      expect(await receive(sqs.client, url)).toEqual([]);
    },
  );
});

describe('queue URLs', () => {
  // A URL names one account's queue at one endpoint; another account or another host names a queue
  // that is not here: QueueDoesNotExist (getmoto/moto#3657, checked against AWS with an arbitrary address;
  // text from https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-json-api-responses.html).
  it('answers a queue URL with another account id with QueueDoesNotExist', async () => {
    const url = await createQueue(sqs.client, 'orders');
    const other = url.replace('/000000000000/', '/111111111111/');
    const error = await errorOf(sqs.client.send(new SendMessageCommand({ QueueUrl: other, MessageBody: 'm' })));
    expect([error.name, error.Code, error.message]).toEqual([
      'QueueDoesNotExist',
      'AWS.SimpleQueueService.NonExistentQueue',
      'The specified queue does not exist.',
    ]);
    expect(await receive(sqs.client, url)).toEqual([]);
  });

  it('answers a queue URL with another host with QueueDoesNotExist, and accepts the host the client reached us by', async () => {
    const url = await createQueue(sqs.client, 'orders');
    const elsewhere = url.replace(/^http:\/\/[^/]+/, 'https://sqs.eu-west-1.amazonaws.com');
    const error = await errorOf(sqs.client.send(new SendMessageCommand({ QueueUrl: elsewhere, MessageBody: 'm' })));
    expect(error.name).toBe('QueueDoesNotExist');
    // The same front reached as localhost: its URLs name its queues.
    const viaLocalhost = sqs.f.sqs.endpoint.replace('127.0.0.1', 'localhost');
    const local = new SQSClient({ endpoint: viaLocalhost, region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
    try {
      await local.send(new SendMessageCommand({ QueueUrl: url.replace('127.0.0.1', 'localhost'), MessageBody: 'via localhost' }));
    } finally {
      local.destroy();
    }
    expect(bodies(await receive(sqs.client, url))).toEqual(['via localhost']);
  });
});

describe('member types', () => {
  // AWS reads members as its Java deserializer does: "5" is 5 for an integer, 0 is "0" for a string, and
  // "abc" for an integer fails with the deserializer's text. As Inqnuam/local-aws-sqs test/send-message.test.ts
  // expects from AWS ("STRING_VALUE can not be converted to an Integer"; "should send with castable type").
  it('reads DelaySeconds "5" as 5 seconds and MessageBody 0 as "0"', async () => {
    const url = await createQueue(sqs.client, 'typed');
    const client = alteredClient(sqs.f.sqs.endpoint, (req) => {
      const body = JSON.parse(String(req.body)) as Record<string, unknown>;
      if (body.MessageBody === 'delayed') body.DelaySeconds = '5';
      if (body.MessageBody === 'zero') body.MessageBody = 0;
      req.body = JSON.stringify(body);
    });
    try {
      await client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'delayed' }));
      expect(await receive(sqs.client, url)).toEqual([]);
      sqs.f.clock.advance(5000);
      expect(bodies(await receive(sqs.client, url))).toEqual(['delayed']);
      await client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'zero' }));
      expect(bodies(await receive(sqs.client, url))).toEqual(['0']);
    } finally {
      client.destroy();
    }
  });

  it("refuses a DelaySeconds that is not a number with the deserializer's SerializationException", async () => {
    const url = await createQueue(sqs.client, 'untyped');
    const raw = await post(sqs.f.sqs.endpoint, 'SendMessage', { QueueUrl: url, MessageBody: 'm', DelaySeconds: 'abc' });
    expect(raw.status).toBe(400);
    expect(JSON.parse(raw.text)).toEqual({
      __type: 'com.amazon.coral.service#SerializationException',
      message: 'STRING_VALUE can not be converted to an Integer',
    });
    expect(await receive(sqs.client, url)).toEqual([]);
  });
});

describe('error shapes', () => {
  // Recorded 14-11-2023 with the JSON protocol: InvalidParameterValue travels as the shape
  // InvalidParameterValueException and MissingParameter as MissingRequiredParameterException, with the
  // query code in x-amzn-query-error (localstack test_sqs.snapshot.json, QueryErrorCode of
  // test_send_receive_max_number_of_messages and test_posting_to_fifo_requires_deduplicationid_group_id).
  it("sends AWS's __type shapes, while the SDK still names the errors by their query code", async () => {
    const url = await createQueue(sqs.client, 'shapes');
    const invalid = await post(sqs.f.sqs.endpoint, 'ReceiveMessage', { QueueUrl: url, MaxNumberOfMessages: 11 });
    expect(JSON.parse(invalid.text).__type).toBe('com.amazonaws.sqs#InvalidParameterValueException');
    expect(invalid.headers.get('x-amzn-query-error')).toBe('InvalidParameterValue;Sender');
    const missing = await post(sqs.f.sqs.endpoint, 'SendMessage', { QueueUrl: url, MessageBody: '' });
    expect(JSON.parse(missing.text).__type).toBe('com.amazonaws.sqs#MissingRequiredParameterException');
    const error = await errorOf(sqs.client.send(new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 11 })));
    expect([error.name, error.Code]).toEqual(['InvalidParameterValue', 'InvalidParameterValue']);
  });
});

describe('request size', () => {
  // AWS answers an over-long request with HTTP 413 and the plain text "HTTP content length exceeded
  // <limit> bytes." (recorded by users: aws/aws-sdk-js#479, spring-attic/spring-cloud-aws#111).
  const tooLarge = `HTTP content length exceeded ${MAX_REQUEST_BYTES} bytes.`;

  it("answers a SendMessage far over the limit with 413 and AWS's text, through the SDK", async () => {
    const url = await createQueue(sqs.client, 'huge');
    const error = await errorOf(sqs.client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'x'.repeat(3 * 1024 * 1024) })));
    expect(error.$metadata?.httpStatusCode).toBe(413);
    const raw = await post(sqs.f.sqs.endpoint, 'SendMessage', { QueueUrl: url, MessageBody: 'x'.repeat(MAX_REQUEST_BYTES) });
    expect([raw.status, raw.text]).toEqual([413, tooLarge]);
  });

  it.each(['content-length', 'chunked'] as const)(
    'answers a client sending a 20 MB body (%s) with the 413 it can read, and no broken pipe',
    async (framing) => {
      const headers = { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'AmazonSQS.SendMessage' };
      for (let i = 0; i < 3; i++) {
        expect(await sendOversized(sqs.f.sqs.endpoint, headers, 20 * 1024 * 1024, framing)).toEqual({ status: 413, text: tooLarge, writeError: undefined });
      }
      const url = await createQueue(sqs.client, 'after-abuse');
      await sqs.client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'after' }));
      expect(bodies(await receive(sqs.client, url))).toEqual(['after']);
    },
  );

  /** Sends headers and `bytes` of body, never ending the request, and resolves with the answer. */
  function answerBeforeTheEnd(headers: Record<string, string>, bytes: number): Promise<{ status: number; text: string }> {
    const { hostname, port } = new URL(sqs.f.sqs.endpoint);
    return new Promise((resolve, reject) => {
      const req = request({ host: hostname, port, method: 'POST', path: '/', headers }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, text });
          req.destroy();
        });
      });
      req.on('error', reject);
      req.flushHeaders();
      const chunk = Buffer.alloc(64 * 1024, 'x');
      for (let sent = 0; sent < bytes; sent += chunk.length) req.write(chunk);
    });
  }

  it('refuses a body declared too long before reading it', async () => {
    const headers = { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'AmazonSQS.SendMessage', 'content-length': String(100 * 1024 * 1024) };
    expect(await answerBeforeTheEnd(headers, 0)).toEqual({ status: 413, text: tooLarge });
  });

  it('refuses a streamed body as soon as it passes the limit, without waiting for its end', async () => {
    const headers = { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'AmazonSQS.SendMessage', 'transfer-encoding': 'chunked' };
    expect(await answerBeforeTheEnd(headers, MAX_REQUEST_BYTES + 128 * 1024)).toEqual({ status: 413, text: tooLarge });
  });
});
