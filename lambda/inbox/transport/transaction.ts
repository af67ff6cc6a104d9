import type { SqlParams } from './values.js';
import type { StatementResult } from './results.js';
import type { InboxSession } from './session.js';
import type { RequestLimits } from './limits.js';
import type { TransactionChannel } from './pass-through.js';

/**
 * One transaction on any transport. Statements are queued and sent one at a time even when `execute` is
 * called concurrently: the Data API refuses a second call on a transaction that is still running a query,
 * and a wire connection runs one query at a time.
 */
export class Transaction {
  #queue: Promise<unknown> = Promise.resolve();
  /** The first statement that failed: PostgreSQL has aborted the transaction, so it must not commit. */
  #failure: unknown;
  #ending = false;
  #rolledBack = false;

  readonly #session: InboxSession;

  constructor(
    session: InboxSession,
    /** The transaction's id: the Data API's, or the wire transport's own. */
    readonly transactionId: string,
  ) {
    this.#session = session;
  }

  /** How much one of the transaction's calls may carry: its session's. */
  get limits(): RequestLimits {
    return this.#session.limits;
  }

  /** Runs one statement in this transaction. */
  execute(sql: string, params: SqlParams = {}): Promise<StatementResult> {
    return this.#enqueue(() => this.#session.execute(sql, params, this.transactionId));
  }

  #enqueue<T>(call: () => Promise<T>): Promise<T> {
    if (this.#ending) {
      return Promise.reject(new Error('the transaction is committing or rolling back; await every tx.execute inside apply'));
    }
    const run = this.#queue.then(call);
    this.#queue = run.catch((error: unknown) => {
      this.#failure ??= error;
    });
    return run;
  }

  /**
   * The way in for an ORM's driver (`sqs-inbox/orm`): its calls run with this transaction's id, queued with
   * the statements, so a failed one makes `commit` roll back as a failed statement does. A `claim`
   * goes first, when no statement carried it yet.
   * @internal the modes hand it to `sqs-inbox/orm`.
   */
  channel(claim?: { claimFirst(): Promise<void> }): TransactionChannel {
    return {
      passThrough: this.#session.passThrough,
      run: async (call) => {
        await claim?.claimFirst();
        return this.#enqueue(() => call(this.transactionId));
      },
    };
  }

  /** Runs one statement once per parameter set in this transaction, in one call where the transport has one (the Data API's BatchExecuteStatement). */
  executeBatch(sql: string, paramSets: readonly SqlParams[]): Promise<number> {
    return this.#enqueue(() => this.#session.executeBatch(sql, paramSets, this.transactionId));
  }

  /**
   * Waits for queued statements, then commits; if any statement failed (even one whose error the caller
   * caught), rolls back and throws that error instead: an aborted transaction must never look committed.
   */
  async commit(): Promise<void> {
    this.#ending = true;
    await this.#queue;
    if (this.#failure !== undefined) {
      await this.rollback().catch(() => {});
      throw this.#failure;
    }
    await this.#session.commit(this.transactionId);
  }

  /** Waits for queued statements, then rolls back (once: a second call does nothing). */
  async rollback(): Promise<void> {
    this.#ending = true;
    await this.#queue;
    if (this.#rolledBack) return;
    this.#rolledBack = true;
    await this.#session.rollback(this.transactionId);
  }
}
