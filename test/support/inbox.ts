import { RDSDataClient } from '@aws-sdk/client-rds-data';
import type { SQSRecord } from 'aws-lambda';
import pg from 'pg';
import { startDataApi } from '../../local/data-api/server.js';
import type { DataApiServer } from '../../local/data-api/server.js';
import type { Stats } from '../../local/data-api/stats.js';
import type { DsqlConflict } from '../../lambda/inbox/transport/dsql/index.js';
import { DataApiSession } from '../../lambda/inbox/transport/data-api/session.js';
import { migrate } from '../../lambda/inbox/sql/schema.js';
import { postgres } from '../../lambda/inbox/transport/postgres/index.js';
import { PostgresSession } from '../../lambda/inbox/transport/postgres/postgres-session.js';
import { dataApi } from '../../lambda/inbox/transport/data-api/transport.js';
import type { DatabaseTarget } from '../../lambda/inbox/transport/data-api/session.js';
import type { InboxTransport } from '../../lambda/inbox/transport/transport.js';
import type { InboxSession } from '../../lambda/inbox/transport/session.js';
import { startWireProxy } from '../../local/wire/proxy.js';
import { DSQL_PROFILE_EXEMPT, dsqlOnProfile, startDsqlProfile } from '../../local/dsql/profile.js';
import { CONFLICT_RUN_RETRIES } from './dsql-conflicts.js';
import type { DsqlProfile } from '../../local/dsql/profile.js';
import { DSQL_INBOX_MIGRATIONS } from '../../lambda/inbox/transport/dsql/migrations.js';
import { migrateDsqlSession } from '../../lambda/inbox/transport/dsql/migrations.js';
import { DsqlSession } from '../../lambda/inbox/transport/dsql/session.js';
import { EXAMPLE_ORDER_MIGRATIONS } from '../../demo/functions/example-migrations.js';
import { freshDatabase } from './database.js';
import { seededRandom } from './seed.js';
import { TRANSPORT } from './transport.js';
import type { TransportName } from './transport.js';

export { TRANSPORT } from './transport.js';

/** A migrated database behind its own local Data API server, and a direct connection for assertions. */
export interface InboxFixture {
  /**
   * The local Data API server. On the wire transport its `faults` and `stats` are the wire proxy's, so a
   * test injects faults and counts calls the same way on both.
   */
  readonly server: DataApiServer;
  /** What `inbox({ database })` is given: the transport under test (`dataApi()`, `postgres(pool)`, `dsql()`). */
  readonly target: InboxTransport;
  readonly session: InboxSession;
  /** The database's PostgreSQL URL, for connections of a test's own beside the transport. */
  readonly url: string;
  /** On the dsql transport: the DSQL profile (its proxy, its conflicts, the statements it refused). */
  readonly dsql?: DsqlProfile | undefined;
  /**
   * The conflicts the DSQL profile injected since `server.stats` was last reset (0 off the profile, or at a
   * rate of 0): a count of calls states its expectation with them (test/support/dsql-conflicts.ts `withConflicts`).
   */
  conflictsInjected(): number;
  /**
   * A second, independent target for the same database: another Lambda instance with its own client. On the
   * DSQL profile `onConflict` hears of each conflict its transactions lost (elsewhere there are none).
   */
  instance(options?: InstanceOptions): InboxTransport;
  /** Runs SQL directly on PostgreSQL, beside the transport, for assertions and setup. */
  query<Row extends Record<string, unknown> = Record<string, any>>(sql: string, params?: unknown[]): Promise<Row[]>;
  close(): Promise<void>;
}

