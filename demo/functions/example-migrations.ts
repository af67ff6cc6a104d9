import type { MigrationSet } from '../../lambda/inbox/sql/schema.js';

/**
 * The example order worker's own tables, versioned apart from the inbox's. `shipped_count` is how the
 * demo and the tests see a double effect: exactly-once means every shipped order has shipped_count 1.
 */
export const EXAMPLE_ORDER_MIGRATIONS: MigrationSet = {
  name: 'example-orders',
  migrations: [
    {
      version: 1,
      name: 'orders',
      statements: () => [
        `CREATE TABLE IF NOT EXISTS public.orders (
           order_id      text        PRIMARY KEY,
           status        text        NOT NULL,
           shipped_count integer     NOT NULL DEFAULT 0,
           last_key      text,
           updated_at    timestamptz NOT NULL DEFAULT now()
         )`,
      ],
    },
  ],
};
