/**
 * The Aurora DSQL transport (package export `sqs-inbox/dsql`): the inbox over the PostgreSQL wire protocol
 * to a DSQL cluster, with IAM tokens, TLS, connections replaced before DSQL's 60-minute limit, the
 * cluster's connection rate respected, and a record's transaction run again after an optimistic-concurrency
 * conflict. Its own entry, so that a consumer on the Data API bundles none of it. Needs `pg` and
 * `@aws-sdk/dsql-signer` installed beside the package.
 * @module
 */
import { InboxConfigError } from '../../errors.js';
import type { PostgresPool } from '../postgres/postgres-session.js';
import type { ConflictRetryPolicy } from '../session.js';
import { driverOf } from '../transport.js';
import type { InboxTransport, TransportDriver } from '../transport.js';
import { dsqlPool, resolveConnection } from './connection.js';
import { INBOX_ENV } from '../../contract.js';
import type { DsqlConflict } from '../conflict-retry.js';
import { DSQL_CONFLICT_RETRIES, DsqlSession } from './session.js';

export { DSQL_LIMITS } from './connection.js';
export { DSQL_CONFLICT_RETRIES } from './session.js';
export { DatabaseCallError, InboxError } from '../../errors.js';
export type { PostgresPool, PostgresClient } from '../postgres/postgres-session.js';
export type { InboxTransport } from '../transport.js';
export type { ConflictRetryPolicy } from '../session.js';
export type { DsqlConflict } from '../conflict-retry.js';

/** Options of {@link dsql}. Pass exactly one of `endpoint` and `clusterId`. */
export interface DsqlOptions {
  /** The cluster's endpoint, `<clusterId>.dsql.<region>.on.aws`. */
  readonly endpoint?: string | undefined;
  /** The cluster's id; the endpoint is then `<clusterId>.dsql.<region>.on.aws`. */
  readonly clusterId?: string | undefined;
  /** The cluster's Region, e.g. `us-east-1`. */
  readonly region: string;
  /**
   * The database role to connect as. `admin` signs with `dsql:DbConnectAdmin`; any other role with
   * `dsql:DbConnect`, for which the function's IAM role must be granted the database role
   * (`AWS IAM GRANT <role> TO '<iam role arn>'`). A consumer should never connect as `admin`.
   * @default 'admin'
   */
  readonly user?: string | undefined;
  /** The port the cluster listens on. @default 5432 */
  readonly port?: number | undefined;
  /** A DSQL cluster has one database; another name only for a local stand-in. @default 'postgres' */
  readonly database?: string | undefined;
  /** The pool's size per Lambda instance. @default 2 */
  readonly maxConnections?: number | undefined;
  /** A connection is closed after this many seconds, below DSQL's 60-minute limit. @default 3300 */
  readonly maxLifetimeSeconds?: number | undefined;
  /** An idle connection is closed after this long. @default 60_000 */
  readonly idleTimeoutMs?: number | undefined;
  /** How long each IAM token is valid; it is only checked when a connection opens. @default 900 */
  readonly tokenExpiresInSeconds?: number | undefined;
  /** Connections refused for the cluster's rate (53400) or count (53300) are asked for up to this many times. @default 5 */
  readonly connectAttempts?: number | undefined;
  /** An optimistic-concurrency conflict (SQLSTATE 40001) runs the record's transaction again this way. @default DSQL_CONFLICT_RETRIES */
  readonly conflictRetries?: ConflictRetryPolicy | undefined;
  /**
   * Told of each optimistic-concurrency conflict a transaction lost, retried or not, after the consumer's
   * metrics counted it (`ConflictRetries`, `ConflictsExhausted`): for a log line or a test's tally. It must not
   * throw.
   * @default none
   * @example
   * dsql({ clusterId, region, user, onConflict: (conflict) => console.log(conflict.attempt, conflict.retried) })
   */
  readonly onConflict?: ((conflict: DsqlConflict) => void) | undefined;
  /**
   * The batch modes claim and apply at most this many records per transaction, so that the claims and the
   * effect stay within DSQL's 3,000 modified rows: lower it when your `applyBatch` writes more than two rows
   * per record.
   * @default 1000
   */
  readonly maxRecordsPerTransaction?: number | undefined;
  /** TLS, required by DSQL; `false` only for a local stand-in. @default { rejectUnauthorized: true } */
  readonly ssl?: boolean | Readonly<Record<string, unknown>> | undefined;
  /** The credentials the tokens are signed with. @default the default credential provider chain */
  readonly credentials?: unknown;
  /** Where each new connection's password comes from instead of a signed token (a local stand-in). @default a DsqlSigner token */
  readonly password?: (() => Promise<string>) | undefined;
  /** A connection idle this long is checked with `SELECT 1` before use. @default 10_000 */
  readonly idleCheckMs?: number | undefined;
}

/** The transport {@link dsql} returns: `inbox({ database })` takes it. */
export interface DsqlTarget extends InboxTransport {
  /** The pool, made on first use and kept for the Lambda instance's life. */
  readonly pool: PostgresPool & { end(): Promise<void> };
}

