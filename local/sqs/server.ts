import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Clock } from './clock.js';
import { SqsError, missingParameter } from './errors.js';
import { SqsFaults } from './faults.js';
import type { BatchOperation } from './faults.js';
import { SqsModel } from './model.js';
import type { BatchEntryFailure, BatchResult, MessageAttributeValue, ReceivedMessage, SendMessageInput } from './types.js';

/** Options of {@link startSqs}. */
export interface StartSqsOptions {
  /** The TCP port to listen on. @default 0 (a free port chosen by the operating system) */
  port?: number | undefined;
  /** The address to listen on. @default '127.0.0.1' */
  host?: string | undefined;
  /** Used when no `model` is given. @default the system clock */
  clock?: Clock | undefined;
  /** Serve an existing model (its queues keep their messages; their URLs now point here). */
  model?: SqsModel | undefined;
  /** The region of the model's queue URLs and ARNs. @default 'us-east-1' (ignored when `model` is given: the model's region wins) */
  region?: string | undefined;
  /** Keep every request's operation and JSON input in `requests`. @default false */
  recordRequests?: boolean | undefined;
}

/** One request the front received, kept when `recordRequests` is on. */
export interface RecordedRequest {
  /** The operation, from `x-amz-target` (`SendMessageBatch`, `ReceiveMessage`, ...). */
  operation: string;
  /** The request's JSON body. */
  input: Record<string, unknown>;
}

/** A running SQS front, made by {@link startSqs}. */
export interface SqsServer {
  /** `http://host:port`; give it to `new SQSClient({ endpoint })`. */
  endpoint: string;
  /** The region of its queues: give it to the client too. */
  region: string;
  /** The queue model it serves; tests can inspect or drive it directly. */
  model: SqsModel;
  /** Fault injection for requests and batch entries. */
  faults: SqsFaults;
  /** Requests received, when `recordRequests` is on. */
  requests: RecordedRequest[];
  /** Stops the server: ends long polls and closes every connection. The model and its messages stay. */
  close(): Promise<void>;
}

type Json = Record<string, unknown>;
type Handler = (input: Json, signal: AbortSignal) => Promise<Json> | Json;

const MAX_REQUEST_BYTES = 8 * 1024 * 1024;

/**
 * Starts the AWS JSON 1.0 front for `@aws-sdk/client-sqs`: `POST /` with `x-amz-target: AmazonSQS.<Op>`.
 *
 * @example
 * const sqs = await startSqs();
 * const client = new SQSClient({ endpoint: sqs.endpoint, region: sqs.region,
 *   credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
 * const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: 'orders' }));
 * await sqs.close();
 */
