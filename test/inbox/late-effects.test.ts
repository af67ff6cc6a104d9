import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { inbox } from '../../lambda/inbox/index.js';
import type { InboxOptions } from '../../lambda/inbox/index.js';
import { inboxFixture, lambdaContext, recordingLogger, recordingMetrics, sqsRecord } from '../support/inbox.js';
import type { InboxFixture } from '../support/inbox.js';

// A statement held on the server past the client's call timeout: the client reports the record failed,
// and nothing the server still does with the statement may land later. The hold is real: a row lock
// taken straight on PostgreSQL, which the statement waits for inside the database, as a statement
// queued behind a long transaction does on Aurora.
let db: InboxFixture;
beforeAll(async () => {
  db = await inboxFixture('late_effects');
});
afterAll(async () => db.close());
beforeEach(async () => {
  await db.query('TRUNCATE public.orders, inbox.consumed_message, inbox.parked_message');
});

type Order = { orderId: string };
const CALL_TIMEOUT_MS = 3_000;
const SHIP = "UPDATE public.orders SET status = 'shipped', shipped_count = shipped_count + 1 WHERE order_id = :orderId";

/** Creates the order and holds a row lock on it from a connection of its own, until `release()`. */
async function holdOrder(orderId: string) {
  await db.query("INSERT INTO public.orders (order_id, status, shipped_count) VALUES ($1, 'new', 0)", [orderId]);
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  await client.query('BEGIN');
  await client.query('SELECT 1 FROM public.orders WHERE order_id = $1 FOR UPDATE', [orderId]);
  return {
    release: async () => {
      await client.query('COMMIT');
      await client.end();
    },
  };
}

async function shippedCount(orderId: string): Promise<number> {
  return (await db.query('SELECT shipped_count FROM public.orders WHERE order_id = $1', [orderId]))[0]!.shipped_count;
}

function handlerFor(mode: Partial<InboxOptions<Order>>) {
  const logger = recordingLogger();
  const handler = inbox<Order>({
    consumer: 'late',
    database: db.target,
    logger,
    metrics: recordingMetrics(),
    callTimeoutMs: CALL_TIMEOUT_MS,
    ...mode,
  } as InboxOptions<Order>);
  const failures = () =>
    logger.lines.filter((line) => line.message.startsWith('record failed')).map((line) => (line.extra[0] as { error: { message: string } }).error.message);
  return { handler, failures };
}

/** Two ways to hold the effect's statement in the database past the call timeout, each released by `release()`. */
const HOLDS = {
  'a row lock': holdOrder,
  "the local server's slow-statement fault": async (orderId: string) => {
    await db.query("INSERT INTO public.orders (order_id, status, shipped_count) VALUES ($1, 'new', 0)", [orderId]);
    db.server.faults.slowStatement({ ms: 3 * CALL_TIMEOUT_MS, match: (sql) => sql.startsWith('UPDATE public.orders') });
    return { release: async () => db.server.faults.clear() };
  },
};

describe('a statement held past the call timeout', () => {
  it.each(Object.keys(HOLDS) as (keyof typeof HOLDS)[])(
    'inside a transaction (held by %s): PostgreSQL cancels it before the client gives up, the record fails as a statement error, and its redelivery is not stuck behind the claim',
    async (how) => {
      const { handler, failures } = handlerFor({ apply: async (tx, message) => void (await tx.execute(SHIP, { orderId: message.body.orderId })) });
      const hold = await HOLDS[how]('order-held');
      const record = sqsRecord({ body: { orderId: 'order-held' } });

      const first = await handler({ Records: [record] }, lambdaContext());
      await hold.release();
      const again = await handler({ Records: [{ ...record, attributes: { ...record.attributes, ApproximateReceiveCount: '2' } }] }, lambdaContext());

      expect(first.batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
      // Answered by the server (a statement error, nothing committed), not a client timeout of unknown outcome.
      expect(failures()).toEqual([expect.stringContaining('canceling statement due to statement timeout')]);
      expect(again.batchItemFailures).toEqual([]);
      expect(await shippedCount('order-held')).toBe(1);
    },
  );
});
