import { claimSql, readClaim } from '../sql/claim.js';
import type { Transaction } from '../transport/transaction.js';
import type { SqlParams } from '../transport/values.js';
import type { StatementResult } from '../transport/results.js';
import type { InboxTables } from '../sql/schema.js';

/** The claim of one record's transaction, as the per-record transaction drives it around `apply`. */
export interface TransactionClaim {
  /** Before `apply`; false when `apply` must not run: the key is taken. */
  beforeApply(): Promise<boolean>;
  /** After `apply` (returned or threw): true when the claim inserted the row, false when the key was taken. */
  afterApply(): Promise<boolean>;
  /** True once the claim found the key taken: whatever `apply` did next rolls back as a duplicate. */
  readonly taken: boolean;
  /** True when the statement that carried the claim failed: the key may be claimed already. */
  readonly carrierFailed: boolean;
  /** The stored hash a claim that found the key taken read with it (null when it read none: look it up). */
  readonly existingSha256: Uint8Array | null;
}

/**
 * A claim that `apply`'s statements go through, because it rides on them (`claim: 'with-first-statement'`). A
 * claim made before `apply` has none: `apply`'s statements go straight to the transaction.
 */
export interface RidingClaim extends TransactionClaim {
  /** One of `apply`'s statements. */
  execute(sql: string, params?: SqlParams): Promise<StatementResult>;
  /** One of `apply`'s batch calls. */
  executeBatch(sql: string, paramSets: readonly SqlParams[]): Promise<number>;
  /**
   * Before a call that cannot carry the claim (an ORM's statement, `sqs-inbox/orm`): the claim goes first if it
   * has not, and a taken claim refuses the call.
   */
  claimFirst(): Promise<void>;
}

/**
 * The default claim (`claim: 'before-apply'`): alone, in a statement of its own before `apply` runs, which
 * reads the stored hash of a duplicate in the same call; `apply` runs only when it inserted the row.
 */
export class ClaimBeforeApply implements TransactionClaim {
  existingSha256: Uint8Array | null = null;
  readonly taken = false;
  readonly carrierFailed = false;
  readonly #tx: Transaction;
  readonly #tables: InboxTables;
  readonly #params: SqlParams;

  constructor(tx: Transaction, tables: InboxTables, params: SqlParams) {
    this.#tx = tx;
    this.#tables = tables;
    this.#params = params;
  }

  async beforeApply(): Promise<boolean> {
    const found = readClaim((await this.#tx.execute(claimSql(this.#tables), this.#params)).rows);
    this.existingSha256 = found.existingSha256;
    return found.claimed;
  }

  /** `apply` ran, so the claim inserted the row. */
  async afterApply(): Promise<boolean> {
    return true;
  }
}
