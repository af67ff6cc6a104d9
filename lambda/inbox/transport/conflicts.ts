import type { InboxSession } from './session.js';

/**
 * Runs `transaction` (a whole transaction: begin to commit) as the session's dialect runs one: on Aurora
 * DSQL, again after each optimistic-concurrency conflict (transport/conflict-retry.ts), which the DSQL
 * session counts itself; without a dialect, once.
 */
export function retryConflicts<T>(session: InboxSession, transaction: () => Promise<T>): Promise<T> {
  // A dialect's run is a promise, never nullish: `??` falls back only when there is no dialect or no run.
  return session.dialect?.runTransaction?.(transaction) ?? transaction();
}
