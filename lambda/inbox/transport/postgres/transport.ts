import { InboxConfigError } from '../../errors.js';
import { described } from '../../handler/option-checks.js';
import type { InboxTransport, TransportDriver } from '../transport.js';
import { PostgresSession } from './postgres-session.js';
import type { PostgresPool } from './postgres-session.js';

/** Options of {@link postgres}. */
export interface PostgresOptions {
  /**
   * A connection idle for longer than this is checked with `SELECT 1` before its first statement, and
   * replaced once if the check fails (a Lambda frozen between invocations may hold a dead socket).
   * @default 10_000
   */
  readonly idleCheckMs?: number | undefined;
}

/**
 * The `database` option of `inbox()` for a PostgreSQL reached over its own protocol.
 *
 * @example
 * import pg from 'pg';
 * import { inbox } from 'sqs-inbox';
 * import { postgres } from 'sqs-inbox/postgres';
 * const pool = new pg.Pool({ host: process.env.PGHOST, database: 'inbox', max: 2, idleTimeoutMillis: 60_000, keepAlive: true });
 * export const handler = inbox({ database: postgres(pool), apply: async (tx, message) => { ... } });
 */
export function postgres(pool: PostgresPool, options: PostgresOptions = {}): InboxTransport & { readonly pool: PostgresPool } {
  if (typeof (pool as { connect?: unknown } | undefined)?.connect !== 'function') {
    throw new InboxConfigError(
      'postgres(pool)',
      `must be given a node-postgres Pool, e.g. postgres(new pg.Pool({ host, database, user, password })); got ${described(pool)}`,
    );
  }
  const { idleCheckMs } = options;
  if (idleCheckMs !== undefined && !(Number.isInteger(idleCheckMs) && idleCheckMs >= 0)) {
    throw new InboxConfigError('idleCheckMs', `${described(idleCheckMs)} must be a non-negative integer number of milliseconds`);
  }
  const driver: TransportDriver & { readonly pool: PostgresPool } = {
    name: 'postgres',
    pool,
    open: (policy) => new PostgresSession({ pool, idleCheckMs }, { callTimeoutMs: policy.callTimeoutMs, timeLeftMs: policy.timeLeftMs }),
  };
  return driver;
}
