import type pg from 'pg';
import { TypeCatalog } from './catalog.js';
import { DataApiErrorResponse, fromDatabase } from './errors.js';
import type { SecretCredentials } from './secrets.js';

/** One database as one user sees it: its autocommit pool and its type catalog. */
export interface Database {
  readonly name: string;
  readonly pool: pg.Pool;
  readonly catalog: TypeCatalog;
}

/** The limits of every pool. */
export interface DatabasesOptions {
  /** Connections each pool (one database, one user) opens at most. */
  readonly maxConnections: number;
  /** How long a call waits for a connection of a full pool before it fails. */
  readonly connectionWaitTimeoutMs: number;
  /** How long a connection sits idle before the pool closes it. */
  readonly idleTimeoutMs: number;
}

/**
 * The session settings of every connection. The Data API returns timestamps in UTC and bytea as base64,
 * so the server needs PostgreSQL's text in a known form whatever the server's defaults are. They are
 * start-up options, so `DISCARD ALL` between calls keeps them.
 */
const SESSION_OPTIONS = '-c TimeZone=UTC -c DateStyle=ISO,MDY -c IntervalStyle=postgres -c bytea_output=hex -c extra_float_digits=1';

/** Every pg type parser disabled: the result mapping works from PostgreSQL's own text. */
export const TEXT_TYPES = { getTypeParser: () => (value: string) => value };

/** pg-pool's message when no connection of a full pool came free in time. */
const POOL_WAIT_TIMEOUT = 'timeout exceeded when trying to connect';

/**
 * The databases of one PostgreSQL server, one pool per database and user, opened on first use and let go
 * once it has no connection left (its idle ones closed, or none could be opened), so that a long-lived
 * process that creates and drops databases keeps a pool only for those in use. The `database` member of
 * a request picks the database (the server URL's is the default); its secret picks the user (the server
 * URL's own, or a listed secret's).
 */
export class Databases {
  private readonly open = new Map<string, Database>();

  constructor(
    private readonly serverUrl: string,
    /** The `pg` module, loaded by the caller: it is an optional peer of the package. */
    private readonly driver: typeof pg,
    private readonly options: DatabasesOptions,
  ) {}

  /** The database of this name as this user (undefined: the server URL's), its pool created on first use. */
  get(name: string, credentials?: SecretCredentials): Database {
    const key = poolKey(name, credentials);
    let database = this.open.get(key);
    if (!database) {
      const pool = new this.driver.Pool({
        connectionString: this.url(name, credentials),
        options: SESSION_OPTIONS,
        types: TEXT_TYPES,
        max: this.options.maxConnections,
        connectionTimeoutMillis: this.options.connectionWaitTimeoutMs,
        idleTimeoutMillis: this.options.idleTimeoutMs,
        application_name: 'sqs-inbox-local-data-api',
      });
      // An idle connection that dies (server restart, pg_terminate_backend) must not crash the process.
      pool.on('error', () => {});
      pool.on('remove', () => this.letGoIfEmpty(key));
      database = { name, pool, catalog: new TypeCatalog((sql) => this.queryOnItsOwn(name, credentials, sql)) };
      this.open.set(key, database);
    }
    return database;
  }

  /** One query on a connection of its own, outside the pool and its limit, closed after. */
  private async queryOnItsOwn<Row extends pg.QueryResultRow>(
    name: string,
    credentials: SecretCredentials | undefined,
    sql: string,
  ): Promise<pg.QueryResult<Row>> {
    const client = new this.driver.Client({
      connectionString: this.url(name, credentials),
      options: SESSION_OPTIONS,
      application_name: 'sqs-inbox-local-data-api',
    });
    client.on('error', () => {});
    await client.connect();
    try {
      return await client.query<Row>(sql);
    } finally {
      await client.end().catch(() => {});
    }
  }

  /** The pools held now. */
  get openPools(): number {
    return this.open.size;
  }

