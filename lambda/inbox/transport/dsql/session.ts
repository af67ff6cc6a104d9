import type { DsqlConflictMetric } from '../../contract.js';
import { conflictRetrier } from '../conflict-retry.js';
import type { DsqlConflict } from '../conflict-retry.js';
import { PostgresSession } from '../postgres/postgres-session.js';
import type { PostgresPool } from '../postgres/postgres-session.js';
import type { ConflictRetryPolicy, SessionDialect, SessionPolicy } from '../session.js';
import type { DsqlOptions } from './index.js';

// The session dsql() opens: internal, as every session is (users hand `dsql({...})` to inbox() and migrateDsql()).

/**
 * A record's transaction runs up to 3 more times after a conflict, after jittered waits below 20, 40 and
 * 80 ms: AWS's advice for DSQL is to retry the whole transaction with jittered backoff.
 */
export const DSQL_CONFLICT_RETRIES: ConflictRetryPolicy = { attempts: 3, baseDelayMs: 20, maxDelayMs: 1000 };

/** DSQL's dialect: conflicts retried, at most 3,000 modified rows a transaction, 1,000 records per batch transaction. */
export const DSQL_DIALECT: SessionDialect = { conflictRetries: DSQL_CONFLICT_RETRIES, maxModifiedRows: 3000, maxRecordsPerTransaction: 1000 };

/** What a {@link DsqlSession} takes beside its pool and policy: DSQL's rules to change, and who hears of conflicts. */
export type DsqlSessionOptions = Partial<SessionDialect> & Pick<DsqlOptions, 'onConflict'>;

/**
 * The session on a DSQL target: the wire session, with DSQL's optimistic concurrency and row limit as its
 * dialect. Each conflict counts in the policy's `metrics` (the invocation's): `ConflictRetries` when the
 * transaction runs again, `ConflictsExhausted` when the retries ran out.
 */
export class DsqlSession extends PostgresSession {
  override readonly name: string = 'dsql';
  readonly dialect: SessionDialect;
  constructor(pool: PostgresPool, policy: SessionPolicy, options: DsqlSessionOptions = {}, idleCheckMs?: number) {
    super({ pool, idleCheckMs }, { callTimeoutMs: policy.callTimeoutMs, timeLeftMs: policy.timeLeftMs });
    const { onConflict, ...dialect } = options;
    const merged = { ...DSQL_DIALECT, ...dialect };
    const counted = (conflict: DsqlConflict) => {
      policy.metrics?.addMetric((conflict.retried ? 'ConflictRetries' : 'ConflictsExhausted') satisfies DsqlConflictMetric, 'Count', 1);
      onConflict?.(conflict);
    };
    this.dialect = { ...merged, runTransaction: conflictRetrier(merged.conflictRetries, counted) };
  }
}
