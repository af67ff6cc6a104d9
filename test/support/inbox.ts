import { RDSDataClient } from '@aws-sdk/client-rds-data';
import type { SQSRecord } from 'aws-lambda';
import pg from 'pg';
import { startDataApi } from '../../local/data-api/server.js';
import type { DataApiServer } from '../../local/data-api/server.js';
import { DataApiSession } from '../../lambda/inbox/data-api/session.js';
import { INBOX_MIGRATIONS, migrate } from '../../lambda/inbox/sql/schema.js';
import { postgres, PostgresSession } from '../../lambda/inbox/transport/postgres/index.js';
import type { DatabaseTarget } from '../../lambda/inbox/data-api/session.js';
import type { InboxSession } from '../../lambda/inbox/transport/session.js';
import { startWireProxy } from '../../local/wire/proxy.js';
import { EXAMPLE_ORDER_MIGRATIONS } from '../../demo/functions/example-migrations.js';
import { freshDatabase } from './database.js';

/**
 * The transport the inbox suites run on: the Data API (the default), or the PostgreSQL wire protocol with
 * `INBOX_TEST_TRANSPORT=postgres` (`npm run test:wire`), through the testkit's wire proxy, which counts
 * calls and injects faults with the same API as the local Data API server.
 */
export const TRANSPORT: 'data-api' | 'postgres' = process.env.INBOX_TEST_TRANSPORT === 'postgres' ? 'postgres' : 'data-api';

/** A migrated database behind its own local Data API server, and a direct connection for assertions. */
export interface InboxFixture {
  /**
   * The local Data API server. On the wire transport its `faults` and `stats` are the wire proxy's, so a
   * test injects faults and counts calls the same way on both.
   */
  readonly server: DataApiServer;
  /** What `inbox({ database })` is given: Data API settings, or `{ pool }` on the wire transport. */
  readonly target: DatabaseTarget;
  readonly session: InboxSession;
  /** The database's PostgreSQL URL, for connections of a test's own beside the transport. */
  readonly url: string;
  /** A second, independent target for the same database: another Lambda instance with its own client. */
  instance(): DatabaseTarget;
  /** Runs SQL directly on PostgreSQL, beside the transport, for assertions and setup. */
  query<Row extends Record<string, unknown> = Record<string, any>>(sql: string, params?: unknown[]): Promise<Row[]>;
  close(): Promise<void>;
}

/** A client configured as `inbox()` configures its own: no SDK retries. */
export function dataApiClient(server: DataApiServer): RDSDataClient {
  return new RDSDataClient({
    endpoint: server.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
}

export async function inboxFixture(label: string, options: Parameters<typeof startDataApi>[0] = {}): Promise<InboxFixture> {
  const url = await freshDatabase(label);
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  const server = await startDataApi({ ...options, databaseUrl: url });
  const closers: (() => Promise<void>)[] = [];
  let target: DatabaseTarget;
  let instance: () => DatabaseTarget;
  let session: InboxSession;
  let exposed: DataApiServer = server;
  if (TRANSPORT === 'postgres') {
    // The Data API server's idle expiry and statement timeout, as PostgreSQL's own settings.
    const database = new URL(url).pathname.slice(1);
    if (options.transactionIdleTimeoutMs !== undefined) {
      await pool.query(`ALTER DATABASE "${database}" SET idle_in_transaction_session_timeout = ${options.transactionIdleTimeoutMs}`);
    }
    if (options.statementTimeoutMs !== undefined) await pool.query(`ALTER DATABASE "${database}" SET statement_timeout = ${options.statementTimeoutMs}`);
    const proxy = await startWireProxy(url);
    const wirePool = () => {
      const made = new pg.Pool({ connectionString: proxy.url, max: 10 });
      made.on('error', () => {}); // an idle connection a fault closed
      closers.push(() => made.end());
      return made;
    };
    const own = wirePool();
    // The wire target stands where a Data API target is expected: inbox({ database }) takes both.
    target = postgres(own) as unknown as DatabaseTarget;
    instance = () => postgres(wirePool()) as unknown as DatabaseTarget;
    session = new PostgresSession({ pool: own }, { callTimeoutMs: 10_000 });
    exposed = Object.create(server, { faults: { value: proxy.faults }, stats: { value: proxy.stats } }) as DataApiServer;
    closers.push(() => proxy.close());
  } else {
    const client = dataApiClient(server);
    target = { client, resourceArn: server.resourceArn, secretArn: server.secretArn, database: server.database };
    instance = () => ({ ...target, client: dataApiClient(server) });
    session = new DataApiSession(target, { callTimeoutMs: 10_000, resumeDelaysMs: [] });
    closers.push(async () => client.destroy());
  }
  await migrate(session, [INBOX_MIGRATIONS, EXAMPLE_ORDER_MIGRATIONS]);
  exposed.stats.reset();
  return {
    server: exposed,
    target,
    session,
    url,
    instance,
    query: async (sql, params) => (await pool.query(sql, params)).rows,
    close: async () => {
      for (const close of closers.reverse()) await close();
      await pool.end();
      await server.close();
    },
  };
}

let sequence = 0;

/** Builds an SQS record as Lambda delivers it. */
export function sqsRecord(options: {
  body?: string | object;
  messageId?: string;
  groupId?: string;
  key?: string;
  receiveCount?: number;
  fifo?: boolean;
  attributes?: Record<string, string>;
} = {}): SQSRecord {
  sequence++;
  const body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body ?? { orderId: `order-${sequence}` });
  const fifo = options.fifo ?? options.groupId !== undefined;
  return {
    messageId: options.messageId ?? `msg-${process.pid}-${sequence}-${Math.random().toString(36).slice(2)}`,
    receiptHandle: `rh-${sequence}`,
    body,
    attributes: {
      ApproximateReceiveCount: String(options.receiveCount ?? 1),
      SentTimestamp: String(Date.now()),
      SenderId: 'AIDATEST',
      ApproximateFirstReceiveTimestamp: String(Date.now()),
      ...(options.groupId !== undefined ? { MessageGroupId: options.groupId, MessageDeduplicationId: `dedup-${sequence}`, SequenceNumber: String(sequence) } : {}),
      ...options.attributes,
    } as SQSRecord['attributes'],
    messageAttributes: options.key !== undefined ? { 'idempotency-key': { dataType: 'String', stringValue: options.key } } : {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: `arn:aws:sqs:us-east-1:123456789012:orders${fifo ? '.fifo' : ''}`,
    awsRegion: 'us-east-1',
  };
}

/** A Lambda context whose remaining time is whatever `remaining()` says. */
export function lambdaContext(remaining: () => number = () => 60_000) {
  return { getRemainingTimeInMillis: remaining };
}

/** A logger that keeps what it is told, so tests can read the structured log lines. */
export function recordingLogger() {
  const lines: { level: string; message: string; extra: unknown[] }[] = [];
  const at = (level: string) => (message: string, ...extra: unknown[]) => void lines.push({ level, message, extra });
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/** A metrics sink that keeps what is published. */
export function recordingMetrics() {
  const published: Record<string, number[]>[] = [];
  let stored: Record<string, number[]> = {};
  return {
    published,
    addMetric(name: string, _unit: string, value: number) {
      (stored[name] ??= []).push(value);
    },
    publishStoredMetrics() {
      published.push(stored);
      stored = {};
    },
  };
}
