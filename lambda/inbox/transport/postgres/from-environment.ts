import type { ConnectionOptions } from 'node:tls';
import { InboxConfigError } from '../../errors.js';
import { importPeer, PeerDependencyError } from '../../peers.js';
import { postgres } from './transport.js';
import type { PostgresOptions } from './transport.js';
import { driverOf } from '../transport.js';
import type { InboxTransport, TransportDriver } from '../transport.js';
import type { PostgresClient, PostgresPool } from './postgres-session.js';
import { INBOX_ENV } from '../../contract.js';

/**
 * The environment variables a consumer on the PostgreSQL wire reads: the InboxConsumer construct sets them
 * when its database is behind RDS Proxy, and you set them for a PostgreSQL of your own.
 */
export const POSTGRES_ENVIRONMENT = {
  /** The host: RDS Proxy's endpoint, or your server's. */
  host: INBOX_ENV.PG_HOST,
  /** The port. @default 5432 */
  port: INBOX_ENV.PG_PORT,
  /** The database that holds the inbox table. */
  database: INBOX_ENV.PG_DATABASE,
  /** The database role to sign in as (with a secret: the secret's `username` wins). */
  user: INBOX_ENV.PG_USER,
  /** `true`: sign in with an RDS IAM authentication token, made fresh for every new connection. */
  iamAuth: INBOX_ENV.PG_IAM_AUTH,
  /** The ARN of a Secrets Manager secret `{ username, password }` to sign in with instead. */
  secretArn: INBOX_ENV.PG_SECRET_ARN,
} as const;

/** How a connection signs in: an RDS IAM token per connection, or a secret's password. */
export type PostgresAuth = { readonly kind: 'iam'; readonly region: string } | { readonly kind: 'secret'; readonly secretArn: string };

/** The connection settings {@link postgresFromEnvironment} read, checked. */
export interface PostgresEnvironmentSettings {
  /** `INBOX_PG_HOST`. */
  readonly host: string;
  /** `INBOX_PG_PORT`, 5432 when unset. */
  readonly port: number;
  /** `INBOX_PG_DATABASE`. */
  readonly database: string;
  /** `INBOX_PG_USER`; with a secret, the secret's `username` is used instead. */
  readonly user: string | undefined;
  /** How a connection signs in. */
  readonly auth: PostgresAuth;
}

/** A connection idle this long is closed by the pool: well below RDS Proxy's idle client timeout (30 min) and NAT's 350 s. */
const IDLE_TIMEOUT_MS = 60_000;
/** How long a password read from Secrets Manager is reused for new connections before it is read again (rotation). */
const SECRET_REUSE_MS = 5 * 60_000;

/**
 * The `database` option of `inbox()` for a consumer on the PostgreSQL wire, from its environment: RDS Proxy
 * with IAM authentication (what the InboxConsumer construct deploys), or any PostgreSQL with a Secrets
 * Manager secret. TLS is required. Reads `INBOX_PG_HOST`, `INBOX_PG_PORT` (default 5432), `INBOX_PG_DATABASE`,
 * `INBOX_PG_USER`, and either `INBOX_PG_IAM_AUTH=true` (a fresh token from `@aws-sdk/rds-signer` for every new
 * connection, in `AWS_REGION`) or `INBOX_PG_SECRET_ARN`. Call it once, at module load: the pool it makes is
 * reused across invocations. `pg` (and `@aws-sdk/rds-signer` or `@aws-sdk/client-secrets-manager`) load on the
 * first connection.
 *
 * @example
 * import { inbox } from 'sqs-inbox';
 * import { postgresFromEnvironment } from 'sqs-inbox/postgres';
 * export const handler = inbox({ database: postgresFromEnvironment(), apply: async (tx, message) => { ... } });
 * @throws InboxConfigError at the first invocation, naming the variable that is missing or wrong, and the fix
 */
