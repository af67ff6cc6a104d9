// src/kysely-data-api.ts: Kysely over the RDS Data API (kysely-data-api), in the inbox's transaction
import { Kysely, sql } from 'kysely';
import { DataApiDialect } from 'kysely-data-api';
import { inbox } from 'sqs-inbox';
import type { InboxMessage, InboxTransaction } from 'sqs-inbox';
import { transactionDataApi } from 'sqs-inbox/orm';
import type { Database, OrderShipped } from './schema.js';

export async function shipOrder(tx: InboxTransaction, message: InboxMessage<OrderShipped>): Promise<void> {
  // Bound to the transaction that holds the message's claim: the write commits with the claim, or not at all.
  const db = new Kysely<Database>({ dialect: new DataApiDialect({ mode: 'postgres', driver: transactionDataApi(tx) }) });
  await db
    .insertInto('orders')
    .values({ order_id: message.body.orderId, status: 'shipped', shipped_count: 1, last_key: message.key })
    .onConflict((conflict) => conflict.column('order_id').doUpdateSet({ shipped_count: sql`orders.shipped_count + 1`, last_key: message.key }))
    .execute();
}

// The cluster, secret and database come from the INBOX_* variables that InboxConsumer sets.
export const handler = inbox<OrderShipped>({ apply: shipOrder });
