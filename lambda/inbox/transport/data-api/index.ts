/**
 * The Data API session (package export `sqs-inbox/data-api`): the client `inbox()` runs its calls through,
 * for code outside a handler (a script, a test's `verify`, a migration): `:name` parameters and typed rows,
 * transactions, auto-pause retries, and one failure taxonomy (`DataApiError`).
 *
 * @example
 * import { DataApiSession } from 'sqs-inbox/data-api';
 */
export { DataApiSession } from './session.js';
export { Transaction } from '../transaction.js';
export type { DatabaseTarget } from './session.js';
export type { SessionPolicy } from '../session.js';
export { dataApi, resolveTarget } from './transport.js';
export { HintedValue, uuid, decimal, json, date, time } from '../values.js';
export type { SqlParams, SqlValue } from '../values.js';
export type { Row, StatementResult } from '../results.js';
export { DatabaseCallError, DataApiError } from '../../errors.js';
export type { DataApiFailure, DatabaseFailure } from '../../errors.js';
export type { InboxSession } from '../session.js';
export type { InboxTransport } from '../transport.js';
