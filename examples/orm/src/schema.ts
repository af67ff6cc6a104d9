// src/schema.ts: the orders table, as Drizzle and Kysely see it
import { integer, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import type { Generated } from 'kysely';

export const orders = pgTable('orders', {
  orderId: text('order_id').primaryKey(),
  status: text('status').notNull(),
  shippedCount: integer('shipped_count').notNull().default(0),
  lastKey: text('last_key'),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
});

export interface Database {
  orders: {
    order_id: string;
    status: string;
    shipped_count: Generated<number>;
    last_key: string | null;
    updated_at: Generated<Date>;
  };
}

export interface OrderShipped {
  readonly orderId: string;
}
