import type pg from 'pg';
import { TEXT_TYPES } from './databases.js';
import { fromDatabase, statementTimeout } from './errors.js';
import type { BoundSql } from './parameters.js';
import type { RawResult } from './results.js';

/**
 * Runs one bound statement on a connection: extended protocol always (so PostgreSQL itself refuses a
 * second statement, whatever the scanner missed), parameter types in the Parse message, rows as text.
 * A PostgreSQL error becomes a DatabaseErrorException whose Position points into the caller's SQL.
 */
export async function runStatement(client: pg.PoolClient, bound: BoundSql): Promise<RawResult> {
  // pg sends `types` both as the Parse message's parameter type OIDs (an array) and as the row parsers
  // (getTypeParser); one object serves both. Pinned pg 8.23.1; the uuid/varchar tests guard it.
  const types = Object.assign([...bound.types], TEXT_TYPES);
  try {
    const result = await client.query({
      text: bound.text,
      values: bound.values,
      types: types as unknown as pg.CustomTypesConfig,
      rowMode: 'array',
      queryMode: 'extended',
    } as pg.QueryArrayConfig);
    return { command: result.command, rowCount: result.rowCount, fields: result.fields, rows: result.rows as Array<Array<string | null>> };
  } catch (error) {
    const position = (error as { position?: string }).position;
    if (position) (error as { position?: string }).position = String(bound.originalPosition(Number(position)));
    throw error;
  }
}

/**
 * Waits for `work` at most `timeoutMs`. On timeout the caller gets StatementTimeoutException at once;
 * unless `continueAfterTimeout`, the running statement is cancelled (and, in autocommit, rolled back).
 * The caller keeps the connection until `work` settles either way.
 */
export async function withStatementTimeout<T>(
  work: Promise<T>,
  options: { timeoutMs: number; continueAfterTimeout: boolean; pid: number; cancel: () => Promise<void> },
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), options.timeoutMs);
  });
  try {
    const outcome = await Promise.race([work.then((value) => ({ value })), timedOut]);
    if (outcome !== 'timeout') return outcome.value;
  } catch (error) {
    throw fromDatabase(error);
  } finally {
    clearTimeout(timer);
  }
  if (!options.continueAfterTimeout) {
    await options.cancel();
    await work.catch(() => {});
  }
  throw statementTimeout(options.pid);
}
