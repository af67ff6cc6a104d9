/**
 * The PostgreSQL wire transport (package export `sqs-inbox/postgres`): the inbox over a node-postgres
 * pool, through RDS Proxy, to RDS or Aurora in a VPC, or to any PostgreSQL. Its own entry, so that a
 * consumer on the Data API bundles none of it.
 * @module
 */
import type { SessionPolicy } from '../../data-api/session.js';
import { WIRE_SESSION } from '../wire-target.js';
import type { WireTarget } from '../wire-target.js';
import { PostgresSession } from './postgres-session.js';
import type { PostgresPool } from './postgres-session.js';

export { PostgresSession } from './postgres-session.js';
export { PostgresError } from '../../errors.js';
export type { PostgresPool, PostgresClient, PostgresTarget, PostgresPolicy } from './postgres-session.js';
export { postgresFromEnvironment, readPostgresEnvironment, POSTGRES_ENVIRONMENT } from './from-environment.js';
export type { PostgresEnvironmentOptions, PostgresEnvironmentSettings, PostgresAuth } from './from-environment.js';

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
export function postgres(
  pool: PostgresPool,
  options: PostgresOptions = {},
): WireTarget & { readonly pool: PostgresPool; readonly idleCheckMs?: number | undefined } {
  return {
    pool,
    idleCheckMs: options.idleCheckMs,
    [WIRE_SESSION]: (policy: SessionPolicy) =>
      new PostgresSession({ pool, idleCheckMs: options.idleCheckMs }, { callTimeoutMs: policy.callTimeoutMs, timeLeftMs: policy.timeLeftMs }),
  };
}
