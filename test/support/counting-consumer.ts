import { inbox } from '../../lambda/inbox/index.js';
import type { KeyStrategy } from '../../lambda/inbox/prepare/keys.js';
import type { InboxFixture } from './inbox.js';
import { recordingLogger, recordingMetrics } from './inbox.js';

/** The table a counting consumer writes: one row per order, `n` the times its effect was applied. */
export async function createAppliedTable(db: InboxFixture): Promise<void> {
  await db.query('CREATE TABLE public.applied (order_id text PRIMARY KEY, n int NOT NULL DEFAULT 1)');
}

/** How many times the effect of `orderId` was applied. */
export async function timesApplied(db: InboxFixture, orderId: string): Promise<number> {
  return (await db.query<{ n: number }>('SELECT n FROM public.applied WHERE order_id = $1', [orderId]))[0]?.n ?? 0;
}

/** An inbox consumer of `{ orderId }` messages whose effect counts each order in public.applied. */
export function countingConsumer(db: InboxFixture, consumer: string, key: KeyStrategy) {
  return inbox<{ orderId: string }>({
    consumer,
    key,
    database: db.target,
    logger: recordingLogger(),
    metrics: recordingMetrics(),
    apply: async (tx, message) => {
      await tx.execute('INSERT INTO public.applied (order_id) VALUES (:id) ON CONFLICT (order_id) DO UPDATE SET n = applied.n + 1', {
        id: message.body.orderId,
      });
    },
  });
}
