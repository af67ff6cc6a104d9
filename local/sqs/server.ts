import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Clock } from './clock.js';
import { SqsError } from './errors.js';
import { SqsFaults, pendingFaults } from './faults.js';
import { SqsModel } from './model.js';
import { createHandlers } from './operations.js';
import { readBoundedBody, refuseBody } from '../bounded-body.js';
import { MAX_REQUEST_BYTES, isAwsJson10 } from './request-body.js';
import type { Json } from './wire-input.js';

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
  /**
   * Receives one line per refused request that the local runtime can explain further (why, what to
   * change). Responses carry AWS's exact texts only; the explanations go here.
   * @default no logging
   */
  onLog?: ((line: string) => void) | undefined;
}

/** A running SQS front: `local.sqs` of `startLocal()`. */
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
  requests: {
    /** The operation, from `x-amz-target` (`SendMessageBatch`, `ReceiveMessage`, ...). */
    operation: string;
    /** The request's JSON body. */
    input: Record<string, unknown>;
  }[];
  /** Stops the server: ends long polls and closes every connection. The model and its messages stay. */
  close(): Promise<void>;
}

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
  const model = options.model ?? new SqsModel({ ...(options.clock ? { clock: options.clock } : {}), region: options.region ?? 'us-east-1' });
  const faults = new SqsFaults();
  const requests: SqsServer['requests'] = [];
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
    // SQS tells its two protocols apart by Content-Type. A request that is not AWS JSON 1.0 is a query
    // request to SQS, and one with no Action is an unknown operation: 404 with an XML body (localstack's
    // TestSqsQueryApi::test_get_without_query_returns_unknown_operation, validated against AWS; the same
    // 29-byte body dynalite recorded from the coral front of DynamoDB, test/connection.js).
    if (req.method !== 'POST' || !isAwsJson10(req)) {
      req.resume();
      log(
        `${req.method ?? '?'} ${req.url ?? ''}: answered 404 UnknownOperationException (this endpoint speaks AWS JSON 1.0 only: POST with content-type application/x-amz-json-1.0 and x-amz-target AmazonSQS.<Operation>)`,
      );
      return sendText(res, 404, '<UnknownOperationException/>\n', { 'x-amzn-requestid': randomUUID() });
    }
    const body = await readBoundedBody(req, MAX_REQUEST_BYTES);
    if (body.kind === 'tooLarge') {
      log(`${operation || target}: answered 413, the request body is larger than ${MAX_REQUEST_BYTES} bytes`);
      return refuseBody(req, res, 413, {}, `HTTP content length exceeded ${MAX_REQUEST_BYTES} bytes.`);
    }
    const handler = handlers.get(operation);
    if (!handler) {
      log(`${target || '(no x-amz-target)'}: answered UnknownOperationException${operation ? ` (${operation} is not supported by this local SQS)` : ''}`);
      return sendCoralError(res, 'UnknownOperationException');
    }
    let input: Json;
    try {
      const parsed: unknown = body.text === '' ? {} : JSON.parse(body.text);
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('the body must be a JSON object');
      input = parsed as Json;
    } catch (error) {
      log(`${operation}: answered SerializationException (the body is not a JSON object: ${String(error)})`);
      return sendCoralError(res, 'SerializationException');
    }
    if (options.recordRequests) requests.push({ operation, input });

    const fault = pendingFaults(faults).take(operation);
    if (fault?.kind === 'error') return sendError(res, fault.error);

    const abort = new AbortController();
    const onShutdown = (): void => abort.abort();
    shutdown.signal.addEventListener('abort', onShutdown, { once: true });
    res.on('close', () => {
      if (!res.writableEnded) abort.abort();
    });
    try {
      const output = await handler(input, { signal: abort.signal, host: req.headers.host });
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
      const sqsError = error instanceof SqsError ? error : new SqsError('InternalError', String(error));
      if (sqsError.advice) log(`${operation}: ${sqsError.code}: ${sqsError.message} (${sqsError.advice})`);
      sendError(res, sqsError);
    } finally {
      shutdown.signal.removeEventListener('abort', onShutdown);
    }
  }

  function log(line: string): void {
    options.onLog?.(`[sqs] ${line}`);
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

function sendText(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/**
 * An SQS error as AWS sends it: `__type` with the error's shape, `message` with AWS's text, and the
 * query-compatible `x-amzn-query-error: <code>;Sender|Receiver` (format: the SQS developer guide,
 * https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-json-api-responses.html).
 */
function sendError(res: ServerResponse, error: SqsError): void {
  if (error.code === 'UnknownOperationException' || error.code === 'SerializationException') {
    sendCoralError(res, error.code, error.message);
    return;
  }
  sendJson(
    res,
    error.httpStatus,
    { __type: `com.amazonaws.sqs#${error.shapeName}`, message: error.message },
    { 'x-amzn-query-error': `${error.queryCode};${error.senderFault ? 'Sender' : 'Receiver'}` },
  );
}

/**
 * An error of the AWS JSON front itself, before SQS sees the request: `{"__type":"com.amazon.coral.service#..."}`,
 * with no message for a body that is not JSON or an unknown target (as dynalite recorded them from the
 * same front of DynamoDB, test/connection.js), and the deserializer's message for a member of the wrong type.
 */
function sendCoralError(res: ServerResponse, code: 'UnknownOperationException' | 'SerializationException', message?: string): void {
  sendJson(res, 400, { __type: `com.amazon.coral.service#${code}`, ...(message !== undefined ? { message } : {}) });
}
