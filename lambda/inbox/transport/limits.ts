import type { SqlParams } from './values.js';

/**
 * How much one call may carry on a transport, asked by the modes and the duplicate filter before they send
 * a set of records as one statement: a set that does not fit is split ({@link fittingRuns}). Each transport
 * states its own (the Data API: a 4 MiB request and a 1 MiB answer); a transport without a limit of its own
 * fits everything.
 */
export interface RequestLimits {
  /** Whether a statement fits in one request, and its answer (`resultBytes`, as estimated by the caller) in one response. */
  fits(sql: string, params: SqlParams, resultBytes: number): boolean;
}

/** A transport that takes any statement in one call (the PostgreSQL wire protocol: its 1 GB message limit is far past any batch). */
export const NO_REQUEST_LIMITS: RequestLimits = { fits: () => true };

/**
 * The most one row of a batch claim's answer takes: its position, whether it claimed, the stored hash (32
 * bytes, as base64) and a guard column, each as a JSON Field (about 130 bytes), with room.
 */
export const CLAIM_ROW_BYTES = 160;

/**
 * Splits `items` into consecutive runs, in order, each of which `fits` (one call's request and answer). A
 * run that does not fit is halved until it does or holds one item: an item too large alone stays a run of
 * one, for its call to be refused on its own. The whole list is checked once when it fits, which is the
 * usual case.
 */
export function fittingRuns<T>(items: readonly T[], fits: (run: readonly T[]) => boolean): T[][] {
  if (items.length === 0) return [];
  if (items.length === 1 || fits(items)) return [[...items]];
  const half = Math.ceil(items.length / 2);
  return [...fittingRuns(items.slice(0, half), fits), ...fittingRuns(items.slice(half), fits)];
}