  /**
   * Forgets the pool of `key` once it has no connection and nobody waits for one. It is not ended: a call
   * that still holds it can go on with it, and an empty pool holds nothing but memory.
   */
  private letGoIfEmpty(key: string): void {
    const pool = this.open.get(key)?.pool;
    if (pool && pool.totalCount === 0 && pool.waitingCount === 0) this.open.delete(key);
  }

  /**
   * A connection from the pool of this database and user, waiting at most `connectionWaitTimeoutMs`
   * for one to come free: then StatementTimeoutException, the service's answer when its connections to
   * the database are all taken (nothing ran; the SDK does not retry it). A server that cannot be reached
   * is a 504 DatabaseUnavailableException (nothing ran, so the SDK's retry is safe); anything PostgreSQL
   * itself refuses (an unknown database, a wrong password) is a DatabaseErrorException. When `signal`
   * aborts (the caller went away) the wait ends, and a connection that arrives later goes straight back.
   */
  async connect(name: string, credentials: SecretCredentials | undefined, signal?: AbortSignal): Promise<pg.PoolClient> {
    const pending = this.get(name, credentials).pool.connect();
    // A connection that could not be opened leaves the pool without emitting 'remove'.
    pending.catch(() => this.letGoIfEmpty(poolKey(name, credentials)));
    try {
      const client = await (signal ? abortable(pending, signal) : pending);
      // An error on a checked-out connection is reported through its query; without a listener it would
      // also be thrown as an uncaught 'error' event.
      if (client.listenerCount('error') === 0) client.on('error', () => {});
      return client;
    } catch (error) {
      if (signal?.aborted) {
        pending.then(
          (client) => client.release(),
          () => {},
        );
        throw error;
      }
      if ((error as { code?: unknown }).code && /^[0-9A-Z]{5}$/.test(String((error as { code: unknown }).code))) {
        throw fromDatabase(error);
      }
      if (error instanceof Error && error.message === POOL_WAIT_TIMEOUT) {
        throw new DataApiErrorResponse(
          'StatementTimeoutException',
          `Connection is not available, request timed out after ${this.options.connectionWaitTimeoutMs}ms: all ` +
            `${this.options.maxConnections} connections to database "${name}"${credentials ? ` as ${credentials.username}` : ''} are in use ` +
            '(maxConnectionsPerDatabase). Commit or roll back open transactions, or raise maxConnectionsPerDatabase or connectionWaitTimeoutMs.',
        );
      }
      throw new DataApiErrorResponse(
        'DatabaseUnavailableException',
        `PostgreSQL for database "${name}" cannot be reached: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  }

  /**
   * Asks PostgreSQL to cancel the statement a backend runs (the statement timeout). It goes through a
   * connection of its own, as the server URL's user: the backend's connection is busy, its pool may be
   * full, and a listed secret's user may not be allowed to signal it.
   */
  async cancel(via: string, pid: number): Promise<void> {
    const client = new this.driver.Client({ connectionString: this.url(via, undefined), connectionTimeoutMillis: 5_000 });
    client.on('error', () => {});
    try {
      await client.connect();
      await client.query('SELECT pg_cancel_backend($1)', [pid]);
    } catch {
      // The backend is gone or the server unreachable: nothing left to cancel.
    } finally {
      await client.end().catch(() => {});
    }
  }

  /** Ends every pool. */
  async end(): Promise<void> {
    const pools = [...this.open.values()].map((database) => database.pool.end().catch(() => {}));
    this.open.clear();
    await Promise.all(pools);
  }

  private url(name: string, credentials: SecretCredentials | undefined): string {
    const url = new URL(this.serverUrl);
    url.pathname = `/${encodeURIComponent(name)}`;
    if (credentials) {
      url.username = encodeURIComponent(credentials.username);
      url.password = encodeURIComponent(credentials.password);
    }
    return url.toString();
  }
}

/** One pool per database and user. */
function poolKey(name: string, credentials: SecretCredentials | undefined): string {
  return JSON.stringify([name, credentials?.username ?? null]);
}

/** The backend pid of a connection (pg keeps it from BackendKeyData; its types omit it). */
export function backendPid(client: pg.PoolClient): number {
  return (client as unknown as { processID: number }).processID;
}

function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}
