import { InboxConfigError } from '../../errors.js';
import { importPeer, PeerDependencyError } from '../../peers.js';
import type { PostgresClient, PostgresPool } from '../postgres/postgres-session.js';
import type { DsqlOptions } from './index.js';

/**
 * Aurora DSQL's connection rules, from its user guide (Cluster quotas and database limits,
 * https://docs.aws.amazon.com/aurora-dsql/latest/userguide/CHAP_quotas.html, and Authentication,
 * https://docs.aws.amazon.com/aurora-dsql/latest/userguide/SECTION_authentication-token.html):
 * a connection lasts at most 60 minutes; a cluster accepts 100 new connections a second (burst 1,000) and
 * answers more with SQLSTATE 53400, and more than 10,000 open with 53300; the IAM token is checked only when
 * a connection opens (15 minutes by default).
 */
export const DSQL_LIMITS = {
  maxConnectionSeconds: 3600,
  connectionsPerSecond: 100,
  maxConnections: 10_000,
  defaultTokenSeconds: 900,
} as const;

/** The SQLSTATEs with which DSQL refuses a connection for now: rate exceeded, too many connections. */
const REFUSED_FOR_NOW = new Set(['53400', '53300']);

/** Where and as whom the pool connects, resolved from {@link DsqlConnectionOptions}. */
export interface DsqlConnection {
  readonly host: string;
  readonly region: string;
  readonly user: string;
  readonly port: number;
  readonly database: string;
}

/** The options {@link dsqlPool} reads: those of `dsql()` that say where, as whom and how the pool connects. */
export type DsqlConnectionOptions = Partial<
  Pick<
    DsqlOptions,
    | 'endpoint'
    | 'clusterId'
    | 'region'
    | 'user'
    | 'port'
    | 'database'
    | 'maxConnections'
    | 'maxLifetimeSeconds'
    | 'idleTimeoutMs'
    | 'tokenExpiresInSeconds'
    | 'connectAttempts'
    | 'ssl'
    | 'credentials'
    | 'password'
  >
>;

const CLUSTER_ID = /^[a-z0-9]{1,63}$/;
const REGION = /^[a-z]{2}(-[a-z]+)+-\d$/;
const USER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** Validates the options once, naming the option and the fix. */
export function resolveConnection(options: DsqlConnectionOptions): DsqlConnection {
  const region = options.region;
  if (typeof region !== 'string' || !REGION.test(region)) {
    throw new InboxConfigError('dsql.region', `${JSON.stringify(region)} is not an AWS Region; pass the cluster's Region, e.g. "us-east-1"`);
  }
  if ((options.endpoint === undefined) === (options.clusterId === undefined)) {
    throw new InboxConfigError(
      'dsql.endpoint',
      'pass exactly one of `endpoint` (e.g. "abcdefghijklmnopqrstuvwxyz.dsql.us-east-1.on.aws") and `clusterId` (e.g. "abcdefghijklmnopqrstuvwxyz")',
    );
  }
  if (options.clusterId !== undefined && (typeof options.clusterId !== 'string' || !CLUSTER_ID.test(options.clusterId))) {
    throw new InboxConfigError(
      'dsql.clusterId',
      `${JSON.stringify(options.clusterId)} is not a DSQL cluster id (lower-case letters and digits), e.g. "abcdefghijklmnopqrstuvwxyz"`,
    );
  }
  if (options.endpoint !== undefined && (typeof options.endpoint !== 'string' || options.endpoint.trim() === '' || /[/:\s]/.test(options.endpoint))) {
    throw new InboxConfigError(
      'dsql.endpoint',
      `${JSON.stringify(options.endpoint)} must be a host name without scheme or port, e.g. "abcdefghijklmnopqrstuvwxyz.dsql.us-east-1.on.aws"`,
    );
  }
  const user = options.user ?? 'admin';
  if (typeof user !== 'string' || !USER.test(user)) {
    throw new InboxConfigError(
      'dsql.user',
      `${JSON.stringify(user)} is not a database role name; pass the role your IAM role is granted (AWS IAM GRANT), e.g. "inbox_consumer"`,
    );
  }
  const port = options.port ?? 5432;
  positiveInteger('dsql.port', port, 5432);
  const maxLifetime = options.maxLifetimeSeconds;
  if (maxLifetime !== undefined && (!Number.isInteger(maxLifetime) || maxLifetime < 1 || maxLifetime >= DSQL_LIMITS.maxConnectionSeconds)) {
    throw new InboxConfigError(
      'dsql.maxLifetimeSeconds',
      `${String(maxLifetime)} must be a whole number of seconds below 3600 (DSQL closes a connection after 60 minutes), e.g. 3300`,
    );
  }
  for (const [name, value, example] of [
    ['dsql.maxConnections', options.maxConnections, 2],
    ['dsql.idleTimeoutMs', options.idleTimeoutMs, 60_000],
    ['dsql.tokenExpiresInSeconds', options.tokenExpiresInSeconds, 900],
    ['dsql.connectAttempts', options.connectAttempts, 5],
  ] as const) {
    if (value !== undefined) positiveInteger(name, value, example);
  }
  const database = options.database ?? 'postgres';
  if (typeof database !== 'string' || !USER.test(database)) {
    throw new InboxConfigError('dsql.database', `${JSON.stringify(database)} is not a database name; a DSQL cluster has one database, "postgres"`);
  }
  return { host: options.endpoint ?? `${options.clusterId}.dsql.${region}.on.aws`, region, user, port, database };
}

