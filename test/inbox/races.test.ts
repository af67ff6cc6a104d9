import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inbox } from '../../lambda/inbox/index.js';
import { dataApiClient, inboxFixture, lambdaContext, recordingLogger, recordingMetrics, sqsRecord } from '../support/inbox.js';
import type { InboxFixture } from '../support/inbox.js';

let db: InboxFixture;
beforeAll(async () => {
  db = await inboxFixture('races');
});
afterAll(async () => db.close());

type Order = { orderId: string };

describe('racing consumers', () => {
  it.each([2, 3, 5, 8])('%i handlers given the same message at once apply its effect exactly once', async (n) => {
    const orderId = `race-${n}`;
    const record = sqsRecord({ body: { orderId } });
    let applied = 0;
    // Separate handlers with separate clients: separate Lambda instances.
    const handlers = Array.from({ length: n }, () =>
      inbox<Order>({
        consumer: 'order-worker',
        database: { ...db.target, client: dataApiClient(db.server) },
        logger: recordingLogger(),
        metrics: recordingMetrics(),
        apply: async (tx, message) => {
          applied++;
          // Hold the claim a moment so the others pile up behind its row lock.
          await tx.execute('SELECT pg_sleep(0.05)');
          await tx.execute(
            `INSERT INTO public.orders (order_id, status, shipped_count) VALUES (:orderId, 'shipped', 1)
             ON CONFLICT (order_id) DO UPDATE SET shipped_count = orders.shipped_count + 1`,
            { orderId: message.body.orderId },
          );
        },
      }),
    );
    const responses = await Promise.all(handlers.map((handler) => handler({ Records: [record] }, lambdaContext())));
    expect(applied).toBe(1);
    const rows = await db.query('SELECT shipped_count FROM public.orders WHERE order_id = $1', [orderId]);
    expect(rows[0]?.shipped_count).toBe(1);
    // The losers waited for the winner's commit and then saw a duplicate: every delivery succeeds.
    for (const response of responses) expect(response.batchItemFailures).toEqual([]);
  });
});
