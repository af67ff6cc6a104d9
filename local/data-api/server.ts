import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { databaseName, startPostgres } from '../postgres.js';
import { Databases } from './databases.js';
import { badRequest, DataApiErrorResponse, GatewayError } from './errors.js';
import { Faults } from './faults.js';
import type { FaultCall } from './faults.js';
import { Gate } from './gate.js';
import { executeSql, OPERATIONS, type OperationContext } from './operations.js';
import { refuseBody } from '../bounded-body.js';
import { readBody, RequestTooLarge } from './request-body.js';
import { Secrets } from './secrets.js';
import { Stats, type CountedOperation } from './stats.js';
import { Transactions } from './transactions.js';
import { loadPg } from '../peer-loaders.js';

/** Options of the local Data API server: `startLocal({ dataApi })` takes them (all but `databaseUrl`, its own PostgreSQL). */
export interface StartDataApiOptions {
  /**
   * The PostgreSQL server and default database to serve.
   * @default embedded PostgreSQL (or DATABASE_URL), stopped by `close()`
   */
  readonly databaseUrl?: string | undefined;
  /** The TCP port to listen on. @default - a free port chosen by the operating system */
  readonly port?: number | undefined;
  /** The address to listen on (`'0.0.0.0'` to accept calls from containers or other hosts). @default '127.0.0.1' */
  readonly host?: string | undefined;
  /** The only cluster ARN this server accepts. @default 'arn:aws:rds:us-east-1:123456789012:cluster:sqs-inbox-local' */
  readonly resourceArn?: string | undefined;
  /**
   * The default secret ARN: calls naming it connect with the user and password of the server URL.
   * @default 'arn:aws:secretsmanager:us-east-1:123456789012:secret:sqs-inbox-local'
   */
  readonly secretArn?: string | undefined;
  /**
   * More secrets, each standing for a PostgreSQL user, as a Secrets Manager database secret does on AWS:
   * a call naming one of these ARNs runs as that user (its grants apply), on connections of its own. A
   * transaction runs as the user of the secret that began it, and a later call on it that names another
   * secret is refused with BadRequestException. An ARN that is neither listed nor the default `secretArn`
   * is refused with SecretsErrorException. The users must exist on the server (create them yourself).
   * @example
   * const local = await startLocal({ dataApi: {
   *   secrets: { 'arn:aws:secretsmanager:us-east-1:123456789012:secret:app-reader': { username: 'app_reader', password: 'reader' } },
   * } });
   * @default {} (only the default secretArn)
   */
  readonly secrets?: { readonly [secretArn: string]: { readonly username: string; readonly password: string } } | undefined;
  /** A transaction no call uses for this long is rolled back. @default 180000 (3 minutes, as on AWS) */
  readonly transactionIdleTimeoutMs?: number | undefined;
  /** A transaction older than this is rolled back. @default 86400000 (24 hours, as on AWS) */
  readonly transactionMaxLifetimeMs?: number | undefined;
  /** A statement running longer fails with StatementTimeoutException. @default 45000 (as on AWS) */
  readonly statementTimeoutMs?: number | undefined;
  /** Larger responses fail with BadRequestException "Database response exceeded size limit". @default 1048576 (1 MiB) */
  readonly maxResponseBytes?: number | undefined;
  /**
   * Connections the server opens to each database, per user (per secret), shared by autocommit calls and
   * transactions. A call that finds them all in use waits up to `connectionWaitTimeoutMs`.
   * @default 64
   */
  readonly maxConnectionsPerDatabase?: number | undefined;
  /**
   * How long a call waits for a connection (all `maxConnectionsPerDatabase` in use) or a BeginTransaction
   * for a place (`maxOpenTransactions` open) before it fails with StatementTimeoutException "Connection is
   * not available, request timed out", as the service answers when its connections are exhausted. Nothing
   * ran, and the SDK does not retry it.
   * @default 30000
   */
  readonly connectionWaitTimeoutMs?: number | undefined;
  /**
   * How long a connection may sit idle in its pool before it is closed. A pool left with no connection is
   * let go (a database the process dropped keeps no pool), and made again on its database's next call.
   * @default 5000
   */
  readonly connectionIdleTimeoutMs?: number | undefined;
  /**
   * Transactions open at once, over the whole server. BeginTransaction beyond it waits (first come, first
   * served) up to `connectionWaitTimeoutMs` for one to end. Below `maxConnectionsPerDatabase`, transactions
   * that are never committed cannot take every connection from autocommit calls. Abandoned transactions
   * still end after `transactionIdleTimeoutMs`.
   * @default 48
   */
  readonly maxOpenTransactions?: number | undefined;
  /**
   * Calls the server runs at once; the rest wait in arrival order (no time limit; a call whose client goes
   * away leaves the queue). It models a database that is the bottleneck, as Aurora is at scale: more
   * concurrency then adds waiting, not throughput. Every operation counts, commits included, and a call
   * keeps its place while it waits for a row lock, so with fewer places than transactions contending for
   * the same rows, those transactions wait for one another until the statement timeout frees a place.
   * @example
   * const local = await startLocal({ dataApi: { maxConcurrentCalls: 4 } });
   * @default Infinity (no limit)
   */
  readonly maxConcurrentCalls?: number | undefined;
}

