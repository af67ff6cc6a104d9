import type pg from 'pg';
import { TypeCatalog } from './catalog.js';
import { DataApiError, fromDatabase } from './errors.js';

/** One database the server reaches: its autocommit pool and its type catalog. */
export interface Database {
  readonly name: string;
  readonly pool: pg.Pool;
  readonly catalog: TypeCatalog;
}

/**
 * The session settings of every connection. The Data API returns timestamps in UTC and bytea as base64,
 * so the server needs PostgreSQL's text in a known form whatever the server's defaults are.
 */
const SESSION_OPTIONS = '-c TimeZone=UTC -c DateStyle=ISO,MDY -c IntervalStyle=postgres -c bytea_output=hex -c extra_float_digits=1';

/** Every pg type parser disabled: the result mapping works from PostgreSQL's own text. */
export const TEXT_TYPES = { getTypeParser: () => (value: string) => value };

/**
 * The databases of one PostgreSQL server, one pool each, opened on first use. The `database` member of
 * a request picks one; the database of the server's URL is the default.
 */
export class Databases {
  private readonly open = new Map<string, Database>();

  constructor(
    private readonly serverUrl: string,
    /** The `pg` module, loaded by the caller: it is an optional peer of the package. */
    private readonly driver: typeof pg,
  ) {}

  /** The database of this name, its pool created on first use. */
  get(name: string): Database {
    let database = this.open.get(name);
    if (!database) {
      const url = new URL(this.serverUrl);
      url.pathname = `/${encodeURIComponent(name)}`;
      const pool = new this.driver.Pool({
        connectionString: url.toString(),
        options: SESSION_OPTIONS,
        types: TEXT_TYPES,
        max: 64,
        idleTimeoutMillis: 5_000,
        application_name: 'sqs-inbox-local-data-api',
      });
      // An idle connection that dies (server restart, pg_terminate_backend) must not crash the process.
      pool.on('error', () => {});
      database = { name, pool, catalog: new TypeCatalog(pool) };
      this.open.set(name, database);
    }
    return database;
  }

  /**
   * A connection from the database's pool. A server that cannot be reached is a 504
   * DatabaseUnavailableException (nothing ran, so the SDK's retry is safe); anything PostgreSQL itself
   * refuses (an unknown database) is a DatabaseErrorException.
   */
  async connect(name: string): Promise<pg.PoolClient> {
    try {
      const client = await this.get(name).pool.connect();
      // An error on a checked-out connection is reported through its query; without a listener it would
      // also be thrown as an uncaught 'error' event.
      if (client.listenerCount('error') === 0) client.on('error', () => {});
      return client;
    } catch (error) {
      if ((error as { code?: unknown }).code && /^[0-9A-Z]{5}$/.test(String((error as { code: unknown }).code))) {
        throw fromDatabase(error);
      }
      throw new DataApiError(
        'DatabaseUnavailableException',
        `PostgreSQL for database "${name}" cannot be reached: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  }

  /**
   * Asks PostgreSQL to cancel the statement a backend runs (the statement timeout). Goes through the
   * default database's pool, since the backend's own connection is busy.
   */
  async cancel(via: string, pid: number): Promise<void> {
    await this.get(via).pool.query('SELECT pg_cancel_backend($1)', [pid]).catch(() => {});
  }

  /** Ends every pool. */
  async end(): Promise<void> {
    const pools = [...this.open.values()].map((database) => database.pool.end().catch(() => {}));
    this.open.clear();
    await Promise.all(pools);
  }
}

/** The PostgreSQL backend pid of a connection (pg keeps it from BackendKeyData; its types omit it). */
export function backendPid(client: pg.PoolClient): number {
  return (client as unknown as { processID: number }).processID;
}
