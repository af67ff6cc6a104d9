import { RDSDataClient } from '@aws-sdk/client-rds-data';
import type { SQSRecord } from 'aws-lambda';
import pg from 'pg';
import { startDataApi } from '../../local/data-api/server.js';
import type { DataApiServer } from '../../local/data-api/server.js';
import { DataApiSession, INBOX_MIGRATIONS, migrate } from '../../lambda/inbox/index.js';
import type { DatabaseTarget } from '../../lambda/inbox/index.js';
import { EXAMPLE_ORDER_MIGRATIONS } from '../../lambda/functions/example-migrations.js';
import { freshDatabase } from './database.js';

/** A migrated database behind its own local Data API server, and a direct connection for assertions. */
export interface InboxFixture {
  readonly server: DataApiServer;
  readonly target: DatabaseTarget;
  readonly session: DataApiSession;
  /** The database's PostgreSQL URL, for connections of a test's own beside the Data API. */
  readonly url: string;
  /** Runs SQL directly on PostgreSQL, beside the Data API, for assertions and setup. */
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
  const server = await startDataApi({ ...options, databaseUrl: url });
  const client = dataApiClient(server);
  const target: DatabaseTarget = { client, resourceArn: server.resourceArn, secretArn: server.secretArn, database: server.database };
  const session = new DataApiSession(target, { callTimeoutMs: 10_000, resumeDelaysMs: [] });
  await migrate(session, [INBOX_MIGRATIONS, EXAMPLE_ORDER_MIGRATIONS]);
  server.stats.reset();
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  return {
    server,
    target,
    session,
    url,
    query: async (sql, params) => (await pool.query(sql, params)).rows,
    close: async () => {
      client.destroy();
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
