import { PostgresError } from '../../errors.js';
import type { DatabaseFailure } from '../../errors.js';

/** The operations of the wire transport, named as the Data API names its own. */
export type WireOperation = 'Connect' | 'BeginTransaction' | 'ExecuteStatement' | 'BatchExecuteStatement' | 'CommitTransaction' | 'RollbackTransaction';

/** Node's codes for a connection that was never made: nothing ran. */
const NOT_CONNECTED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * Sorts a node-postgres failure into the taxonomy every transport shares. The rule that matters: a call
 * whose request may have reached the server and whose answer did not come back is ambiguous, above all a
 * COMMIT; a PostgreSQL error answer is never ambiguous, since the server says what it did.
 *
 * - a PostgreSQL error (it has a SQLSTATE): the statement failed and took no effect; `57014` (cancelled by
 *   `statement_timeout`) is a definite timeout; `25P03` (idle-in-transaction timeout) and `25P02` (the
 *   transaction was aborted before) mean the transaction is gone; class `08` and `57P0x` (the server shut
 *   down or restarted under the connection) are a lost connection, ambiguous on a commit;
 * - no connection could be made, or the pool had none free in time: unavailable, nothing ran;
 * - the socket reset or closed, or the answer did not come within the call timeout: network or timeout,
 *   ambiguous;
 * - a connection node-postgres already knew was broken: nothing was sent; its transaction is gone.
 */
export function classifyWire(operation: WireOperation, error: unknown, inTransaction = operation !== 'ExecuteStatement'): PostgresError {
  if (error instanceof PostgresError) return error;
  const code = (error as { code?: unknown })?.code;
  const message = (error as { message?: unknown })?.message;
  const text = typeof message === 'string' ? message : String(error);
  const isCommit = operation === 'CommitTransaction';
  const make = (failure: DatabaseFailure, ambiguous: boolean, sqlState?: string) =>
    new PostgresError(operation, failure, ambiguous || (isCommit && failure !== 'statement' && failure !== 'transaction-not-found'), text, {
      cause: error,
      sqlState,
    });
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) {
    if (code === '57014') return make('timeout', false, code);
    if (code === '25P03' || code === '25P02') return make('transaction-not-found', false, code);
    if (code.startsWith('08') || /^57P0[1-3]$/.test(code)) return make(operation === 'Connect' ? 'unavailable' : 'network', operation !== 'Connect', code);
    if (code === '53300' || code === '53400') return make('unavailable', false, code);
    if (code.startsWith('28') || code === '3D000') return make('rejected', false, code);
    return make('statement', false, code);
  }
  if (typeof code === 'string' && NOT_CONNECTED.has(code)) return make('unavailable', false);
  // node-postgres refuses, before sending anything, a query on a connection it already saw fail (the
  // server closed it: an idle-in-transaction timeout, a restart). Nothing ran; a transaction on it is gone.
  if (/not queryable/i.test(text)) return make(operation === 'ExecuteStatement' && !inTransaction ? 'unavailable' : 'transaction-not-found', false);
  if (operation === 'Connect') return make('unavailable', false);
  if (/timeout exceeded when trying to connect/i.test(text)) return make('unavailable', false);
  if (/Query read timeout/i.test(text)) return make('timeout', true);
  return make('network', true);
}
