import { DatabaseCallError } from '../errors.js';
import type { ConflictRetryPolicy } from './session.js';

/**
 * True for a serialization failure that the database answered (SQLSTATE 40001): the transaction was rolled
 * back, definitely, so running it again cannot apply anything twice. Aurora DSQL answers an
 * optimistic-concurrency conflict this way at COMMIT (OC000 for rows, OC001 for the catalog); PostgreSQL
 * under REPEATABLE READ answers a claim that raced a committed one this way at the INSERT.
 */
export function isSerializationFailure(error: unknown): error is DatabaseCallError {
  return error instanceof DatabaseCallError && error.sqlState === '40001' && !error.ambiguous;
}

/** The wait before retry `attempt` (1-based): full jitter below min(max, base * 2^(attempt-1)). */
export function conflictDelayMs(policy: ConflictRetryPolicy, attempt: number, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
  return Math.floor(random() * ceiling);
}

/** One optimistic-concurrency conflict a transaction lost, as `dsql({ onConflict })` is told of it. */
export interface DsqlConflict {
  /** Which run of the transaction conflicted: 1 for the first. */
  readonly attempt: number;
  /**
   * `true`: the transaction runs again after `delayMs`. `false`: the policy's attempts are spent, and
   * this conflict is the transaction's failure (a record's: it is reported failed and SQS delivers it again).
   */
  readonly retried: boolean;
  /** The jittered wait before the next run, in milliseconds; 0 when `retried` is false. */
  readonly delayMs: number;
  /** The database's answer: SQLSTATE 40001, with DSQL's OC000 or OC001 in its message. */
  readonly error: DatabaseCallError;
}

/**
 * How a dialect with optimistic concurrency (Aurora DSQL) runs a whole transaction (begin to commit): again
 * after each serialization failure, up to the policy's attempts, after a jittered wait; the last failure is
 * thrown. `onConflict` hears of each conflict, retried or not. The session's dialect carries it, so a
 * consumer on a database without one bundles none of it.
 */
export function conflictRetrier(policy: ConflictRetryPolicy, onConflict: (conflict: DsqlConflict) => void = () => {}) {
  return async <T>(transaction: () => Promise<T>): Promise<T> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await transaction();
      } catch (error) {
        if (!isSerializationFailure(error)) throw error;
        const retried = attempt <= policy.attempts;
        const delayMs = retried ? conflictDelayMs(policy, attempt) : 0;
        onConflict({ attempt, retried, delayMs, error });
        if (!retried) throw error;
        if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
      }
    }
  };
}