export function postgresFromEnvironment(
  options: PostgresOptions & {
    /**
     * TLS for every connection; a server that does not offer TLS is refused. RDS Proxy's certificates chain
     * to Amazon's public roots, which Node trusts; for RDS itself or your own server pass its CA (`ca`), or run
     * the function with `NODE_EXTRA_CA_CERTS=/var/runtime/ca-cert.pem` (the RDS bundle on Lambda).
     * @default { rejectUnauthorized: true }
     */
    readonly ssl?: ConnectionOptions | undefined;
    /**
     * Connections the pool may open. Each concurrent record of a batch holds one for its transaction.
     * @default 2
     */
    readonly max?: number | undefined;
    /**
     * Where to read the variables.
     * @default process.env
     */
    readonly env?: Readonly<Record<string, string | undefined>> | undefined;
    /**
     * The clock that decides when a password read from Secrets Manager is read again (after 5 minutes, so that new
     * connections pick up a rotation).
     * @default Date.now
     */
    readonly now?: (() => number) | undefined;
  } = {},
): InboxTransport & { readonly pool: PostgresPool & { end(): Promise<void> } } {
  const max = options.max ?? 2;
  if (!Number.isInteger(max) || max < 1) throw new InboxConfigError('max', `is ${String(max)}: pass a whole number of connections >= 1, e.g. 2`);
  // The environment is read at first use (an invocation's session, or the pool asked for), so that a module
  // that builds its handler imports cleanly without it.
  let settled: (InboxTransport & { readonly pool: PostgresPool & { end(): Promise<void> } }) | undefined;
  const settle = () => {
    if (settled) return settled;
    const pool = lazyPool(readPostgresEnvironment(options.env ?? process.env), options.ssl ?? { rejectUnauthorized: true }, max, options.now ?? Date.now);
    settled = { ...postgres(pool, options), pool };
    return settled;
  };
  const driver: TransportDriver & { readonly pool: PostgresPool & { end(): Promise<void> } } = {
    name: 'postgres',
    get pool() {
      return settle().pool;
    },
    open: (policy) => driverOf(settle()).open(policy),
  };
  return driver;
}

/** Reads and checks the `INBOX_PG_*` variables, naming every one that is missing or wrong with its fix. */
export function readPostgresEnvironment(env: Readonly<Record<string, string | undefined>>): PostgresEnvironmentSettings {
  const names = POSTGRES_ENVIRONMENT;
  const required = (name: string, example: string) => {
    const value = env[name]?.trim();
    if (!value) throw new InboxConfigError(name, `is not set: set it to ${example} (the InboxConsumer construct sets it for a database behind RDS Proxy)`);
    return value;
  };
  const host = required(names.host, "the server's host name, e.g. RDS Proxy's endpoint");
  const portText = env[names.port]?.trim() || '5432';
  const port = Number(portText);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new InboxConfigError(names.port, `is "${portText}": set a port number from 1 to 65535, or unset it for 5432`);
  }
  const database = required(names.database, "the database that holds the inbox table, e.g. 'inbox'");
  const user = env[names.user]?.trim() || undefined;
  const iamText = env[names.iamAuth]?.trim().toLowerCase() ?? '';
  if (!['', 'true', 'false'].includes(iamText)) {
    throw new InboxConfigError(names.iamAuth, `is "${env[names.iamAuth]}": set it to true (RDS IAM authentication) or false, or unset it`);
  }
  const secretArn = env[names.secretArn]?.trim() || undefined;
  if (iamText === 'true' && secretArn !== undefined) {
    throw new InboxConfigError(names.secretArn, `is set beside ${names.iamAuth}=true: a connection signs in one way. Fix: unset one of them`);
  }
  if (iamText === 'true') {
    if (user === undefined) throw new InboxConfigError(names.user, `is not set: with ${names.iamAuth}=true set it to the database role the token signs in as`);
    const region = env.AWS_REGION?.trim();
    if (!region)
      throw new InboxConfigError(
        'AWS_REGION',
        `is not set: the RDS IAM token is signed for a region; Lambda sets it, elsewhere set it to the database's region`,
      );
    return { host, port, database, user, auth: { kind: 'iam', region } };
  }
  if (secretArn === undefined) {
    throw new InboxConfigError(
      names.secretArn,
      `is not set, and ${names.iamAuth} is not true: set ${names.iamAuth}=true for RDS IAM authentication, or ${names.secretArn} to a Secrets Manager secret { username, password }`,
    );
  }
  return { host, port, database, user, auth: { kind: 'secret', secretArn } };
}

