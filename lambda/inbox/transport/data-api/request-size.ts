import { toSqlParameters } from './parameters.js';
import type { SqlParams } from '../values.js';
import type { RequestLimits } from '../limits.js';

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

/**
 * The Data API answers at most 1 MiB; a larger result fails the call with "Database response exceeded
 * size limit" (Aurora User Guide, "Limitations for the Amazon RDS Data API"; data-api.md §3.4). What the
 * rows may take, the column metadata and the JSON around them aside.
 */
export const RESULT_BUDGET_BYTES = 1024 * 1024 - 64 * 1024;

/** The bytes `sql` and `params` take in an ExecuteStatement body, as the SDK writes them. */
export function statementBytes(sql: string, params: SqlParams): number {
  const body = JSON.stringify({ sql, parameters: toSqlParameters(params) }, (_, value: unknown) =>
    // The SDK sends a blob as base64 and a BigInt as its digits; JSON.stringify would spell the first out
    // byte by byte and throw on the second.
    value instanceof Uint8Array ? Buffer.from(value).toString('base64') : typeof value === 'bigint' ? value.toString() : value,
  );
  return Buffer.byteLength(body, 'utf8');
}

/** Whether a statement fits in one request, and its answer (`resultBytes`, as estimated by the caller) in one response. */
export function fitsOneCall(sql: string, params: SqlParams, resultBytes: number): boolean {
  return resultBytes <= RESULT_BUDGET_BYTES && statementBytes(sql, params) <= STATEMENT_BUDGET_BYTES;
}

/** The Data API's limits: one request of 4 MiB, one answer of 1 MiB. */
export const DATA_API_LIMITS: RequestLimits = { fits: fitsOneCall };