/** A running local Data API. */
export interface DataApiServer {
  /** Give this to `new RDSDataClient({ endpoint })`. */
  readonly endpoint: string;
  /** The cluster ARN calls must name (`resourceArn` of every Data API call). */
  readonly resourceArn: string;
  /** The default secret ARN (`secretArn` of a Data API call that runs as the server URL's user). */
  readonly secretArn: string;
  /** The default database (the one a call without `database` uses). */
  readonly database: string;
  /** Fault injection: latency, auto-pause, dropped responses, 5xx, slow statements. */
  readonly faults: Faults;
  /** Calls received per operation. */
  readonly stats: Stats;
  /** The connection pools open now: one per database and user with a connection or a caller waiting for one. */
  readonly openPools: number;
  /**
   * Lets calls naming `secretArn` connect as another database user from now on, as `secrets` does at start:
   * a scenario runs the handler under test as its consumer's role this way. Returns the call that removes it.
   */
  addSecret(secretArn: string, credentials: { readonly username: string; readonly password: string }): () => void;
  /** Rolls back open transactions, ends every pool and stops the server (and PostgreSQL, if it started it). */
  close(): Promise<void>;
}

/**
 * The REST path of each operation (§1.2); the last path segment decides, so an endpoint may have a path prefix.
 * A Map, not an object: the segment is the client's, and `/constructor` must not find Object.prototype's.
 */
const ROUTES: ReadonlyMap<string, CountedOperation> = new Map([
  ['Execute', 'ExecuteStatement'],
  ['BatchExecute', 'BatchExecuteStatement'],
  ['BeginTransaction', 'BeginTransaction'],
  ['CommitTransaction', 'CommitTransaction'],
  ['RollbackTransaction', 'RollbackTransaction'],
  ['ExecuteSql', 'ExecuteSql'],
]);

/**
 * Starts an HTTP server that speaks the RDS Data API (restJson1) over a real PostgreSQL, so that
 * `new RDSDataClient({ endpoint })` works unchanged. It behaves as the Data API of Aurora Serverless v2
 * and provisioned clusters does: its error types and messages, type hints and result shapes, one
 * connection per transaction, the 3-minute transaction idle expiry, the 45-second statement timeout, the
 * 1 MiB response and 4 MiB request limits. Every call starts from a clean PostgreSQL session and leaves
 * nothing open behind it; waits for a connection are bounded; secrets can stand for other database users.
 *
 * @example
 * const server = await startDataApi({ databaseUrl: 'postgres://postgres:postgres@127.0.0.1:5432/app' });
 * const client = new RDSDataClient({ endpoint: server.endpoint, region: 'us-east-1',
 *   credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
 * await client.send(new ExecuteStatementCommand({ resourceArn: server.resourceArn, secretArn: server.secretArn, sql: 'SELECT 1' }));
 * await server.close();
 */