/** A pool whose `pg.Pool` (and signer or secret) is made on the first connection: the peers load only then. */
function lazyPool(settings: PostgresEnvironmentSettings, ssl: ConnectionOptions, max: number, now: () => number): PostgresPool & { end(): Promise<void> } {
  let made: Promise<import('pg').Pool> | undefined;
  const make = async () => {
    const pg = await importPeer(
      'pg',
      () => import('pg'),
      (cause) => new PeerDependencyError('sqs-inbox/postgres', 'pg', 'npm install pg', cause),
    );
    const Pool = (pg.default ?? pg).Pool;
    const { user, password } = await credentials(settings, now);
    const pool = new Pool({
      host: settings.host,
      port: settings.port,
      database: settings.database,
      user,
      password,
      ssl,
      max,
      idleTimeoutMillis: IDLE_TIMEOUT_MS,
      keepAlive: true,
    });
    // An idle connection the proxy or server closed is an 'error' on the pool, which would end the process
    // unheard; pg drops that connection itself, and the next checkout opens a new one.
    pool.on('error', () => {});
    return pool;
  };
  return {
    connect: async (): Promise<PostgresClient> => {
      made ??= make().catch((error: unknown) => {
        made = undefined; // a failed secret read or signer load is tried again on the next connection
        throw error;
      });
      return (await made).connect() as Promise<PostgresClient>;
    },
    end: async () => {
      const pool = await made?.catch(() => undefined);
      await pool?.end();
    },
  };
}

/** The user, and the password as pg calls it for every new connection. */
async function credentials(settings: PostgresEnvironmentSettings, now: () => number): Promise<{ user: string; password: () => Promise<string> }> {
  const { auth } = settings;
  if (auth.kind === 'iam') {
    const { Signer } = await importPeer(
      '@aws-sdk/rds-signer',
      () => import('@aws-sdk/rds-signer'),
      (cause) =>
        new PeerDependencyError(
          'sqs-inbox/postgres',
          '@aws-sdk/rds-signer',
          'npm install @aws-sdk/rds-signer',
          cause,
          ` (${POSTGRES_ENVIRONMENT.iamAuth}=true signs in with it)`,
        ),
    );
    const signer = new Signer({ hostname: settings.host, port: settings.port, username: settings.user!, region: auth.region });
    // A token is good for 15 minutes and checked only when a connection opens: one per new connection.
    return { user: settings.user!, password: () => signer.getAuthToken() };
  }
  const { SecretsManagerClient, GetSecretValueCommand } = await importPeer(
    '@aws-sdk/client-secrets-manager',
    () => import('@aws-sdk/client-secrets-manager'),
    (cause) =>
      new PeerDependencyError(
        'sqs-inbox/postgres',
        '@aws-sdk/client-secrets-manager',
        'npm install @aws-sdk/client-secrets-manager',
        cause,
        ` (${POSTGRES_ENVIRONMENT.secretArn} is read with it)`,
      ),
  );
  const client = new SecretsManagerClient({});
  const read = async () => {
    const answer = await client.send(new GetSecretValueCommand({ SecretId: auth.secretArn }));
    return parseSecret(auth.secretArn, answer.SecretString);
  };
  let current = { ...(await read()), readAt: now() };
  return {
    user: current.username,
    password: async () => {
      // A rotated secret changes the password, not the user: new connections pick it up within SECRET_REUSE_MS.
      if (now() - current.readAt > SECRET_REUSE_MS) current = { ...(await read()), readAt: now() };
      return current.password;
    },
  };
}

function parseSecret(secretArn: string, text: string | undefined): { username: string; password: string } {
  let value: { username?: unknown; password?: unknown } | undefined;
  try {
    value = text === undefined ? undefined : JSON.parse(text);
  } catch {
    value = undefined;
  }
  if (typeof value?.username !== 'string' || typeof value.password !== 'string') {
    throw new InboxConfigError(
      POSTGRES_ENVIRONMENT.secretArn,
      `secret ${secretArn} is not JSON with string "username" and "password". Fix: store { "username": ..., "password": ... } in it (an RDS-generated secret has both)`,
    );
  }
  return { username: value.username, password: value.password };
}
