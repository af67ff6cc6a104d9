// src/kysely-postgres.ts: Kysely over the PostgreSQL wire protocol (node-postgres), in the inbox's transaction
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { inbox } from 'sqs-inbox';
import type { InboxMessage, InboxTransaction } from 'sqs-inbox';
import { transactionConnection } from 'sqs-inbox/orm';
import { postgres } from 'sqs-inbox/postgres';
import type { Database, OrderShipped } from './schema.js';

export async function shipOrder(tx: InboxTransaction, message: InboxMessage<OrderShipped>): Promise<void> {
  // A pool of one connection: the one that holds the message's claim. The write commits with the claim, or not at all.
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: transactionConnection(tx) }) });
  await db
    .insertInto('orders')
    .values({ order_id: message.body.orderId, status: 'shipped', shipped_count: 1, last_key: message.key })
    .onConflict((conflict) => conflict.column('order_id').doUpdateSet({ shipped_count: sql`orders.shipped_count + 1`, last_key: message.key }))
    .execute();
}

// One pool per Lambda instance (PGHOST, PGUSER, ... from the environment), shared by the inbox and the ORM.
const pool = new pg.Pool({ max: 2, idleTimeoutMillis: 60_000, keepAlive: true });
// An idle connection RDS Proxy or the server closed is an 'error' on the pool, which ends the process unless
// heard: pg drops that connection itself, and the next checkout opens a new one.
pool.on('error', () => {});
export const handler = inbox<OrderShipped>({ database: postgres(pool), apply: shipOrder });
