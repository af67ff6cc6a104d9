import type { Transaction } from './transaction.js';
import type { SqlParams } from './values.js';
import type { StatementResult } from './results.js';
import type { RequestLimits } from './limits.js';
import type { InboxMetrics } from '../telemetry/telemetry.js';
import type { PassThrough } from './pass-through.js';
import type { InboxTransport } from './transport.js';

/**
 * How the runtime reaches PostgreSQL: the transport seam. Every mode, source, the duplicate filter,
 * parking, replay, the outbox and the purge speak to the database through this and nothing else, so they
 * run unchanged on every transport (transport.ts `InboxTransport`: the Data API, the PostgreSQL wire
 * protocol, Aurora DSQL). SQL uses `:name` parameters on all of them.
 *
 * Every failure is a `DatabaseCallError` whose `failure` and `ambiguous` say how the call left things;
 * a transport classifies its own failures (a Data API 5xx, a socket reset while COMMIT was in flight).
 * A session never retries a call that may have run.
 *
 * A session is also a transport, one already open (its `name` is its transport's): the operations
 * (`migrate`, `purge`, `sweepOutbox`, ...) take a transport, and `sessionOf` runs them on a session the
 * repository's CLI, functions and tests already hold. No session is on the public surface.
 */
export interface InboxSession extends InboxTransport {
  /** Runs one statement, in autocommit or inside `transactionId`. */
  execute(sql: string, params?: SqlParams, transactionId?: string): Promise<StatementResult>;
  /**
   * Runs one autocommit statement that may safely run twice (a read, or a statement gated on its own
   * claim): a transport may send it once more when its connection turned out dead before any answer.
   */
  executeIdempotent(sql: string, params?: SqlParams): Promise<StatementResult>;
  /** Runs one statement once per parameter set in one call; returns how many sets ran. */
  executeBatch(sql: string, paramSets: readonly SqlParams[], transactionId?: string): Promise<number>;
  /** Opens a transaction and returns its id. */
  begin(): Promise<string>;
  /** Commits; every failure here is ambiguous unless the transport knows it did not commit. */
  commit(transactionId: string): Promise<void>;
  /** Rolls back; a transaction that is already gone counts as rolled back. */
  rollback(transactionId: string): Promise<void>;
  /** Opens a transaction whose statements are sent one at a time, in call order. */
  transaction(): Promise<Transaction>;
  /** How much one call may carry: the modes and the duplicate filter split a set of records that does not fit. */
  readonly limits: RequestLimits;
  /** How an ORM's driver sends inside one of this session's transactions (`sqs-inbox/orm`); absent on a transport that has none. */
  readonly passThrough?: PassThrough | undefined;
  /**
   * What the transport's database asks of the modes beyond PostgreSQL's rules: how many times a record's
   * transaction is run again after an optimistic-concurrency conflict (Aurora DSQL). Absent: never.
   */
  readonly dialect?: SessionDialect | undefined;
}

/** A database's rules that the modes follow without knowing which transport they run on. */
export interface SessionDialect {
  /**
   * A serialization failure (SQLSTATE 40001) is a definite rollback: the record's whole transaction is
   * run again, up to `attempts` more times, after a jittered wait.
   */
  readonly conflictRetries: ConflictRetryPolicy;
  /**
   * The most rows one transaction may modify (Aurora DSQL: 3,000). The purge deletes at most this many
   * per batch; the batch modes claim and apply at most `maxRecordsPerTransaction` records per transaction.
   */
  readonly maxModifiedRows?: number | undefined;
  /** A batch-mode set larger than this is claimed and applied as several transactions, in batch order. */
  readonly maxRecordsPerTransaction?: number | undefined;
  /**
   * Runs a whole transaction under {@link conflictRetries} (transport/conflict-retry.ts's `conflictRetrier`):
   * carried by the dialect, so a consumer on a database without one bundles none of it. The dialect counts
   * the conflicts it retries itself (the DSQL session: `ConflictRetries`, `ConflictsExhausted`).
   */
  readonly runTransaction?: (<T>(transaction: () => Promise<T>) => Promise<T>) | undefined;
}

/** How a transaction that lost an optimistic-concurrency conflict is run again. */
export interface ConflictRetryPolicy {
  /** Runs after the first, at most. 0: a conflict fails the record at once. */
  readonly attempts: number;
  /** The first wait's upper bound, in milliseconds; each further wait doubles it (full jitter). */
  readonly baseDelayMs: number;
  /** No wait exceeds this, in milliseconds. */
  readonly maxDelayMs: number;
}

/** How a session waits and retries. Time is injected so that tests can drive it. */
export interface SessionPolicy {
  /** Abort a single call after this long; the outcome of an aborted write is unknown. */
  readonly callTimeoutMs: number;
  /** Delays before each retry of a call refused while the database resumes (the Data API's DatabaseResumingException: Aurora auto-pause). */
  readonly resumeDelaysMs: readonly number[];
  /** Milliseconds left before the caller's deadline; a retry that cannot finish before it is not made. */
  readonly timeLeftMs?: (() => number) | undefined;
  /** Told about each resume retry, for the metrics. */
  readonly onResumeRetry?: (() => void) | undefined;
  /**
   * The invocation's metrics, for what only a transport sees: the DSQL session adds its conflict retries
   * (contract.ts `DSQL_CONFLICT_METRICS`) here, and they go out with the invocation's summary.
   */
  readonly metrics?: InboxMetrics | undefined;
  /** @default setTimeout */
  readonly sleep?: ((ms: number) => Promise<void>) | undefined;
}
