import { InboxError } from '../errors.js';

/**
 * An ORM inside `apply` tried to begin, commit or roll back a transaction of its own (`db.transaction()`,
 * a BeginTransaction, a `COMMIT` statement). The inbox owns the transaction: it commits the claim and the
 * ORM's writes together after `apply` returns, and rolls both back when it throws. Nothing was sent.
 */
export class TransactionControlError extends InboxError {
  override name = 'TransactionControlError';
  constructor(
    /** What was refused: `BeginTransaction`, `COMMIT`, ... */
    readonly refused: string,
    fix = 'drop db.transaction() (and any BEGIN, COMMIT or ROLLBACK) inside apply and write through db directly; to undo the effect, throw from apply',
  ) {
    super(
      `${refused} refused inside the inbox's transaction: the inbox commits the claim and your writes together when apply returns, ` +
        `and rolls both back when it throws. Fix: ${fix}.`,
    );
  }
}

/**
 * An ORM binding of `sqs-inbox/orm` was given something it cannot bind to: not the `tx` of `apply` or
 * `applyBatch`, a `tx` on the other transport, or a call after `apply` returned. The message names the fix.
 */
export class OrmBindingError extends InboxError {
  override name = 'OrmBindingError';
}
