import type { InboxMigrationSet } from '../../lib/database/migration-sets.js';

/**
 * The example order worker's own tables, versioned apart from the inbox's. `shipped_count` is how the
 * demo and the tests see a double effect: exactly-once means every shipped order has shipped_count 1.
 * The example app's own set, passed as a user's app passes its own: a value of InboxDatabase `migrations` in
 * the demo stacks, and of the runtime's `migrate()` in the tests (its statements are plain strings for that).
 */
export const EXAMPLE_ORDER_MIGRATIONS: InboxMigrationSet = {
  name: 'example-orders',
  migrations: [
    {
      version: 1,
      name: 'orders',
      statements: [
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
