import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { inbox } from '../../lambda/inbox/index.js';
import { inboxFixture, lambdaContext, recordingLogger, recordingMetrics, sqsRecord } from '../support/inbox.js';
import type { InboxFixture } from '../support/inbox.js';
import { expectNoOpenTransaction, onTransport } from '../support/transport.js';
import { seededRandom } from '../support/seed.js';

/** Names unique within the run's database, from the run's seed. */
const uniqueness = seededRandom('faults');

/** The handler inbox() returns. */
type InboxHandler = ReturnType<typeof inbox>;

// Every fault is injected through the local Data API server; the SDK and PostgreSQL are real.
let db: InboxFixture;
beforeAll(async () => {
  db = await inboxFixture('faults', { transactionIdleTimeoutMs: 300 });
});
afterAll(async () => db.close());
beforeEach(async () => {
  db.server.faults.clear();
  await db.query('TRUNCATE public.orders, inbox.consumed_message, inbox.parked_message');
});

type Order = { orderId: string };
const SHIP = `INSERT INTO public.orders (order_id, status, shipped_count) VALUES (:orderId, 'shipped', 1)
  ON CONFLICT (order_id) DO UPDATE SET shipped_count = orders.shipped_count + 1`;

function handlerWith(beforeShip: (orderId: string) => Promise<void> = async () => {}, logger = recordingLogger()): InboxHandler {
  return inbox<Order>({
    consumer: 'order-worker',
    database: db.target,
    logger,
    metrics: recordingMetrics(),
    resumeDelaysMs: [50, 100, 200, 400, 800],
    apply: async (tx, message) => {
      await beforeShip(message.body.orderId);
      await tx.execute(SHIP, { orderId: message.body.orderId });
    },
  });
}

async function shipped(orderId: string): Promise<number> {
  const rows = await db.query('SELECT shipped_count FROM public.orders WHERE order_id = $1', [orderId]);
  return rows[0]?.shipped_count ?? 0;
}

/** Delivers the record until SQS would delete it (at most five times), as the event source would. */
async function openTransactions(): Promise<number> {
  const rows = await db.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'");
  return rows[0]!.n;
}

async function deliverUntilDeleted(handler: InboxHandler, orderId: string, arm: () => void, afterFirst: () => Promise<void> = async () => {}) {
  const record = sqsRecord({ body: { orderId } });
  const responses = [];
  arm();
  for (let attempt = 1; attempt <= 5; attempt++) {
    const response = await handler(
      { Records: [{ ...record, attributes: { ...record.attributes, ApproximateReceiveCount: String(attempt) } }] },
      lambdaContext(),
    );
    responses.push(response.batchItemFailures.map((f) => f.itemIdentifier));
    if (attempt === 1) await afterFirst();
    if (response.batchItemFailures.length === 0) break;
  }
  return { record, responses };
}

const SHIP_SQL = (sql: string) => sql.includes('public.orders');

// failure: how the first delivery's error is classified, where the row exists to pin that class.
const matrix: { fault: string; arm: () => void; firstFails: boolean; failure?: RegExp; beforeShip?: () => Promise<void> }[] = [
  {
    fault: '5xx before the claim (BeginTransaction unavailable)',
    arm: () => db.server.faults.serverError({ count: 1, operation: 'BeginTransaction', status: 503 }),
    firstFails: true,
  },
  {
    fault: 'throw after the claim (the claim statement answers 500)',
    arm: () => db.server.faults.serverError({ count: 1, operation: 'ExecuteStatement', status: 500 }),
    firstFails: true,
  },
  {
    fault: 'crash inside the transaction (response of the effect statement lost)',
    arm: () => db.server.faults.dropResponse({ operation: 'ExecuteStatement', match: SHIP_SQL }),
    firstFails: true,
  },
  {
    fault: 'commit refused (5xx, not executed)',
    arm: () => db.server.faults.serverError({ count: 1, operation: 'CommitTransaction', status: 500 }),
    firstFails: true,
    failure: /CommitTransaction failed \(unavailable, outcome unknown\)/,
  },
  {
    fault: 'commit fails with a network error (502 with no error type, not executed)',
    arm: () => db.server.faults.serverError({ count: 1, operation: 'CommitTransaction', status: 502 }),
    firstFails: true,
    failure: /CommitTransaction failed \(network, outcome unknown\)/,
  },
  { fault: 'commit executed but its response dropped', arm: () => db.server.faults.dropResponse({ operation: 'CommitTransaction' }), firstFails: true },
  { fault: 'auto-pause: Aurora resuming for 300 ms', arm: () => db.server.faults.autoPause({ resumeAfterMs: 300 }), firstFails: false },
  { fault: 'latency on every call', arm: () => db.server.faults.latency({ ms: 30 }), firstFails: false },
];