/** What {@link InboxFixture.instance} takes. */
export interface InstanceOptions {
  readonly onConflict?: ((conflict: DsqlConflict) => void) | undefined;
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

/** Where the local Data API server finds the fixture's database: what `dataApi({ ... })` takes, but the client. */
export function dataApiSettings(server: DataApiServer): { resourceArn: string; secretArn: string; database: string } {
  return { resourceArn: server.resourceArn, secretArn: server.secretArn, database: server.database };
}

/** The fixture's database as a Data API session's target, with `client` or one of {@link dataApiClient}. */
export function dataApiTarget(server: DataApiServer, client: RDSDataClient = dataApiClient(server)): DatabaseTarget {
  return { ...dataApiSettings(server), client };
}

/** How a transport is opened on a database: what the fixture hands the tests, and what it closes. */
type OpenTransport = (
  url: string,
  server: DataApiServer,
  options: NonNullable<Parameters<typeof startDataApi>[0]>,
  label: string,
) => Promise<{
  target: InboxTransport;
  instance: (options?: InstanceOptions) => InboxTransport;
  session: InboxSession;
  server: DataApiServer;
  closers: (() => Promise<void>)[];
  /** The DSQL profile the transport runs on, when it is dsql. */
  dsql?: DsqlProfile;
  /** Its conflicts injected since the stats were reset. */
  conflictsInjected?: () => number;
  /** True when the transport applied the migrations in its own form (DSQL's). */
  migrated?: boolean;
}>;

/** The Data API server's idle expiry and statement timeout, as PostgreSQL's own settings of the database. */
async function serverSettings(url: string, options: NonNullable<Parameters<typeof startDataApi>[0]>): Promise<void> {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  const database = new URL(url).pathname.slice(1);
  if (options.transactionIdleTimeoutMs !== undefined) {
    await admin.query(`ALTER DATABASE "${database}" SET idle_in_transaction_session_timeout = ${options.transactionIdleTimeoutMs}`);
  }
  if (options.statementTimeoutMs !== undefined) await admin.query(`ALTER DATABASE "${database}" SET statement_timeout = ${options.statementTimeoutMs}`);
  await admin.end();
}

/**
 * The `dsql()` target on the DSQL profile (local/dsql/profile.ts: repeatable read, DSQL's supported SQL, its
 * row limit, and OCC conflicts at COMMIT at the rate in `INBOX_TEST_DSQL_CONFLICT_RATE`, default 0, on seeded
 * dice), with the migrations in their DSQL form. With conflicts on, every target retries them with
 * CONFLICT_RUN_RETRIES (test/support/dsql-conflicts.ts).
 */
const openDsql: OpenTransport = async (url, server, options, label) => {
  await serverSettings(url, options);
  const conflictRate = Number(process.env.INBOX_TEST_DSQL_CONFLICT_RATE ?? 0);
  // The conflicts' dice come from the run's seed and the fixture's label: a failure reproduces with the seed it prints.
  const profile = await startDsqlProfile(url, { conflictRate, random: seededRandom(`dsql conflicts ${label}`) });
  const database = new URL(url).pathname.slice(1);
  const closers: (() => Promise<void>)[] = [() => profile.close()];
  const conflictRetries = conflictRate > 0 ? CONFLICT_RUN_RETRIES : undefined;
  const dsqlTarget = (options: InstanceOptions = {}) => {
    const made = dsqlOnProfile(profile, { database, conflictRetries, onConflict: options.onConflict });
    closers.push(() => made.pool.end());
    return made;
  };
  const own = dsqlTarget();
  const session = new DsqlSession(own.pool, { callTimeoutMs: 10_000, resumeDelaysMs: [] }, conflictRetries ? { conflictRetries } : {});
  // The migrations in their DSQL form, through the profile, with conflicts off while they run.
  const rate = profile.proxy.conflicts.rate;
  profile.proxy.conflicts.rate = 0;
  await migrateDsqlSession(session, [DSQL_INBOX_MIGRATIONS, EXAMPLE_ORDER_MIGRATIONS]);
  profile.proxy.conflicts.rate = rate;
  await profile.enforceRowLimit();
  // The stats' reset also marks the conflicts injected so far, so that a test counts both from the same moment.
  let injectedAtReset = 0;
  const stats = Object.create(profile.proxy.stats, {
    reset: {
      value() {
        injectedAtReset = profile.proxy.conflicts.injected;
        profile.proxy.stats.reset();
      },
    },
  }) as Stats;
  return {
    target: own,
    instance: (options) => dsqlTarget(options),
    session,
    server: Object.create(server, { faults: { value: profile.proxy.faults }, stats: { value: stats } }) as DataApiServer,
    conflictsInjected: () => profile.proxy.conflicts.injected - injectedAtReset,
    closers,
    dsql: profile,
    migrated: true,
  };
};

/** One row per transport of test/support/transport.ts: how its fixture reaches the database. */
const FIXTURES: Record<TransportName, OpenTransport> = {
  'data-api': async (_url, server) => {
    const client = dataApiClient(server);
    const settings = dataApiSettings(server);
    return {
      target: dataApi({ ...settings, client }),
      instance: () => dataApi({ ...settings, client: dataApiClient(server) }),
      session: new DataApiSession({ ...settings, client }, { callTimeoutMs: 10_000, resumeDelaysMs: [] }),
      server,
      closers: [async () => client.destroy()],
    };
  },
  postgres: async (url, server, options) => {
    await serverSettings(url, options);
    const proxy = await startWireProxy(url);
    const closers: (() => Promise<void>)[] = [() => proxy.close()];
    const wirePool = () => {
      const made = new pg.Pool({ connectionString: proxy.url, max: 10 });
      made.on('error', () => {}); // an idle connection a fault closed
      closers.push(() => made.end());
      return made;
    };
    const own = wirePool();
    return {
      target: postgres(own),
      instance: () => postgres(wirePool()),
      session: new PostgresSession({ pool: own }, { callTimeoutMs: 10_000 }),
      // The local Data API server's faults and stats are the wire proxy's, so tests inject faults and count
      // calls the same way on both.
      server: Object.create(server, { faults: { value: proxy.faults }, stats: { value: proxy.stats } }) as DataApiServer,
      closers,
    };
  },
  dsql: openDsql,
};

export async function inboxFixture(label: string, options: Parameters<typeof startDataApi>[0] = {}): Promise<InboxFixture> {
  const url = await freshDatabase(label);
  const server = await startDataApi({ ...options, databaseUrl: url });
  const opened = await FIXTURES[TRANSPORT](url, server, options, label);
  // On the DSQL profile the test's own connection is not held to the row limit: it stands beside the runtime.
  const pool = new pg.Pool({ connectionString: url, max: 4, ...(opened.dsql ? { options: DSQL_PROFILE_EXEMPT } : {}) });
  if (!opened.migrated) await migrate(opened.session, [EXAMPLE_ORDER_MIGRATIONS]);
  opened.server.stats.reset();
  return {
    server: opened.server,
    target: opened.target,
    session: opened.session,
    url,
    dsql: opened.dsql,
    conflictsInjected: opened.conflictsInjected ?? (() => 0),
    instance: opened.instance,
    query: async (sql, params) => (await pool.query(sql, params)).rows,
    close: async () => {
      // Nothing the runtime sent may have been refused by the DSQL profile, even where a test let the failure pass.
      const refused = opened.dsql?.violations.map((violation) => `${violation.rule.id}: ${violation.statement.slice(0, 120)}`) ?? [];
      for (const close of opened.closers.reverse()) await close();
      await pool.end();
      await server.close();
      if (refused.length > 0) throw new Error(`the DSQL profile refused statements DSQL does not support:\n${refused.join('\n')}`);
    },
  };
}

let sequence = 0;
/** The random part of a made-up message id, from the run's seed. */
const messageIdDice = seededRandom('message ids');

/** Builds an SQS record as Lambda delivers it. */
export function sqsRecord(
  options: {
    body?: string | object;
    messageId?: string;
    groupId?: string;
    key?: string;
    receiveCount?: number;
    fifo?: boolean;
    attributes?: Record<string, string>;
  } = {},
): SQSRecord {
  sequence++;
  const body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body ?? { orderId: `order-${sequence}` });
  const fifo = options.fifo ?? options.groupId !== undefined;
  return {
    messageId: options.messageId ?? `msg-${process.pid}-${sequence}-${Math.floor(messageIdDice() * 36 ** 6).toString(36)}`,
    receiptHandle: `rh-${sequence}`,
    body,
    attributes: {
      ApproximateReceiveCount: String(options.receiveCount ?? 1),
      SentTimestamp: String(Date.now()),
      SenderId: 'AIDATEST',
      ApproximateFirstReceiveTimestamp: String(Date.now()),
      ...(options.groupId !== undefined
        ? { MessageGroupId: options.groupId, MessageDeduplicationId: `dedup-${sequence}`, SequenceNumber: String(sequence) }
        : {}),
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
  const at =
    (level: string) =>
    (message: string, ...extra: unknown[]) =>
      void lines.push({ level, message, extra });
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
