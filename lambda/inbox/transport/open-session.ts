import { DataApiSession } from '../data-api.js';
import type { DatabaseTarget, SessionPolicy } from '../data-api.js';
import { PostgresSession } from './postgres/postgres-session.js';
import type { PostgresTarget } from './postgres/postgres-session.js';
import type { InboxSession } from './session.js';

/** Where the database is: the Data API (cluster and secret ARNs), or a node-postgres pool. */
export type InboxTarget = DatabaseTarget | PostgresTarget;

/** True for a target reached over the PostgreSQL wire protocol. */
export function isPostgresTarget(target: InboxTarget): target is PostgresTarget {
  return 'pool' in target && target.pool !== undefined;
}

/** The session for a target, on its transport. Auto-pause retries are the Data API's alone. */
export function openSession(target: InboxTarget, policy: SessionPolicy): InboxSession {
  return isPostgresTarget(target) ? new PostgresSession(target, { callTimeoutMs: policy.callTimeoutMs }) : new DataApiSession(target, policy);
}
