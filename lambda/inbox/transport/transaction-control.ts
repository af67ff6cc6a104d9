import { TransactionControlError } from '../errors.js';
import { transactionControlIn } from './sql-scanner.js';

/**
 * Refuses, before it is sent, a text that holds a transaction-control statement (sql-scanner.ts
 * `transactionControlIn`): every transport calls it on every text it sends for a caller (the inbox's own
 * BEGIN, COMMIT and ROLLBACK go by the session's own calls). Anything but a string is left alone.
 */
export function refuseTransactionControl(sql: unknown): void {
  if (typeof sql !== 'string') return;
  const control = transactionControlIn(sql);
  if (control !== undefined) throw new TransactionControlError(control);
}