export async function startSqs(options: StartSqsOptions = {}): Promise<SqsServer> {
  const model =
    options.model ??
    new SqsModel({ ...(options.clock ? { clock: options.clock } : {}), region: options.region ?? 'us-east-1' });
  const faults = new SqsFaults();
  const requests: RecordedRequest[] = [];
  const shutdown = new AbortController();
  const handlers = createHandlers(model, faults);

  const server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendError(res, new SqsError('InternalError', String(error)));
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const target = String(req.headers['x-amz-target'] ?? '');
    const operation = target.startsWith('AmazonSQS.') ? target.slice('AmazonSQS.'.length) : '';
    let raw: string;
    try {
      raw = await readBody(req);
    } catch (error) {
      return sendError(res, new SqsError('SerializationException', String(error)));
    }
    if (req.method !== 'POST' || !operation) {
      return sendError(res, new SqsError('UnknownOperationException', `Expected POST / with x-amz-target: AmazonSQS.<Operation>; got ${req.method} ${req.url} target ${JSON.stringify(target)}.`));
    }
    const handler = handlers[operation];
    if (!handler) {
      return sendError(res, new SqsError('UnknownOperationException', `Operation ${operation} is not supported by this local SQS.`));
    }
    let input: Json;
    try {
      const parsed: unknown = raw === '' ? {} : JSON.parse(raw);
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('the body must be a JSON object');
      input = parsed as Json;
    } catch (error) {
      return sendError(res, new SqsError('SerializationException', `Request body is not valid JSON: ${String(error)}`));
    }
    if (options.recordRequests) requests.push({ operation, input });

    const fault = faults.takeRequestFault(operation);
    if (fault?.kind === 'error') return sendError(res, fault.error);

    const abort = new AbortController();
    const onShutdown = (): void => abort.abort();
    shutdown.signal.addEventListener('abort', onShutdown, { once: true });
    res.on('close', () => {
      if (!res.writableEnded) abort.abort();
    });
    try {
      const output = await handler(input, abort.signal);
      if (fault?.kind === 'drop') {
        req.socket.destroy();
        return;
      }
      sendJson(res, 200, output);
    } catch (error) {
      if (fault?.kind === 'drop') {
        req.socket.destroy();
        return;
      }
      sendError(res, error instanceof SqsError ? error : new SqsError('InternalError', String(error)));
    } finally {
      shutdown.signal.removeEventListener('abort', onShutdown);
    }
  }

  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const endpoint = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  model.setEndpoint(endpoint);

  return {
    endpoint,
    region: model.region,
    model,
    faults,
    requests,
    close: async () => {
      shutdown.abort();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

function createHandlers(model: SqsModel, faults: SqsFaults): Record<string, Handler> {
  return {
    CreateQueue: (input) => {
      const name = requireString(input, 'QueueName');
      return { QueueUrl: model.createQueue(name, stringMap(input.Attributes, 'Attributes')).url };
    },
    GetQueueUrl: (input) => ({ QueueUrl: model.getQueue(requireString(input, 'QueueName')).url }),
    ListQueues: (input) => {
      const prefix = typeof input.QueueNamePrefix === 'string' ? input.QueueNamePrefix : '';
      const max = typeof input.MaxResults === 'number' ? input.MaxResults : 1000;
      return { QueueUrls: model.listQueues(prefix).slice(0, max).map((q) => q.url) };
    },
    DeleteQueue: (input) => {
      model.deleteQueue(requireString(input, 'QueueUrl'));
      return {};
    },
    GetQueueAttributes: (input) => {
      const names = Array.isArray(input.AttributeNames) ? input.AttributeNames.map(String) : ['All'];
      return { Attributes: model.getQueueAttributes(requireString(input, 'QueueUrl'), names.length ? names : ['All']) };
    },
    SetQueueAttributes: (input) => {
      model.setQueueAttributes(requireString(input, 'QueueUrl'), stringMap(input.Attributes, 'Attributes'));
      return {};
    },
    PurgeQueue: (input) => {
      model.purgeQueue(requireString(input, 'QueueUrl'));
      return {};
    },
    SendMessage: async (input) => {
      const result = await model.sendMessage({ queue: requireString(input, 'QueueUrl'), ...sendFields(input) });
      return compact({
        MessageId: result.messageId,
        MD5OfMessageBody: result.md5OfMessageBody,
        MD5OfMessageAttributes: result.md5OfMessageAttributes,
        MD5OfMessageSystemAttributes: result.md5OfMessageSystemAttributes,
        SequenceNumber: result.sequenceNumber,
      });
    },
    SendMessageBatch: async (input, _signal) => {
      const queue = requireString(input, 'QueueUrl');
      const entries = entryList(input).map((e) => ({ id: String(e.Id), ...sendFields(e) }));
      const result = await withEntryFaults(faults, 'SendMessageBatch', entries, (kept) => model.sendMessageBatch(queue, kept));
      return {
        Successful: result.successful.map((s) =>
          compact({
            Id: s.id,
            MessageId: s.messageId,
            MD5OfMessageBody: s.md5OfMessageBody,
            MD5OfMessageAttributes: s.md5OfMessageAttributes,
            MD5OfMessageSystemAttributes: s.md5OfMessageSystemAttributes,
            SequenceNumber: s.sequenceNumber,
          }),
        ),
        Failed: result.failed.map(failedEntry),
      };
    },
    ReceiveMessage: async (input, signal) => {
      const names = [
        ...(Array.isArray(input.AttributeNames) ? input.AttributeNames.map(String) : []),
        ...(Array.isArray(input.MessageSystemAttributeNames) ? input.MessageSystemAttributeNames.map(String) : []),
      ];
      const messages = await model.receiveMessages({
        queue: requireString(input, 'QueueUrl'),
        ...optionalNumber(input, 'MaxNumberOfMessages', 'maxNumberOfMessages'),
        ...optionalNumber(input, 'VisibilityTimeout', 'visibilityTimeout'),
        ...optionalNumber(input, 'WaitTimeSeconds', 'waitTimeSeconds'),
        attributeNames: names,
        messageAttributeNames: Array.isArray(input.MessageAttributeNames) ? input.MessageAttributeNames.map(String) : [],
        ...(typeof input.ReceiveRequestAttemptId === 'string' ? { receiveRequestAttemptId: input.ReceiveRequestAttemptId } : {}),
        signal,
      });
      return messages.length === 0 ? {} : { Messages: messages.map(wireMessage) };
    },
    DeleteMessage: (input) => {
      model.deleteMessage(requireString(input, 'QueueUrl'), requireString(input, 'ReceiptHandle'));
      return {};
    },
    DeleteMessageBatch: async (input) => {
      const queue = requireString(input, 'QueueUrl');
      const entries = entryList(input).map((e) => ({ id: String(e.Id), receiptHandle: String(e.ReceiptHandle ?? '') }));
      const result = await withEntryFaults(faults, 'DeleteMessageBatch', entries, (kept) => model.deleteMessageBatch(queue, kept));
      return { Successful: result.successful.map((s) => ({ Id: s.id })), Failed: result.failed.map(failedEntry) };
    },
    ChangeMessageVisibility: (input) => {
      const timeout = input.VisibilityTimeout;
      if (typeof timeout !== 'number') throw missingParameter('VisibilityTimeout');
      model.changeMessageVisibility(requireString(input, 'QueueUrl'), requireString(input, 'ReceiptHandle'), timeout);
      return {};
    },
    ChangeMessageVisibilityBatch: async (input) => {
      const queue = requireString(input, 'QueueUrl');
      const entries = entryList(input).map((e) => ({
        id: String(e.Id),
        receiptHandle: String(e.ReceiptHandle ?? ''),
        visibilityTimeout: typeof e.VisibilityTimeout === 'number' ? e.VisibilityTimeout : 0,
      }));
      const result = await withEntryFaults(faults, 'ChangeMessageVisibilityBatch', entries, (kept) =>
        model.changeMessageVisibilityBatch(queue, kept),
      );
      return { Successful: result.successful.map((s) => ({ Id: s.id })), Failed: result.failed.map(failedEntry) };
    },
  };
}

/** Applies an injected entry fault around a batch call: rejected entries never reach the model. */
async function withEntryFaults<E extends { id: string }, R>(
  faults: SqsFaults,
  operation: BatchOperation,
  entries: E[],
  run: (entries: E[]) => Promise<BatchResult<R>> | BatchResult<R>,
): Promise<BatchResult<R>> {
  const fault = entries.length > 0 && entries.length <= 10 ? faults.takeEntryFault(operation) : undefined;
  if (!fault) return run(entries);
  const hit = new Set(entries.filter((e, i) => fault.select(e.id, i)).map((e) => e.id));
  const failure = (id: string): BatchEntryFailure => ({ id, code: fault.code, message: fault.message, senderFault: fault.senderFault });
  if (fault.mode === 'applyThenFail') {
    const result = await run(entries);
    return {
      successful: result.successful.filter((s) => !hit.has(s.id)),
      failed: [...result.failed, ...result.successful.filter((s) => hit.has(s.id)).map((s) => failure(s.id))],
    };
  }
  const kept = entries.filter((e) => !hit.has(e.id));
  const result: BatchResult<R> = kept.length > 0 ? await run(kept) : { successful: [], failed: [] };
  return { successful: result.successful, failed: [...result.failed, ...[...hit].map(failure)] };
}

function sendFields(input: Json): Omit<SendMessageInput, 'queue'> {
  return {
    body: typeof input.MessageBody === 'string' ? input.MessageBody : '',
    ...optionalNumber(input, 'DelaySeconds', 'delaySeconds'),
    ...(input.MessageAttributes !== undefined ? { messageAttributes: attributesFromWire(input.MessageAttributes) } : {}),
    ...(input.MessageSystemAttributes !== undefined ? { messageSystemAttributes: attributesFromWire(input.MessageSystemAttributes) } : {}),
    ...(typeof input.MessageGroupId === 'string' ? { messageGroupId: input.MessageGroupId } : {}),
    ...(typeof input.MessageDeduplicationId === 'string' ? { messageDeduplicationId: input.MessageDeduplicationId } : {}),
  };
}

function attributesFromWire(value: unknown): Record<string, MessageAttributeValue> {
  const result: Record<string, MessageAttributeValue> = {};
  if (typeof value !== 'object' || value === null) return result;
  for (const [name, raw] of Object.entries(value as Record<string, unknown>)) {
    const a = (raw ?? {}) as Json;
    result[name] = {
      dataType: typeof a.DataType === 'string' ? a.DataType : '',
      ...(typeof a.StringValue === 'string' ? { stringValue: a.StringValue } : {}),
      ...(typeof a.BinaryValue === 'string' ? { binaryValue: new Uint8Array(Buffer.from(a.BinaryValue, 'base64')) } : {}),
    };
  }
  return result;
}

function wireMessage(message: ReceivedMessage): Json {
  const attributes: Record<string, Json> = {};
  for (const [name, a] of Object.entries(message.messageAttributes)) {
    attributes[name] = compact({
      DataType: a.dataType,
      StringValue: a.stringValue,
      BinaryValue: a.binaryValue ? Buffer.from(a.binaryValue).toString('base64') : undefined,
    });
  }
  return compact({
    MessageId: message.messageId,
    ReceiptHandle: message.receiptHandle,
    MD5OfBody: message.md5OfBody,
    Body: message.body,
    Attributes: Object.keys(message.attributes).length ? message.attributes : undefined,
    MD5OfMessageAttributes: message.md5OfMessageAttributes,
    MessageAttributes: Object.keys(attributes).length ? attributes : undefined,
  });
}

function failedEntry(failure: BatchEntryFailure): Json {
  return { Id: failure.id, SenderFault: failure.senderFault, Code: failure.code, Message: failure.message };
}

function entryList(input: Json): Json[] {
  const entries = input.Entries;
  if (entries === undefined) throw missingParameter('Entries');
  if (!Array.isArray(entries)) throw new SqsError('SerializationException', 'Entries must be a list.');
  return entries.map((e) => (typeof e === 'object' && e !== null ? (e as Json) : {}));
}

function requireString(input: Json, name: string): string {
  const value = input[name];
  if (typeof value !== 'string' || value === '') throw missingParameter(name);
  return value;
}

function stringMap(value: unknown, name: string): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) throw new SqsError('SerializationException', `${name} must be a map of strings.`);
  return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, String(v)]));
}

function optionalNumber<K extends string>(input: Json, wire: string, key: K): { [P in K]?: number } {
  const value = input[wire];
  return (typeof value === 'number' ? { [key]: value } : {}) as { [P in K]?: number };
}

function compact(object: Record<string, unknown>): Json {
  return Object.fromEntries(Object.entries(object).filter(([, v]) => v !== undefined));
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_REQUEST_BYTES) {
        reject(new Error(`request body larger than ${MAX_REQUEST_BYTES} bytes`));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function sendJson(res: ServerResponse, status: number, body: Json, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/x-amz-json-1.0',
    'content-length': Buffer.byteLength(text),
    'x-amzn-requestid': randomUUID(),
    ...headers,
  });
  res.end(text);
}

function sendError(res: ServerResponse, error: SqsError): void {
  const namespace = error.code === 'UnknownOperationException' || error.code === 'SerializationException'
    ? 'com.amazon.coral.service'
    : 'com.amazonaws.sqs';
  sendJson(
    res,
    error.httpStatus,
    { __type: `${namespace}#${error.code}`, message: error.message },
    { 'x-amzn-query-error': `${error.queryCode};${error.senderFault ? 'Sender' : 'Receiver'}` },
  );
}
