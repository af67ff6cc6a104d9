// src/drizzle-data-api.ts: Drizzle over the RDS Data API, in the inbox's transaction
import { sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/aws-data-api/pg';
import { inbox } from 'sqs-inbox';
import type { InboxMessage, InboxTransaction } from 'sqs-inbox';
import { transactionDataApi } from 'sqs-inbox/orm';
import { orders } from './schema.js';
import type { OrderShipped } from './schema.js';

export async function shipOrder(tx: InboxTransaction, message: InboxMessage<OrderShipped>): Promise<void> {
  // Bound to the transaction that holds the message's claim: the write commits with the claim, or not at all.
  const db = drizzle({ ...transactionDataApi(tx), schema: { orders } });
  await db
    .insert(orders)
    .values({ orderId: message.body.orderId, status: 'shipped', shippedCount: 1, lastKey: message.key })
    .onConflictDoUpdate({ target: orders.orderId, set: { shippedCount: sql`${orders.shippedCount} + 1`, lastKey: message.key } });
}

// The cluster, secret and database come from the INBOX_* variables that InboxConsumer sets.
export const handler = inbox<OrderShipped>({ apply: shipOrder });
