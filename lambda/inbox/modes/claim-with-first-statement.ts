import { claimRidingSql, claimSql, isClaimTaken, readClaim } from '../sql/claim.js';
import type { Transaction } from '../transport/transaction.js';
import type { SqlParams } from '../transport/values.js';
import type { StatementResult } from '../transport/results.js';
import { InboxError } from '../errors.js';
import type { InboxTables } from '../sql/schema.js';
import type { RidingClaim } from './claim-before-apply.js';

/**
 * What `tx.execute` throws in `apply` when the message's key turned out to be claimed already: its first
 * statement carried the claim, and the claim found the key taken. Nothing of the statement ran. Let it
 * propagate (or return): the inbox rolls the transaction back and reports the record a duplicate.
 */
export class ClaimTakenError extends InboxError {
  override name = 'ClaimTakenError';
  constructor(options?: { cause?: unknown }) {
    super("this message's key is claimed already (a duplicate): nothing ran, and the inbox rolls the transaction back", options);
  }
}

/**
 * The claim of one record's transaction with `claim: 'with-first-statement'` (a data-modifying CTE, whose
 * unique violation on the inbox key means a duplicate): it rides on the effect's first
 * statement (k + 2 calls: Begin, the k statements, Commit); when that statement cannot carry it (a batch
 * call, a statement that takes no CTE, `inbox_` parameters of its own) or the effect sends none, it goes
 * alone just before.
 */
export class ClaimWithFirstStatement implements RidingClaim {
  #state: 'pending' | 'riding' | 'claimed' | 'taken' | 'failed' = 'pending';
  /** The claim's statement, alone or carried, settled: it never rejects. */
  #carrier: Promise<void> = Promise.resolve();
  #failure: unknown;
  #carried = false;
  #existingSha256: Uint8Array | null = null;

  readonly #tx: Transaction;
  readonly #tables: InboxTables;
  readonly #params: SqlParams;

  constructor(tx: Transaction, tables: InboxTables, params: SqlParams) {
    this.#tx = tx;
    this.#tables = tables;
    this.#params = params;
  }

  /**
   * The key was claimed already (a duplicate, or a collision): the stored hash the claim read, when it went
   * alone. A claim carried by a statement reads none (the statement failed): null, and the caller looks it up.
   */
  get existingSha256(): Uint8Array | null {
    return this.#existingSha256;
  }

  /** Before `apply`: nothing yet, the claim goes with its first statement; `apply` runs. */
  async beforeApply(): Promise<boolean> {
    return true;
  }

  /**
   * After `apply` (returned or threw): claims alone if no statement carried the claim yet. True when the
   * claim inserted the row, false when the key was taken; throws when the claim's statement failed.
   */
  async afterApply(): Promise<boolean> {
    await this.#carrier;
    if (this.#state === 'pending') await this.#alone();
    this.#throwIfFailed();
    return this.#state === 'claimed';
  }

  /** True once the claim found the key taken: whatever `apply` did next rolls back as a duplicate. */
  get taken(): boolean {
    return this.#state === 'taken';
  }

  /**
   * True when the statement that carried the claim failed for another reason. PostgreSQL reports one
   * error per statement: when the effect's own table has a unique violation too, that one may be the
   * one reported, so the key may still be claimed already. The caller looks it up after the rollback.
   */
  get carrierFailed(): boolean {
    return this.#state === 'failed' && this.#carried;
  }

  /** Runs one of `apply`'s statements; the first one that can carries the claim. */
  async execute(sql: string, params: SqlParams = {}): Promise<StatementResult> {
    if (this.#state === 'pending') {
      const riding = Object.keys(params).some((name) => name.startsWith('inbox_')) ? undefined : claimRidingSql(this.#tables, sql);
      if (riding !== undefined) return this.#carry(riding, params);
      await this.#alone();
    }
    this.#refuseAfterTaken();
    return this.#tx.execute(sql, params);
  }

  /**
   * Before a call that cannot carry the claim (a batch call, an ORM's statement): the claim goes alone if
   * no statement carried it yet, and a taken claim refuses the call.
   */
  async claimFirst(): Promise<void> {
    if (this.#state === 'pending') await this.#alone();
    this.#refuseAfterTaken();
  }

  /** Runs one of `apply`'s batch calls; it never carries the claim (it would run once per parameter set). */
  async executeBatch(sql: string, paramSets: readonly SqlParams[]): Promise<number> {
    await this.claimFirst();
    return this.#tx.executeBatch(sql, paramSets);
  }

  async #carry(sql: string, params: SqlParams): Promise<StatementResult> {
    this.#state = 'riding';
    this.#carried = true;
    const sent = this.#tx.execute(sql, { ...params, ...this.#params });
    this.#carrier = sent.then(
      () => void (this.#state = 'claimed'),
      (error: unknown) => this.#fail(error, isClaimTaken(error)),
    );
    try {
      return await sent;
    } catch (error) {
      throw isClaimTaken(error) ? new ClaimTakenError({ cause: error }) : error;
    }
  }

  /** The claim in its own statement, which reads the stored hash of a duplicate in the same call. */
  async #alone(): Promise<void> {
    this.#state = 'riding';
    this.#carrier = this.#tx.execute(claimSql(this.#tables), this.#params).then(
      ({ rows }) => {
        const found = readClaim(rows);
        this.#existingSha256 = found.existingSha256;
        this.#state = found.claimed ? 'claimed' : 'taken';
      },
      (error: unknown) => this.#fail(error, false),
    );
    await this.#carrier;
    this.#throwIfFailed();
  }

  #throwIfFailed(): void {
    if (this.#state === 'failed') throw this.#failure;
  }

  #fail(error: unknown, taken: boolean): void {
    this.#state = taken ? 'taken' : 'failed';
    this.#failure = error;
  }

  /** After the claim found the key taken, no statement of `apply` is sent. */
  #refuseAfterTaken(): void {
    if (this.#state === 'taken') throw new ClaimTakenError();
  }
}
