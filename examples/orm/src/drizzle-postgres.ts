// src/drizzle-postgres.ts: Drizzle over the PostgreSQL wire protocol (node-postgres), in the inbox's transaction
import { sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import type { PoolClient } from 'pg';
import { inbox } from 'sqs-inbox';
import type { InboxMessage, InboxTransaction } from 'sqs-inbox';
import { transactionConnection } from 'sqs-inbox/orm';
import { postgres } from 'sqs-inbox/postgres';
import { orders } from './schema.js';
import type { OrderShipped } from './schema.js';

export async function shipOrder(tx: InboxTransaction, message: InboxMessage<OrderShipped>): Promise<void> {
  // The connection that holds the message's claim: the write commits with the claim, or not at all.
  const db = drizzle({ client: transactionConnection<PoolClient>(tx), schema: { orders } });
  await db
    .insert(orders)
    .values({ orderId: message.body.orderId, status: 'shipped', shippedCount: 1, lastKey: message.key })
    .onConflictDoUpdate({ target: orders.orderId, set: { shippedCount: sql`${orders.shippedCount} + 1`, lastKey: message.key } });
}

// One pool per Lambda instance (PGHOST, PGUSER, ... from the environment), shared by the inbox and the ORM.
const pool = new pg.Pool({ max: 2, idleTimeoutMillis: 60_000, keepAlive: true });
// An idle connection RDS Proxy or the server closed is an 'error' on the pool, which ends the process unless
// heard: pg drops that connection itself, and the next checkout opens a new one.
pool.on('error', () => {});
export const handler = inbox<OrderShipped>({ database: postgres(pool), apply: shipOrder });