function positiveInteger(option: string, value: unknown, example: number): void {
  if (!Number.isInteger(value) || (value as number) < 1) throw new InboxConfigError(option, `${String(value)} must be a positive integer, e.g. ${example}`);
}

/** A node-postgres pool, as far as {@link dsqlPool} uses it. */
interface Pool {
  connect(): Promise<PostgresClient>;
  on(event: 'error', listener: (error: Error) => void): unknown;
  end(): Promise<void>;
}

/**
 * The pool behind a DSQL target: node-postgres, made on first use (so that `sqs-inbox/dsql` loads `pg` and
 * the signer only when a connection is needed), with a fresh IAM token per new connection (the token is
 * only checked when a connection opens), TLS, connections replaced before DSQL's 60-minute limit, and a
 * connection the cluster refuses for its rate (53400) or its count (53300) asked for again after a jittered
 * backoff: nothing ran on it, so asking again is safe.
 */
export function dsqlPool(connection: DsqlConnection, options: DsqlConnectionOptions): PostgresPool & { end(): Promise<void> } {
  let pool: Promise<Pool> | undefined;
  const make = async (): Promise<Pool> => {
    const pg = await importPeer(
      'pg',
      () => import('pg'),
      (cause) => new PeerDependencyError('sqs-inbox/dsql', 'pg', 'npm install pg @aws-sdk/dsql-signer', cause),
    );
    const password = options.password ?? (await tokenSource(connection, options));
    const Pool = (pg.default ?? pg).Pool;
    const made = new Pool({
      host: connection.host,
      port: connection.port,
      user: connection.user,
      database: connection.database,
      password,
      ssl: options.ssl === false ? false : options.ssl === true || options.ssl === undefined ? { rejectUnauthorized: true } : options.ssl,
      max: options.maxConnections ?? 2,
      idleTimeoutMillis: options.idleTimeoutMs ?? 60_000,
      maxLifetimeSeconds: options.maxLifetimeSeconds ?? 3300,
      keepAlive: true,
    }) as unknown as Pool;
    // An idle connection the cluster closed (its 60 minutes, a deploy): dropped from the pool, not a crash.
    made.on('error', () => {});
    return made;
  };
  const attempts = options.connectAttempts ?? 5;
  return {
    async connect() {
      pool ??= make();
      const ready = await pool;
      for (let attempt = 1; ; attempt++) {
        try {
          return await ready.connect();
        } catch (error) {
          const code = (error as { code?: unknown })?.code;
          if (attempt >= attempts || typeof code !== 'string' || !REFUSED_FOR_NOW.has(code)) throw error;
          // The cluster refills 100 connections a second: a wait of tens to hundreds of milliseconds, jittered so
          // that many Lambda instances starting together do not ask again together.
          await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * Math.min(2000, 50 * 2 ** attempt))));
        }
      }
    },
    async end() {
      if (pool) await (await pool).end();
    },
  };
}

/** A fresh token for each new connection: `DbConnectAdmin` for the `admin` role, `DbConnect` for any other. */
export async function tokenSource(connection: DsqlConnection, options: DsqlConnectionOptions): Promise<() => Promise<string>> {
  const { DsqlSigner } = await importPeer(
    '@aws-sdk/dsql-signer',
    () => import('@aws-sdk/dsql-signer'),
    (cause) => new PeerDependencyError('sqs-inbox/dsql', '@aws-sdk/dsql-signer', 'npm install @aws-sdk/dsql-signer pg', cause),
  );
  const signer = new DsqlSigner({
    hostname: connection.host,
    region: connection.region,
    expiresIn: options.tokenExpiresInSeconds ?? DSQL_LIMITS.defaultTokenSeconds,
    ...(options.credentials !== undefined ? { credentials: options.credentials as never } : {}),
  });
  return connection.user === 'admin' ? () => signer.getDbConnectAdminAuthToken() : () => signer.getDbConnectAuthToken();
}
