import { DataApiSession } from '../data-api/session.js';
import type { DatabaseTarget, SessionPolicy } from '../data-api/session.js';
import type { InboxSession } from './session.js';
import { isWireTarget, WIRE_SESSION } from './wire-target.js';
import type { WireTarget } from './wire-target.js';

/** Where the database is: the Data API (cluster and secret ARNs), or `postgres(pool)` from `sqs-inbox/postgres`. */
export type InboxTarget = DatabaseTarget | WireTarget;

/** True for a target reached over the PostgreSQL wire protocol. */
export function isPostgresTarget(target: InboxTarget): target is WireTarget {
  return isWireTarget(target);
}

/** The session for a target, on its transport. Auto-pause retries are the Data API's alone. */
export function openSession(target: InboxTarget, policy: SessionPolicy): InboxSession {
  return isWireTarget(target) ? target[WIRE_SESSION](policy) : new DataApiSession(target, policy);
}
