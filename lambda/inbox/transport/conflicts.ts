import type { ConflictListener, InboxSession } from './session.js';

/**
 * Runs `transaction` (a whole transaction: begin to commit) as the session's dialect runs one: on Aurora
 * DSQL, again after each optimistic-concurrency conflict (transport/conflict-retry.ts); without a dialect,
 * once.
 */
export function retryConflicts<T>(session: InboxSession, transaction: () => Promise<T>, onRetry?: ConflictListener): Promise<T> {
  const run = session.dialect?.runTransaction;
  return run ? run(transaction, onRetry) : transaction();
}