export async function startDataApi(options: StartDataApiOptions = {}): Promise<DataApiServer> {
  const resourceArn = options.resourceArn ?? 'arn:aws:rds:us-east-1:123456789012:cluster:sqs-inbox-local';
  const secretArn = options.secretArn ?? 'arn:aws:secretsmanager:us-east-1:123456789012:secret:sqs-inbox-local';
  const host = options.host ?? '127.0.0.1';
  for (const [name, value] of Object.entries({
    port: options.port,
    transactionIdleTimeoutMs: options.transactionIdleTimeoutMs,
    transactionMaxLifetimeMs: options.transactionMaxLifetimeMs,
    statementTimeoutMs: options.statementTimeoutMs,
    maxResponseBytes: options.maxResponseBytes,
  })) {
    if (value !== undefined && !(Number.isInteger(value) && value >= 0)) {
      throw new RangeError(`the local Data API: ${name} must be a whole number >= 0, got ${value}.`);
    }
  }
  for (const [name, value] of Object.entries({
    maxConnectionsPerDatabase: options.maxConnectionsPerDatabase,
    connectionWaitTimeoutMs: options.connectionWaitTimeoutMs,
    connectionIdleTimeoutMs: options.connectionIdleTimeoutMs,
    maxOpenTransactions: options.maxOpenTransactions,
  })) {
    if (value !== undefined && !(Number.isInteger(value) && value >= 1)) {
      throw new RangeError(`the local Data API: ${name} must be a whole number >= 1, got ${value}.`);
    }
  }
  const maxConcurrentCalls = options.maxConcurrentCalls ?? Infinity;
  if (maxConcurrentCalls !== Infinity && !(Number.isInteger(maxConcurrentCalls) && maxConcurrentCalls >= 1)) {
    throw new RangeError(`the local Data API: maxConcurrentCalls must be a whole number >= 1 (or Infinity for no limit), got ${maxConcurrentCalls}.`);
  }
  const secrets = new Secrets(secretArn, options.secrets);
  const connectionWaitTimeoutMs = options.connectionWaitTimeoutMs ?? 30_000;
  const postgres = options.databaseUrl ? undefined : await startPostgres();
  const databaseUrl = options.databaseUrl ?? (postgres as { url: string }).url;
  const database = databaseName(databaseUrl);
  const databases = new Databases(databaseUrl, await loadPg(), {
    maxConnections: options.maxConnectionsPerDatabase ?? 64,
    connectionWaitTimeoutMs,
    idleTimeoutMs: options.connectionIdleTimeoutMs ?? 5_000,
  });
  const transactions = new Transactions({
    idleTimeoutMs: options.transactionIdleTimeoutMs ?? 180_000,
    maxLifetimeMs: options.transactionMaxLifetimeMs ?? 86_400_000,
    maxOpen: options.maxOpenTransactions ?? 48,
    waitTimeoutMs: connectionWaitTimeoutMs,
    cancel: (name, pid) => databases.cancel(name, pid),
  });
  const context: OperationContext = {
    resourceArn,
    secrets,
    defaultDatabase: database,
    databases,
    transactions,
    statementTimeoutMs: options.statementTimeoutMs ?? 45_000,
    maxResponseBytes: options.maxResponseBytes ?? 1024 * 1024,
  };
  const faults = new Faults();
  const stats = new Stats();
  const calls = new Gate(maxConcurrentCalls);

  const server = createServer((request, response) => {
    void handle(request, response, { context, faults, stats, calls });
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    await databases.end();
    await postgres?.close();
    const code = (error as NodeJS.ErrnoException).code;
    throw new Error(
      code === 'EADDRINUSE'
        ? `the local Data API: port ${options.port} on ${host} is in use. Choose another port, or omit it to get a free one.`
        : `the local Data API: cannot listen on ${host}:${options.port ?? 0} (${(error as Error).message}).`,
    );
  }
  const { port } = server.address() as AddressInfo;
  const reachableHost = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '[::1]' : host.includes(':') ? `[${host}]` : host;
  let closing: Promise<void> | undefined;
  return {
    endpoint: `http://${reachableHost}:${port}`,
    resourceArn,
    secretArn,
    database,
    faults,
    stats,
    get openPools() {
      return databases.openPools;
    },
    addSecret(arn, credentials) {
      secrets.add(arn, credentials);
      return () => secrets.remove(arn);
    },
    close() {
      closing ??= (async () => {
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeAllConnections();
        await transactions.rollbackAll();
        await stopped;
        await databases.end();
        await postgres?.close();
      })();
      return closing;
    },
  };
}

/** What every request is served with. */
interface Served {
  readonly context: OperationContext;
  readonly faults: Faults;
  readonly stats: Stats;
  /** Admits `maxConcurrentCalls` calls at once. */
  readonly calls: Gate;
}

/** The reason a call's signal aborts: its client closed the connection before the answer. */
class CallerGone extends Error {
  override readonly name = 'CallerGone';
}

async function handle(request: IncomingMessage, response: ServerResponse, { context, faults, stats, calls }: Served): Promise<void> {
  const requestId = randomUUID();
  let drop = false;
  const caller = new AbortController();
  response.once('close', () => {
    if (!response.writableFinished) caller.abort(new CallerGone('The client closed the connection before the answer.'));
  });
  try {
    const path = new URL(request.url ?? '/', 'http://localhost').pathname;
    const operation = ROUTES.get(path.slice(path.lastIndexOf('/') + 1));
    if (!operation || request.method !== 'POST') {
      throw new DataApiErrorResponse(
        'UnknownOperationException',
        `No Data API operation at ${request.method} ${path}. Operations are POST /Execute, /BatchExecute, /BeginTransaction, /CommitTransaction and /RollbackTransaction.`,
      );
    }
    stats.count(operation);
    const body = await readBody(request);
    if (operation === 'ExecuteSql') {
      await executeSql();
      return;
    }
    const delay = faults.delayFor(operation);
    if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
    const call: FaultCall = {
      operation,
      sql: typeof body.sql === 'string' ? body.sql : undefined,
      parameters: body.parameters ?? body.parameterSets,
      transactionId: typeof body.transactionId === 'string' ? body.transactionId : undefined,
    };
    faults.seen(call);
    const failure = faults.failureFor(call);
    if (failure) throw failure;
    const sql = typeof body.sql === 'string' ? body.sql : undefined;
    drop = faults.dropsResponse(call);
    const slowdownMs = faults.slowdownFor(operation, sql);
    // A Begin takes its transaction place before its call place (see OperationContext.reservedPlace).
    const reservedPlace = operation === 'BeginTransaction' ? await context.transactions.reserve(caller.signal) : undefined;
    let admitted: () => void;
    try {
      admitted = await calls.acquire({ signal: caller.signal });
    } catch (error) {
      reservedPlace?.();
      throw error;
    }
    let text: string;
    try {
      text = await OPERATIONS[operation]({ ...context, reservedPlace, slowdownMs }, body, caller.signal);
    } finally {
      admitted();
    }
    if (drop) return;
    send(response, 200, { 'content-type': 'application/json', 'x-amzn-RequestId': requestId }, text);
  } catch (caught) {
    if (drop || caller.signal.aborted) return;
    if (caught instanceof GatewayError) {
      // Not the service's answer: no x-amzn-ErrorType, no request id.
      send(response, caught.status, { 'content-type': 'application/json' }, JSON.stringify(caught.body()));
      return;
    }
    const error =
      caught instanceof DataApiErrorResponse
        ? caught
        : // Never a 5xx for something unexpected: the SDK would retry, and the call may have written.
          badRequest(`Local Data API internal error: ${caught instanceof Error ? caught.message : String(caught)}`);
    const headers = { 'content-type': 'application/json', 'x-amzn-RequestId': requestId, 'x-amzn-ErrorType': error.header };
    const body = JSON.stringify(error.body());
    if (error instanceof RequestTooLarge) refuseBody(request, response, error.status, headers, body);
    else send(response, error.status, headers, body);
  } finally {
    // The ambiguous outcome: the call ran, and its answer never arrives.
    if (drop) request.socket.destroy();
  }
}

function send(response: ServerResponse, status: number, headers: Record<string, string>, body: string): void {
  if (response.headersSent || response.destroyed) return;
  response.writeHead(status, { ...headers, 'content-length': String(Buffer.byteLength(body)) });
  response.end(body);
}