describe('fault matrix: the effect is applied exactly once after redelivery', () => {
  it.each(matrix)('$fault', async ({ arm, firstFails, failure }) => {
    const orderId = `order-${uniqueness().toString(36).slice(2)}`;
    const logger = recordingLogger();
    const { record, responses } = await deliverUntilDeleted(handlerWith(undefined, logger), orderId, arm, async () => {
      // Nothing of a failed attempt is left holding the claim's row lock until the idle expiry.
      await expectNoOpenTransaction(openTransactions);
    });
    expect(responses[0]).toEqual(firstFails ? [record.messageId] : []);
    if (failure) expect(JSON.stringify(logger.lines.find((line) => line.message.startsWith('record failed')))).toMatch(failure);
    expect(responses.at(-1)).toEqual([]);
    expect(await shipped(orderId)).toBe(1);
    expect(await db.query('SELECT 1 FROM inbox.consumed_message WHERE message_id = $1', [record.messageId])).toHaveLength(1);
  });

  it('a throw before the claim (unparseable key source) touches nothing and fails the record', async () => {
    const handler = inbox<Order>({
      consumer: 'order-worker',
      database: db.target,
      key: { attribute: 'order-key' },
      logger: recordingLogger(),
      metrics: recordingMetrics(),
      apply: async (tx, m) => void (await tx.execute(SHIP, { orderId: m.body.orderId })),
    });
    db.server.stats.reset();
    const record = sqsRecord({ body: { orderId: 'no-key' } });
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect(db.server.stats.total()).toBe(0);
  });

  it('transaction idle expiry rolls the claim back: the slow attempt fails, the redelivery applies once', async () => {
    let slow = true;
    const handler = handlerWith(async () => {
      if (slow) {
        slow = false;
        await new Promise((resolve) => setTimeout(resolve, 700));
      }
    });
    const { record, responses } = await deliverUntilDeleted(handler, 'order-idle', () => {});
    expect(responses[0]).toEqual([record.messageId]);
    expect(responses.at(-1)).toEqual([]);
    expect(await shipped('order-idle')).toBe(1);
  });

  it('waits out a resuming Aurora (retries on the Data API, held by RDS Proxy on the wire) and gives up at the deadline instead of waiting past it', async () => {
    const metrics = recordingMetrics();
    const handler = inbox<Order>({
      consumer: 'order-worker',
      database: db.target,
      logger: recordingLogger(),
      metrics,
      resumeDelaysMs: [50, 50, 50, 50, 50, 50, 50, 50],
      deadlineMarginMs: 1000,
      // Within the margin, as its default keeps it: a call that starts before the margin ends before the deadline.
      callTimeoutMs: 500,
      apply: async (tx, m) => void (await tx.execute(SHIP, { orderId: m.body.orderId })),
    });
    db.server.faults.autoPause({ resumeAfterMs: 200 });
    await handler({ Records: [sqsRecord({ body: { orderId: 'p1' } })] }, lambdaContext());
    // The Data API answers DatabaseResumingException, which the session retries; on the wire the proxy holds
    // the statement until Aurora has resumed, so there is nothing to retry.
    expect(metrics.published[0]!.ResumeRetries![0]! > 0).toBe(onTransport({ 'data-api': true, wire: false }));
    expect(await shipped('p1')).toBe(1);

    db.server.faults.clear();
    db.server.faults.autoPause({ resumeAfterMs: 60_000 });
    db.server.stats.reset();
    const started = Date.now();
    // 1100 ms left, 1000 ms margin: at most two 50 ms waits fit before the deadline.
    const deadlineAt = Date.now() + 1100;
    const record = sqsRecord({ body: { orderId: 'p2' } });
    const response = await handler(
      { Records: [record] },
      lambdaContext(() => deadlineAt - Date.now()),
    );
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect(Date.now() - started).toBeLessThan(1100);
    // On the wire the held BEGIN times out; with no time left before the margin it is not sent again.
    expect(db.server.stats.calls.BeginTransaction).toEqual(onTransport({ 'data-api': expect.any(Number), wire: 1 }));
    expect(await shipped('p2')).toBe(0);
  });
});
