import { toSqlParameters } from './data-api.js';
import type { SqlParams } from './data-api.js';

/**
 * The Data API refuses an HTTP request over 4 MiB, headers and JSON included (Aurora User Guide, "Quotas
 * and constraints for Amazon Aurora"; shared/reference/data-api.md §3.4).
 */
export const REQUEST_LIMIT_BYTES = 4 * 1024 * 1024;

/**
 * What a statement's `sql` and `parameters` may take of a request: the rest is kept for the headers (the
 * SigV4 authorization and user agent, under 2 KB) and the call's other members (the ARNs, the database
 * name, the result options, under 1 KB).
 */
export const STATEMENT_BUDGET_BYTES = REQUEST_LIMIT_BYTES - 16 * 1024;

/** The bytes `sql` and `params` take in an ExecuteStatement body, as the SDK writes them. */
export function statementBytes(sql: string, params: SqlParams): number {
  const body = JSON.stringify({ sql, parameters: toSqlParameters(params) }, (_, value: unknown) =>
    // The SDK sends a blob as base64 and a BigInt as its digits; JSON.stringify would spell the first out
    // byte by byte and throw on the second.
    value instanceof Uint8Array ? Buffer.from(value).toString('base64') : typeof value === 'bigint' ? value.toString() : value,
  );
  return Buffer.byteLength(body, 'utf8');
}

/**
 * Splits `items` into consecutive runs, in order, whose request each takes at most `budget` bytes
 * (`bytes` measures the request of a run). A run that does not fit is halved until it does or holds one
 * item: an item too large alone stays a run of one, for its request to be refused on its own. The whole
 * list is measured once when it fits, which is the usual case.
 */
export function fittingRuns<T>(items: readonly T[], bytes: (run: readonly T[]) => number, budget = STATEMENT_BUDGET_BYTES): T[][] {
  if (items.length <= 1 || bytes(items) <= budget) return items.length === 0 ? [] : [[...items]];
  const half = Math.ceil(items.length / 2);
  return [...fittingRuns(items.slice(0, half), bytes, budget), ...fittingRuns(items.slice(half), bytes, budget)];
}
