import type { SessionPolicy } from '../data-api/session.js';
import type { InboxSession } from './session.js';

/**
 * Where a wire target keeps the code that opens its session. The target carries it (`postgres(pool)` from
 * `sqs-inbox/postgres`), so that a consumer on the Data API bundles none of the wire transport. A registered
 * symbol: the ES module and CommonJS builds of the package agree on it.
 */
export const WIRE_SESSION: unique symbol = Symbol.for('sqs-inbox.wire-session') as never;

/** A database reached over the PostgreSQL wire protocol, made by `postgres(pool)`. */
export interface WireTarget {
  readonly [WIRE_SESSION]: (policy: SessionPolicy) => InboxSession;
}

/** True for a target made by `postgres(pool)`. */
export function isWireTarget(target: object): target is WireTarget {
  return typeof (target as Partial<WireTarget>)[WIRE_SESSION] === 'function';
}
