import type pg from 'pg';
import { badRequest, type DataApiErrorResponse } from './errors.js';

/**
 * The PostgreSQL session a pooled connection carries between calls. Each Data API call must start from a
 * clean session and leave nothing open: the service gives calls no session of their own, and a pooled
 * connection would otherwise pass on what a call set (`SET search_path`, `SET default_transaction_read_only`,
 * a temporary table, an advisory lock) or left open (a transaction block from `BEGIN`, whose later
 * "committed" writes vanish when the connection closes).
 */

/** 'I' idle, 'T' in a transaction block, 'E' in a failed transaction block. */
export type TransactionStatus = 'I' | 'T' | 'E';

/**
 * The transaction status PostgreSQL reported with its last ReadyForQuery. pg keeps it as `_txStatus`
 * (pinned pg 8.23.1; the session tests guard it) and sets it before the query's promise settles.
 */
export function transactionStatus(client: pg.PoolClient): TransactionStatus | undefined {
  const status = (client as unknown as { _txStatus?: unknown })._txStatus;
  return status === 'I' || status === 'T' || status === 'E' ? status : undefined;
}

/**
 * A call without transactionId must end outside any transaction block. `BEGIN` (or `START TRANSACTION`)
 * sent through ExecuteStatement would leave one open on the pooled connection: every later call there
 * would run inside it and answer success, and all of it would be rolled back when the connection closes.
 */
export function assertAutocommitEnded(client: pg.PoolClient): void {
  if (transactionStatus(client) === 'I') return;
  throw badRequest(
    'The statement opened a transaction block (BEGIN or START TRANSACTION) in a call without transactionId; it was rolled back. ' +
      'A call without transactionId commits on its own. To group statements, call BeginTransaction and pass its transactionId ' +
      'to each ExecuteStatement, then CommitTransaction or RollbackTransaction.',
  );
}

/**
 * A statement inside a transaction (a Data API one, or the block around an autocommit batch) must leave
 * it open. COMMIT, ROLLBACK, END or ABORT in the SQL ends it behind the Data API's back; `command` is
 * PostgreSQL's tag for that statement (COMMIT, or ROLLBACK when the block had failed).
 */
export function transactionEndedBySql(command: string, transactionId: string | undefined): DataApiErrorResponse {
  const what = transactionId ? `transaction ${transactionId}` : 'the transaction around this batch';
  return badRequest(
    `The SQL ended ${what} (PostgreSQL answered ${command}); transaction control in SQL is not how the Data API ends transactions. ` +
      `${transactionId ? 'The transaction is over: later calls with its id fail. ' : ''}` +
      'End a transaction with CommitTransaction or RollbackTransaction, and leave COMMIT, ROLLBACK, END and ABORT out of the SQL.',
  );
}

/**
 * Gives a connection back to its pool with a clean session: `DISCARD ALL` resets every setting to the
 * connection's start-up values and drops temporary tables, prepared statements, cursors, LISTENs and
 * session advisory locks. A connection still inside a transaction block, or one that cannot be reset,
 * is closed instead (PostgreSQL rolls back whatever it had open).
 */
export async function releaseClean(client: pg.PoolClient): Promise<void> {
  if (transactionStatus(client) !== 'I') {
    client.release(true);
    return;
  }
  try {
    await client.query('DISCARD ALL');
    client.release();
  } catch (error) {
    client.release(error instanceof Error ? error : true);
  }
}
