import { scanSql } from '../transport/sql-scanner.js';
import { TransactionControlError } from './errors.js';

/**
 * A statement that would end or replace the inbox's transaction: BEGIN, START TRANSACTION, COMMIT, END,
 * ROLLBACK (but ROLLBACK TO a savepoint), ABORT, PREPARE TRANSACTION, and their PREPARED forms.
 */
const CONTROL = /^(?:begin|start\s+transaction|commit|end|abort|rollback(?!\s+(?:work\s+|transaction\s+)?to\b)|prepare\s+transaction)\b/i;
const LEADING_COMMENTS = /^(?:\s+|--[^\n]*(?:\n|$)|\/\*[\s\S]*?\*\/)*/;

/**
 * Refuses, before it is sent, an ORM's statement that would commit or roll back the inbox's transaction
 * behind its back, or a text of several statements (one of which could).
 */
export function refuseTransactionControl(sql: string): void {
  const statement = sql.replace(LEADING_COMMENTS, '');
  const keyword = CONTROL.exec(statement)?.[0];
  if (keyword !== undefined) throw new TransactionControlError(keyword.toUpperCase().replace(/\s+/g, ' '));
  if (scanSql(sql).multipleStatements) throw new TransactionControlError('A text of several statements', 'send one statement per call');
}
