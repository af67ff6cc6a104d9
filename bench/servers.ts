import { fork } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { CountedOperation } from '../local/data-api/stats.js';
import type { Operation } from '../local/data-api/stats.js';
import type { DynamoDbOperation } from './dynamodb.js';

/** What a Data API server of the bench is started with. */
export interface BenchServerOptions {
  /** Calls the server runs at once, the rest queued (the database as the bottleneck). @default no limit */
  readonly maxConcurrentCalls?: number | undefined;
  /** @default the server's (3 minutes, as on AWS) */
  readonly transactionIdleTimeoutMs?: number | undefined;
  /** @default the server's (48) */
  readonly maxOpenTransactions?: number | undefined;
  /** @default the server's (64) */
  readonly maxConnectionsPerDatabase?: number | undefined;
}

/** A request to the server process. */
export type ChildRequest =
  | { readonly id: number; readonly command: 'start'; readonly name: string; readonly options: BenchServerOptions }
  | { readonly id: number; readonly command: 'latency'; readonly name: string; readonly ms: number | Partial<Record<Operation, number>> }
  | { readonly id: number; readonly command: 'dynamodb-start' }
  | { readonly id: number; readonly command: 'dynamodb-latency'; readonly byOperation: Partial<Record<DynamoDbOperation, number>> }
  | { readonly id: number; readonly command: 'dynamodb-stats' }
  | { readonly id: number; readonly command: 'dynamodb-reset' }
  | { readonly id: number; readonly command: 'stats'; readonly name: string }
  | { readonly id: number; readonly command: 'reset'; readonly name: string }
  | { readonly id: number; readonly command: 'cpu' }
  | { readonly id: number; readonly command: 'event-loop' }
  | { readonly id: number; readonly command: 'close' };

/** The server process's answer to request `id` (0: the process is ready). */
export type ChildReply =
  | { readonly id: number; readonly ok: true; readonly value: unknown }
  | { readonly id: number; readonly ok: false; readonly error: string };

/** A local Data API server running in the server process. */
export interface RemoteDataApi {
  readonly name: string;
  readonly endpoint: string;
  readonly resourceArn: string;
  readonly secretArn: string;
  /** Adds `ms` to every call from now on, or to each operation its own (0 removes it); replaces what was set before. */
  latency(ms: number | Partial<Record<Operation, number>>): Promise<void>;
  /** Calls received per operation since the last reset, counted by the server. */
  stats(): Promise<Record<CountedOperation, number>>;
  resetStats(): Promise<void>;
}

/** The local DynamoDB (dynalite) running in the server process, for Powertools' persistence layer. */
export interface RemoteDynamoDb {
  readonly endpoint: string;
  /** Delays each operation by its milliseconds from now on; replaces what was set before. */
  latency(byOperation: Partial<Record<DynamoDbOperation, number>>): Promise<void>;
  stats(): Promise<Record<DynamoDbOperation, number>>;
  resetStats(): Promise<void>;
}

/** The server process: PostgreSQL and the Data API servers in front of it. */
export interface BenchServers {
  /** PostgreSQL's URL, for setup and checks the bench does directly (never timed). */
  readonly postgresUrl: string;
  /** CPU time the server process (the Data API servers, not PostgreSQL) has used, in microseconds. */
  cpuMicros(): Promise<number>;
  /** The server process's event loop utilization since it started (Node's `performance.eventLoopUtilization()`: idle and active milliseconds). */
  eventLoop(): Promise<{ readonly idle: number; readonly active: number }>;
  /** Starts a Data API server over that PostgreSQL, under `name`. */
  start(name: string, options?: BenchServerOptions): Promise<RemoteDataApi>;
  /** Starts the local DynamoDB (one per process) with Powertools' idempotency table. */
  startDynamoDb(): Promise<RemoteDynamoDb>;
  /** Stops the servers and PostgreSQL, and waits for the process to exit. */
  close(): Promise<void>;
}

/**
 * Starts bench/server-process.ts in a child process (with tsx, as the bench runs) and waits until its
 * PostgreSQL is up. Everything the child does is asked for over its IPC channel.
 */
export async function startBenchServers(): Promise<BenchServers> {
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
  const child = fork(fileURLToPath(new URL('./server-process.ts', import.meta.url)), [], {
    execArgv: ['--import', tsx],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
  });
  const pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  let next = 1;
  let exited: Error | undefined;
  const ended = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.on('message', (reply: ChildReply) => {
    const waiter = pending.get(reply.id);
    if (!waiter) return;
    pending.delete(reply.id);
    if (reply.ok) waiter.resolve(reply.value);
    else waiter.reject(new Error(`bench server process: ${reply.error}`));
  });
  child.once('exit', (code, signal) => {
    exited = new Error(`the bench server process exited (code ${code}, signal ${signal})`);
    for (const waiter of pending.values()) waiter.reject(exited);
    pending.clear();
  });
  const waitFor = <T>(id: number): Promise<T> =>
    exited ? Promise.reject(exited) : new Promise<T>((resolve, reject) => pending.set(id, { resolve: resolve as (value: unknown) => void, reject }));
  const ask = <T>(request: DistributiveOmit<ChildRequest, 'id'>): Promise<T> => {
    const id = next++;
    const answer = waitFor<T>(id);
    if (!exited) child.send({ ...request, id });
    return answer;
  };
  // The child's first message (id 0) says PostgreSQL is up.
  const { postgresUrl } = await waitFor<{ postgresUrl: string }>(0);
  return {
    postgresUrl,
    cpuMicros: () => ask({ command: 'cpu' }),
    eventLoop: () => ask({ command: 'event-loop' }),
    async start(name, options = {}) {
      const started = await ask<{ endpoint: string; resourceArn: string; secretArn: string }>({ command: 'start', name, options });
      return {
        name,
        ...started,
        latency: (ms) => ask({ command: 'latency', name, ms }),
        stats: () => ask({ command: 'stats', name }),
        resetStats: () => ask({ command: 'reset', name }),
      };
    },
    async startDynamoDb() {
      const endpoint = await ask<string>({ command: 'dynamodb-start' });
      return {
        endpoint,
        latency: (byOperation) => ask({ command: 'dynamodb-latency', byOperation }),
        stats: () => ask({ command: 'dynamodb-stats' }),
        resetStats: () => ask({ command: 'dynamodb-reset' }),
      };
    },
    async close() {
      if (!exited) await ask({ command: 'close' }).catch(() => {});
      await ended;
    },
  };
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
