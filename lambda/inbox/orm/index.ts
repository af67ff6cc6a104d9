/**
 * Drizzle and Kysely inside the inbox's transaction (package export `sqs-inbox/orm`): the ORM's writes
 * commit with the message's claim, or roll back with it. Over the RDS Data API, {@link transactionDataApi}
 * hands the ORM's Data API driver a client bound to the transaction; over the PostgreSQL wire protocol,
 * {@link transactionConnection} hands its node-postgres driver the transaction's own connection. The ORMs
 * are yours to install; this entry imports none of them.
 *
 * @example
 * import { drizzle } from 'drizzle-orm/aws-data-api/pg';
 * import { transactionDataApi } from 'sqs-inbox/orm';
 * export const handler = inbox<Order>({
 *   apply: async (tx, message) => {
 *     const db = drizzle({ ...transactionDataApi(tx), schema });
 *     await db.update(orders).set({ status: 'shipped' }).where(eq(orders.orderId, message.body.orderId));
 *   },
 * });
 * @module
 */
export { transactionDataApi } from './data-api-client.js';
export type { TransactionDataApi } from './data-api-client.js';
export { transactionConnection } from './wire-connection.js';
export type { TransactionConnection, TransactionQueryResult } from './wire-connection.js';
export { OrmBindingError } from './errors.js';
export { InboxError, TransactionControlError } from '../errors.js';
export type { InboxTransaction } from '../handler/options.js';
export { HintedValue } from '../transport/values.js';
export type { SqlParams } from '../transport/values.js';
