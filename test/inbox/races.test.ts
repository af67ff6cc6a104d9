import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inbox } from '../../lambda/inbox/index.js';
import type { InboxOptions } from '../../lambda/inbox/index.js';
import { inboxFixture, lambdaContext, recordingLogger, recordingMetrics, sqsRecord } from '../support/inbox.js';
import type { InboxFixture } from '../support/inbox.js';
import { rolledBackRuns } from '../support/dsql-conflicts.js';
import { seededRandom } from '../support/seed.js';

/** Names unique within the run's database, from the run's seed. */
const uniqueness = seededRandom('races');

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
    // Separate handlers with separate clients: separate Lambda instances, each counting its rolled-back runs.
    const runs = Array.from({ length: n }, () => rolledBackRuns());
    const handlers = runs.map((run) =>
      inbox<Order>({
        consumer: 'order-worker',
        database: db.instance({ onConflict: run.onConflict }),
        logger: recordingLogger(),
        metrics: recordingMetrics(),
        apply: async (tx, message) => {
          applied++;
          run.ran();
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
    // Once, and once more for each run a conflict rolled back (the DSQL profile's injected conflicts).
    expect(applied).toBe(1 + runs.reduce((sum, run) => sum + run.rolledBack, 0));
    const rows = await db.query('SELECT shipped_count FROM public.orders WHERE order_id = $1', [orderId]);
    expect(rows[0]?.shipped_count).toBe(1);
    // The losers waited for the winner's commit and then saw a duplicate: every delivery succeeds.
    for (const response of responses) expect(response.batchItemFailures).toEqual([]);
  });
});

describe('racing consumers in the batch modes', () => {
  const SHIP_CLAIMED = `INSERT INTO public.orders (order_id, status, shipped_count) SELECT body->>'orderId', 'shipped', 1 FROM claimed
    ON CONFLICT (order_id) DO UPDATE SET shipped_count = orders.shipped_count + 1`;
  const modes = {
    applyBatch: (applied: { n: number }, run: ReturnType<typeof rolledBackRuns>): Partial<InboxOptions<Order>> => ({
      applyBatch: async (tx, messages) => {
        applied.n += messages.length;
        run.ran(messages.length);
        // Hold the claims a moment so the others pile up behind their row locks.
        await tx.execute('SELECT pg_sleep(0.05)');
        await tx.execute(
          `INSERT INTO public.orders (order_id, status, shipped_count)
           SELECT order_id, 'shipped', 1 FROM jsonb_to_recordset(:orders::jsonb) AS o(order_id text)
           ON CONFLICT (order_id) DO UPDATE SET shipped_count = orders.shipped_count + 1`,
          { orders: messages.map((m) => ({ order_id: m.body.orderId })) },
        );
      },
    }),
    statementBatch: (): Partial<InboxOptions<Order>> => ({ statementBatch: { sql: SHIP_CLAIMED } }),
  };

  it.each([
    ['applyBatch', 3],
    ['applyBatch', 5],
    ['statementBatch', 3],
    ['statementBatch', 5],
  ] as const)('%s: %i handlers given the same batch, in different orders, apply each effect exactly once', async (mode, n) => {
    const prefix = `race-${mode}-${n}`;
    const records = Array.from({ length: 6 }, (_, i) => sqsRecord({ body: { orderId: `${prefix}-${i}` } }));
    const applied = { n: 0 };
    const runs = Array.from({ length: n }, () => rolledBackRuns());
    const handlers = runs.map((run) =>
      inbox<Order>({
        consumer: 'order-worker',
        database: db.instance({ onConflict: run.onConflict }),
        logger: recordingLogger(),
        metrics: recordingMetrics(),
        ...modes[mode](applied, run),
      }),
    );
    // Each handler gets the batch in another order: claims in key order keep them from deadlocking.
    const responses = await Promise.all(handlers.map((handler, h) => handler({ Records: h % 2 ? [...records].reverse() : records }, lambdaContext())));
    const rows = await db.query('SELECT shipped_count FROM public.orders WHERE order_id LIKE $1', [`${prefix}-%`]);
    expect(rows.map((row) => row.shipped_count)).toEqual(Array(6).fill(1));
    if (mode === 'applyBatch') expect(applied.n).toBe(6 + runs.reduce((sum, run) => sum + run.rolledBack, 0));
    for (const response of responses) expect(response.batchItemFailures).toEqual([]);
  });
});

describe('a claim that waited for a racing one', () => {
  it('statementBatch: a key a racing transaction claimed with another body while the batch waited is a collision, found after the statement', async () => {
    const key = `raced-${uniqueness().toString(36).slice(2)}`;
    const record = sqsRecord({ key, body: { orderId: key } });
    const others = [1, 2].map((i) => sqsRecord({ body: { orderId: `${key}-other-${i}` } }));
    const logger = recordingLogger();
    const handler = inbox<Order>({
      consumer: 'order-worker',
      database: db.target,
      logger,
      metrics: recordingMetrics(),
      statementBatch: {
        sql: `INSERT INTO public.orders (order_id, status, shipped_count) SELECT body->>'orderId', 'shipped', 1 FROM claimed`,
      },
    });
    // Another consumer's transaction holds the key, claimed for another body, while the batch's statement starts.
    const holder = new pg.Client({ connectionString: db.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query("INSERT INTO inbox.consumed_message (consumer_name, message_id, payload_sha256) VALUES ('order-worker', $1, '\\x00')", [key]);
      const running = handler({ Records: [others[0]!, record, others[1]!] }, lambdaContext());
      await new Promise((resolve) => setTimeout(resolve, 300));
      await holder.query('COMMIT');
      // Its statement's snapshot predates that commit: the claim sees no hash, the read after it sees the other body.
      expect((await running).batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    } finally {
      await holder.end();
    }
    expect(await db.query('SELECT order_id FROM public.orders WHERE order_id LIKE $1 ORDER BY 1', [`${key}%`])).toEqual([
      { order_id: `${key}-other-1` },
      { order_id: `${key}-other-2` },
    ]);
    expect(JSON.stringify(logger.lines)).toMatch(/key collision/);
  });
});
