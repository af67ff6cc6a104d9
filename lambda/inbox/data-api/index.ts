/**
 * The Data API session (package export `sqs-inbox/data-api`): the client `inbox()` runs its calls through,
 * for code outside a handler (a script, a test's `verify`, a migration): `:name` parameters and typed rows,
 * transactions, auto-pause retries, and one failure taxonomy (`DataApiError`).
 *
 * @example
 * import { DataApiSession } from 'sqs-inbox/data-api';
 */
export { DataApiSession, Transaction } from './session.js';
export type { DatabaseTarget, SessionPolicy } from './session.js';
export { resolveTarget } from '../handler/options.js';
export { HintedValue, uuid, decimal, json, date, time } from './parameters.js';
export type { SqlParams, SqlValue } from './parameters.js';
export type { Row, StatementResult } from './results.js';
export { DatabaseCallError, DataApiError } from '../errors.js';
export type { DataApiFailure, DatabaseFailure } from '../errors.js';
export type { InboxSession } from '../transport/session.js';
export type { InboxTarget } from '../transport/open-session.js';