/**
 * The `database` option of `inbox()` for an Aurora DSQL cluster. Make it at module load: its pool is
 * reused across invocations.
 *
 * @example
 * import { inbox } from 'sqs-inbox';
 * import { dsql } from 'sqs-inbox/dsql';
 * export const handler = inbox({ database: dsql({ clusterId: 'abcdefghijklmnopqrstuvwxyz', region: 'us-east-1', user: 'inbox_consumer' }), apply: async (tx, message) => { ... } });
 */
export function dsql(options: DsqlOptions): DsqlTarget {
  if (options === null || typeof options !== 'object') {
    throw new InboxConfigError(
      'dsql',
      'pass { endpoint | clusterId, region, user }, e.g. dsql({ clusterId: "abcdefghijklmnopqrstuvwxyz", region: "us-east-1", user: "inbox_consumer" })',
    );
  }
  const connection = resolveConnection(options);
  const retries = options.conflictRetries ?? DSQL_CONFLICT_RETRIES;
  if (!Number.isInteger(retries.attempts) || retries.attempts < 0 || !(retries.baseDelayMs >= 0) || !(retries.maxDelayMs >= retries.baseDelayMs)) {
    throw new InboxConfigError(
      'dsql.conflictRetries',
      'needs a whole `attempts` >= 0 and 0 <= `baseDelayMs` <= `maxDelayMs`, e.g. { attempts: 3, baseDelayMs: 20, maxDelayMs: 1000 }',
    );
  }
  if (options.onConflict !== undefined && typeof options.onConflict !== 'function') {
    throw new InboxConfigError(
      'dsql.onConflict',
      'must be a function of one conflict, e.g. (conflict) => console.log(conflict.attempt, conflict.retried), or left out',
    );
  }
  const perTransaction = options.maxRecordsPerTransaction ?? 1000;
  if (!Number.isInteger(perTransaction) || perTransaction < 1 || perTransaction > 3000) {
    throw new InboxConfigError(
      'dsql.maxRecordsPerTransaction',
      `${String(perTransaction)} must be a whole number from 1 to 3000 (DSQL modifies at most 3,000 rows per transaction), e.g. 1000`,
    );
  }
  const pool = dsqlPool(connection, options);
  const driver: TransportDriver & DsqlTarget = {
    name: 'dsql',
    pool,
    open: (policy) =>
      new DsqlSession(
        pool,
        policy,
        { conflictRetries: retries, maxRecordsPerTransaction: perTransaction, onConflict: options.onConflict },
        options.idleCheckMs,
      ),
  };
  return driver;
}

/** The environment {@link dsqlFromEnvironment} reads; the CDK constructs set the same names. */
export const DSQL_ENVIRONMENT = {
  endpoint: INBOX_ENV.DSQL_ENDPOINT,
  region: INBOX_ENV.DSQL_REGION,
  user: INBOX_ENV.DSQL_USER,
} as const;

/**
 * A DSQL transport from the function's environment, read at the first invocation: `INBOX_DSQL_ENDPOINT` (the cluster endpoint),
 * `INBOX_DSQL_REGION` (default `AWS_REGION`, which Lambda sets) and `INBOX_DSQL_USER` (the database role).
 *
 * @example
 * export const handler = inbox({ database: dsqlFromEnvironment(), apply });
 */
export function dsqlFromEnvironment(
  env: Readonly<Record<string, string | undefined>> = process.env,
  options: Omit<DsqlOptions, 'endpoint' | 'clusterId' | 'region' | 'user'> = {},
): DsqlTarget {
  // The environment is read at first use (an invocation's session, or the pool asked for), so that a module
  // that builds its handler imports cleanly without it.
  let settled: DsqlTarget | undefined;
  const settle = () => (settled ??= dsql({ ...options, ...dsqlEnvironment(env) }));
  const driver: TransportDriver & DsqlTarget = {
    name: 'dsql',
    get pool() {
      return settle().pool;
    },
    open: (policy) => driverOf(settle()).open(policy),
  };
  return driver;
}

/** The cluster's endpoint, Region and role from the environment, naming what is missing. */
function dsqlEnvironment(env: Readonly<Record<string, string | undefined>>): Pick<DsqlOptions, 'endpoint' | 'region' | 'user'> {
  const endpoint = env[DSQL_ENVIRONMENT.endpoint];
  if (!endpoint)
    throw new InboxConfigError(
      DSQL_ENVIRONMENT.endpoint,
      'is not set; set it to the cluster endpoint, e.g. "abcdefghijklmnopqrstuvwxyz.dsql.us-east-1.on.aws"',
    );
  const region = env[DSQL_ENVIRONMENT.region] || env.AWS_REGION;
  if (!region) throw new InboxConfigError(DSQL_ENVIRONMENT.region, 'is not set, and neither is AWS_REGION; set it to the cluster\'s Region, e.g. "us-east-1"');
  const user = env[DSQL_ENVIRONMENT.user];
  if (!user) throw new InboxConfigError(DSQL_ENVIRONMENT.user, 'is not set; set it to the database role the function connects as, e.g. "inbox_consumer"');
  return { endpoint, region, user };
}

export { DSQL_INBOX_MIGRATIONS, migrateDsql } from './migrations.js';
export type { InboxMigration, InboxMigrationSet, InboxTables, Migration, MigrationReport } from '../../sql/schema.js';
