import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PermanentError } from '../../lambda/inbox/index.js';
import { inbox } from '../../lambda/inbox/index.js';
import type { InboxMessage, InboxOptions } from '../../lambda/inbox/index.js';
import { claimSet } from '../../lambda/inbox/modes/statement-set.js';
import { driverOf } from '../../lambda/inbox/transport/transport.js';
import { inboxTables } from '../../lambda/inbox/sql/schema.js';
import { markKnownClaims } from '../../lambda/inbox/prepare/duplicate-filter.js';
import type { PreparedRecord } from '../../lambda/inbox/prepare/prepare.js';
import { inboxFixture, lambdaContext, recordingLogger, recordingMetrics, sqsRecord } from '../support/inbox.js';
import type { InboxFixture } from '../support/inbox.js';
import { CURRENT, onTransport, TRANSPORT } from '../support/transport.js';
import { withConflicts } from '../support/dsql-conflicts.js';
import { parkedMessages } from '../../lambda/inbox/parked/parking.js';
import { seededRandom } from '../support/seed.js';

/** Names unique within the run's database, from the run's seed. */
const uniqueness = seededRandom('batch-modes');

/** The handler inbox() returns. */
type InboxHandler = ReturnType<typeof inbox>;

// The batch modes against the local Data API and a real PostgreSQL. Calls are counted at the server.
let db: InboxFixture;
beforeAll(async () => {
  db = await inboxFixture('batch_modes', { transactionIdleTimeoutMs: 2_000 });
});
afterAll(async () => db.close());
beforeEach(async () => {
  db.server.faults.clear();
  await db.query('TRUNCATE public.orders, inbox.consumed_message, inbox.parked_message');
  db.server.stats.reset();
});

type Order = { orderId: string; poison?: boolean };

// The same effect, written for each mode. A second application shows as shipped_count 2; a poison order
// breaks a CHECK-like rule (a NULL status) so that PostgreSQL refuses the statement it is part of.
const SHIP_ONE = `INSERT INTO public.orders (order_id, status, shipped_count) VALUES (:orderId, :status, 1)
  ON CONFLICT (order_id) DO UPDATE SET shipped_count = orders.shipped_count + 1`;
const SHIP_SET = `INSERT INTO public.orders (order_id, status, shipped_count)
  SELECT o.order_id, CASE WHEN o.poison THEN NULL ELSE 'shipped' END, 1 FROM jsonb_to_recordset(:orders::jsonb) AS o(order_id text, poison boolean)
  ON CONFLICT (order_id) DO UPDATE SET shipped_count = orders.shipped_count + 1`;
const SHIP_CLAIMED = `INSERT INTO public.orders (order_id, status, shipped_count)
  SELECT body->>'orderId', CASE WHEN (body->>'poison')::boolean THEN NULL ELSE 'shipped' END, 1 FROM claimed
  ON CONFLICT (order_id) DO UPDATE SET shipped_count = orders.shipped_count + 1`;

const MODES = {
  transaction: {
    apply: async (tx, m) => void (await tx.execute(SHIP_ONE, { orderId: m.body.orderId, status: m.body.poison ? null : 'shipped' })),
  },
  statement: {
    statement: {
      sql: `INSERT INTO public.orders (order_id, status, shipped_count) SELECT :orderId, :status, 1 FROM claimed
            ON CONFLICT (order_id) DO UPDATE SET shipped_count = orders.shipped_count + 1`,
      params: (m) => ({ orderId: m.body.orderId, status: m.body.poison ? null : 'shipped' }),
    },
  },
  'batch-transaction': {
    applyBatch: async (tx, messages) =>
      void (await tx.execute(SHIP_SET, { orders: messages.map((m) => ({ order_id: m.body.orderId, poison: m.body.poison ?? false })) })),
  },
  'batch-statement': { statementBatch: { sql: SHIP_CLAIMED } },
} satisfies Record<string, Partial<InboxOptions<Order>>>;
type Mode = keyof typeof MODES;
const ALL_MODES = Object.keys(MODES) as Mode[];
const BATCH_MODES: Mode[] = ['batch-transaction', 'batch-statement'];
/** The calls one more run of a mode's transaction costs, after a conflict (the dsql-conflicts project). */
const RERUN: Record<Mode, number> = { transaction: 4, statement: 1, 'batch-transaction': 4, 'batch-statement': 1 };

function handlerFor(mode: Mode, extra: Partial<InboxOptions<Order>> = {}) {
  const logger = recordingLogger();
  const metrics = recordingMetrics();
  const handler: InboxHandler = inbox<Order>({
    consumer: 'order-worker',
    database: db.target,
    logger,
    metrics,
    ...MODES[mode],
    ...extra,
  } as InboxOptions<Order>);
  return { handler, logger, metrics };
}

const orders = (prefix: string, n: number, extra: Partial<Parameters<typeof sqsRecord>[0]> = {}) =>
  Array.from({ length: n }, (_, i) => sqsRecord({ body: { orderId: `${prefix}-${i}` }, ...extra }));

async function shippedCounts(prefix: string): Promise<Record<string, number>> {
  const rows = await db.query('SELECT order_id, shipped_count FROM public.orders WHERE order_id LIKE $1 ORDER BY order_id', [`${prefix}-%`]);
  return Object.fromEntries(rows.map((row) => [row.order_id, row.shipped_count]));
}

const redelivered = (records: ReturnType<typeof sqsRecord>[]) =>
  records.map((record) => ({ ...record, attributes: { ...record.attributes, ApproximateReceiveCount: '2' } }));

describe('calls per message, counted at the server (batch of 10, standard queue)', () => {
  const expected: Record<Mode, { fresh: number; duplicates: number }> = {
    transaction: { fresh: 40, duplicates: 1 }, // k + 3 per record, k = 1; the filter settles a redelivered batch in 1 call
    statement: { fresh: 10, duplicates: 1 },
    'batch-transaction': { fresh: 4, duplicates: 1 }, // Begin, claim, effect, Commit
    'batch-statement': { fresh: 1, duplicates: 1 },
  };

  it.each(ALL_MODES)('%s', async (mode) => {
    const { handler } = handlerFor(mode);
    const batch = orders(`calls-${mode}`, 10);
    expect((await handler({ Records: batch }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(db.server.stats.total()).toBe(withConflicts(db, expected[mode].fresh, RERUN[mode]));
    db.server.stats.reset();
    expect((await handler({ Records: redelivered(batch) }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(db.server.stats.total()).toBe(withConflicts(db, expected[mode].duplicates, RERUN[mode]));
    expect(Object.values(await shippedCounts(`calls-${mode}`))).toEqual(Array(10).fill(1));
  });

  it.each(['transaction', 'batch-transaction'] as Mode[])('%s without the filter still applies a redelivered batch once, through each claim', async (mode) => {
    const { handler } = handlerFor(mode, { duplicateFilter: 'never' });
    const batch = orders(`nofilter-${mode}`, 5);
    await handler({ Records: batch }, lambdaContext());
    db.server.stats.reset();
    expect((await handler({ Records: redelivered(batch) }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(db.server.stats.total()).toBe(withConflicts(db, mode === 'transaction' ? 15 : 3, RERUN[mode]));
    expect(Object.values(await shippedCounts(`nofilter-${mode}`))).toEqual(Array(5).fill(1));
  });

  it("'auto' skips the lookup for a first delivery, where duplicates are unlikely; 'always' makes it", async () => {
    const auto = handlerFor('statement');
    await auto.handler({ Records: orders('auto-first', 3) }, lambdaContext());
    expect(db.server.stats.total()).toBe(withConflicts(db, 3, RERUN.statement));
    db.server.stats.reset();
    const always = handlerFor('statement', { duplicateFilter: 'always' });
    await always.handler({ Records: orders('always-first', 3) }, lambdaContext());
    expect(db.server.stats.total()).toBe(withConflicts(db, 4, RERUN.statement));
  });
});

describe('a poison message in a batch fails alone', () => {
  it.each(BATCH_MODES)(
    '%s: the batch falls back to one record at a time; only the poison fails; nothing applies twice; the fallback is counted',
    async (mode) => {
      const { handler, logger, metrics } = handlerFor(mode);
      const batch = orders(`poison-${mode}`, 5);
      const poison = sqsRecord({ body: { orderId: `poison-${mode}-x`, poison: true } });
      const response = await handler({ Records: [...batch.slice(0, 2), poison, ...batch.slice(2)] }, lambdaContext());
      expect(response.batchItemFailures).toEqual([{ itemIdentifier: poison.messageId }]);
      expect(await shippedCounts(`poison-${mode}`)).toEqual(Object.fromEntries(batch.map((_, i) => [`poison-${mode}-${i}`, 1])));
      expect(JSON.stringify(logger.lines)).toMatch(/the batch failed as a whole; each of its records runs alone/);
      expect(metrics.published[0]).toMatchObject({ BatchSets: [1], BatchFallbacks: [1] });
    },
  );

  it.each(BATCH_MODES)('%s: a PermanentError thrown for one message is parked alone with park', async (mode) => {
    const options: Partial<InboxOptions<Order>> =
      mode === 'batch-transaction'
        ? {
            applyBatch: async (tx, messages) => {
              if (messages.some((m) => m.body.poison)) throw new PermanentError('order refused');
              await tx.execute(SHIP_SET, { orders: messages.map((m) => ({ order_id: m.body.orderId, poison: false })) });
            },
          }
        : {};
    const { handler, metrics } = handlerFor(mode, { onPermanentError: 'park', ...options });
    const batch = orders(`park-${mode}`, 3);
    const poison = sqsRecord({ body: { orderId: `park-${mode}-x`, poison: true } });
    const response = await handler({ Records: [poison, ...batch] }, lambdaContext());
    if (mode === 'batch-statement') {
      // A statement error is not permanent: it fails (and would reach the DLQ), it is not parked.
      expect(response.batchItemFailures).toEqual([{ itemIdentifier: poison.messageId }]);
    } else {
      expect(response.batchItemFailures).toEqual([]);
      expect(await db.query('SELECT sqs_message_id, error_class FROM inbox.parked_message')).toEqual([
        { sqs_message_id: poison.messageId, error_class: 'PermanentError' },
      ]);
      expect(metrics.published[0]!.Parked).toEqual([1]);
    }
    expect(Object.values(await shippedCounts(`park-${mode}`))).toEqual([1, 1, 1]);
  });
});

describe('keys in a batch', () => {
  it.each(ALL_MODES)('%s: two records with one key and one body apply once and both succeed', async (mode) => {
    const { handler } = handlerFor(mode);
    const twin = sqsRecord({ key: `twin-${mode}`, body: { orderId: `twin-${mode}-0` } });
    const copy = { ...twin, messageId: `${twin.messageId}-copy` };
    const others = orders(`twin-${mode}-o`, 2);
    expect((await handler({ Records: [twin, copy, ...others] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(await shippedCounts(`twin-${mode}`)).toMatchObject({ [`twin-${mode}-0`]: 1, [`twin-${mode}-o-0`]: 1, [`twin-${mode}-o-1`]: 1 });
  });

  it.each(ALL_MODES)(
    '%s: a new message reusing a claimed key with another body fails alone (retry) or is parked (park), and is logged and counted',
    async (mode) => {
      for (const onPermanentError of ['retry', 'park'] as const) {
        await db.query('TRUNCATE public.orders, inbox.consumed_message, inbox.parked_message');
        const { handler, logger, metrics } = handlerFor(mode, { onPermanentError: onPermanentError === 'park' ? 'park' : 'retry' });
        await handler({ Records: [sqsRecord({ key: 'shared', body: { orderId: `first-${mode}` } })] }, lambdaContext());
        const reuse = sqsRecord({ key: 'shared', body: { orderId: `second-${mode}` } });
        const others = orders(`coll-${mode}`, 3);
        const response = await handler({ Records: [others[0]!, reuse, ...others.slice(1)] }, lambdaContext());
        expect(response.batchItemFailures).toEqual(onPermanentError === 'retry' ? [{ itemIdentifier: reuse.messageId }] : []);
        expect(await db.query('SELECT order_id FROM public.orders WHERE order_id = $1', [`second-${mode}`])).toEqual([]);
        expect(Object.values(await shippedCounts(`coll-${mode}`))).toEqual([1, 1, 1]);
        expect(JSON.stringify(logger.lines)).toMatch(/key collision/);
        expect(metrics.published.at(-1)!.KeyCollisions).toEqual([1]);
        if (onPermanentError === 'park') {
          expect(await db.query('SELECT error_class FROM inbox.parked_message')).toEqual([{ error_class: 'KeyCollisionError' }]);
        }
      }
    },
  );
});

describe('FIFO in the batch modes', () => {
  it.each(BATCH_MODES)('%s: a failure skips the rest of its group, other groups are applied, order is kept', async (mode) => {
    const { handler } = handlerFor(mode);
    const g1 = [0, 1, 2].map((i) => sqsRecord({ groupId: 'g1', body: { orderId: `fifo-${mode}-g1-${i}`, poison: i === 1 } }));
    const g2 = [0, 1].map((i) => sqsRecord({ groupId: 'g2', body: { orderId: `fifo-${mode}-g2-${i}` } }));
    const response = await handler({ Records: [g1[0]!, g2[0]!, g1[1]!, g2[1]!, g1[2]!] }, lambdaContext());
    expect(new Set(response.batchItemFailures.map((f) => f.itemIdentifier))).toEqual(new Set([g1[1]!.messageId, g1[2]!.messageId]));
    expect(Object.keys(await shippedCounts(`fifo-${mode}`)).sort()).toEqual([`fifo-${mode}-g1-0`, `fifo-${mode}-g2-0`, `fifo-${mode}-g2-1`]);
  });

  it.each(BATCH_MODES)('%s: a collision in a group keeps the later records of that group from being applied', async (mode) => {
    const { handler } = handlerFor(mode);
    await handler({ Records: [sqsRecord({ key: 'fifo-shared', groupId: 'g0', body: { orderId: `fc-${mode}-first` } })] }, lambdaContext());
    const reuse = sqsRecord({ key: 'fifo-shared', groupId: 'g1', body: { orderId: `fc-${mode}-second` } });
    const after = sqsRecord({ groupId: 'g1', body: { orderId: `fc-${mode}-after` } });
    const other = sqsRecord({ groupId: 'g2', body: { orderId: `fc-${mode}-other` } });
    const response = await handler({ Records: [reuse, other, after] }, lambdaContext());
    expect(new Set(response.batchItemFailures.map((f) => f.itemIdentifier))).toEqual(new Set([reuse.messageId, after.messageId]));
    expect(Object.keys(await shippedCounts(`fc-${mode}`)).sort()).toEqual([`fc-${mode}-first`, `fc-${mode}-other`]);
  });

  it.each(BATCH_MODES)('%s: a record that cannot be parsed keeps the rest of its group out of the batch, unapplied', async (mode) => {
    const { handler } = handlerFor(mode);
    const malformed = sqsRecord({ groupId: 'g1', body: 'not json' });
    const after = sqsRecord({ groupId: 'g1', body: { orderId: `pf-${mode}-g1-after` } });
    const others = [0, 1].map((i) => sqsRecord({ groupId: 'g2', body: { orderId: `pf-${mode}-g2-${i}` } }));
    const response = await handler({ Records: [malformed, others[0]!, after, others[1]!] }, lambdaContext());
    expect(new Set(response.batchItemFailures.map((f) => f.itemIdentifier))).toEqual(new Set([malformed.messageId, after.messageId]));
    expect(Object.keys(await shippedCounts(`pf-${mode}`)).sort()).toEqual([`pf-${mode}-g2-0`, `pf-${mode}-g2-1`]);
  });

  it.each(BATCH_MODES)('%s: with stop-batch, a record that cannot be parsed stops every record after it, in every group', async (mode) => {
    const { handler } = handlerFor(mode, { fifo: { onFailure: 'stop-batch' }, concurrency: 1 });
    const first = sqsRecord({ groupId: 'g0', body: { orderId: `sb-${mode}-g0-0` } });
    const malformed = sqsRecord({ groupId: 'g1', body: 'not json' });
    const later = [sqsRecord({ groupId: 'g2', body: { orderId: `sb-${mode}-g2-0` } }), sqsRecord({ groupId: 'g0', body: { orderId: `sb-${mode}-g0-1` } })];
    const response = await handler({ Records: [first, malformed, ...later] }, lambdaContext());
    expect(response.batchItemFailures.map((f) => f.itemIdentifier)).not.toContain(first.messageId);
    expect(response.batchItemFailures.map((f) => f.itemIdentifier)).toContain(malformed.messageId);
    expect(response.batchItemFailures.map((f) => f.itemIdentifier)).toContain(later[0]!.messageId);
    expect(Object.keys(await shippedCounts(`sb-${mode}-g2`))).toEqual([]);
  });

  it('batch-transaction gives applyBatch the messages in batch order', async () => {
    const seen: string[][] = [];
    const { handler } = handlerFor('batch-transaction', {
      applyBatch: async (tx, messages) => {
        seen.push(messages.map((m) => m.body.orderId));
        await tx.execute('SELECT 1');
      },
    });
    const records = ['a', 'b', 'c', 'd'].map((id, i) => sqsRecord({ groupId: `g${i % 2}`, body: { orderId: id } }));
    await handler({ Records: records }, lambdaContext());
    // Once, and on the DSQL profile again, in the same order, for each conflict that rolled the set back.
    expect(seen).toEqual(Array(withConflicts(db, 1, 1)).fill(['a', 'b', 'c', 'd']));
  });
});

describe('faults on the batch', () => {
  // `resent`: the modes in which the failed call is safe to send again (a gated statement: sent twice, it
  // claims once), and is, because the lost response reached the client as a reset connection.
  const faults: { fault: string; modes: Mode[]; arm: () => void; resent?: Mode[] }[] = [
    {
      fault: 'the batch commit answers 500 (outcome unknown)',
      modes: ['batch-transaction'],
      arm: () => db.server.faults.serverError({ count: 1, operation: 'CommitTransaction', status: 500 }),
    },
    {
      fault: 'the batch commit fails with a network error (502, no error type)',
      modes: ['batch-transaction'],
      arm: () => db.server.faults.serverError({ count: 1, operation: 'CommitTransaction', status: 502 }),
    },
    {
      fault: 'the batch commit runs but its response is lost',
      modes: ['batch-transaction'],
      arm: () => db.server.faults.dropResponse({ operation: 'CommitTransaction' }),
    },
    // The wire sends a gated statement once (its connection is checked before use instead): the lost answer
    // fails the set, and the redelivery finds the claims.
    {
      fault: 'the batch claim runs but its response is lost',
      modes: BATCH_MODES,
      resent: onTransport<Mode[]>({ 'data-api': ['batch-statement'], wire: [] }),
      arm: () => db.server.faults.dropResponse({ operation: 'ExecuteStatement', match: (sql) => sql.includes('inbox_input') }),
    },
    {
      fault: 'the batch effect runs but its response is lost',
      modes: ['batch-transaction'],
      arm: () => db.server.faults.dropResponse({ operation: 'ExecuteStatement', match: (sql) => sql.includes('CASE WHEN o.poison') }),
    },
    { fault: 'the database is unavailable for the first call', modes: BATCH_MODES, arm: () => db.server.faults.serverError({ count: 1, status: 503 }) },
    {
      fault: 'the batch statement answers 500 (outcome unknown)',
      modes: ['batch-statement'],
      arm: () => db.server.faults.serverError({ count: 1, operation: 'ExecuteStatement', status: 500 }),
    },
  ];
  const cases = faults.flatMap((fault) => fault.modes.map((mode) => ({ ...fault, mode })));

  it.each(cases)(
    '$mode: $fault: the first delivery fails (or its safe resend settles it), redeliveries until deleted apply each record exactly once',
    async ({ arm, mode, resent }) => {
      const { handler } = handlerFor(mode, { callTimeoutMs: 1_000 });
      const prefix = `fault-${mode}-${uniqueness().toString(36).slice(2, 8)}`;
      const batch = orders(prefix, 4);
      arm();
      let pending = batch;
      for (let attempt = 1; attempt <= 4 && pending.length > 0; attempt++) {
        const delivery = pending.map((record) => ({ ...record, attributes: { ...record.attributes, ApproximateReceiveCount: String(attempt) } }));
        const failed = new Set((await handler({ Records: delivery }, lambdaContext())).batchItemFailures.map((f) => f.itemIdentifier));
        // Every record of the set shares its fate: the outcome is unknown for all of them, or none ran.
        if (attempt === 1) expect(failed.size).toBe(resent?.includes(mode) ? 0 : 4);
        pending = pending.filter((record) => failed.has(record.messageId));
      }
      expect(pending).toEqual([]);
      expect(Object.values(await shippedCounts(prefix))).toEqual([1, 1, 1, 1]);
    },
  );
});

describe('replaying a parked message in the batch modes', () => {
  it.each(BATCH_MODES)('%s: applies the effect once, through the same batch effect', async (mode) => {
    let strict = true;
    const { handler } = handlerFor(mode, {
      onPermanentError: 'park',
      parse: (body) => {
        if (strict) throw new Error('unknown schema');
        return JSON.parse(body);
      },
    });
    const record = sqsRecord({ body: { orderId: `replay-${mode}-0` } });
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([]);
    strict = false;
    const [parked] = await parkedMessages(handler).list();
    expect(await parkedMessages(handler).replay(parked!.id)).toBe('replayed');
    expect(await shippedCounts(`replay-${mode}`)).toEqual({ [`replay-${mode}-0`]: 1 });
    expect(await parkedMessages(handler).replay(parked!.id)).toBe('already-replayed');
    expect(await shippedCounts(`replay-${mode}`)).toEqual({ [`replay-${mode}-0`]: 1 });
  });

  it('batch-statement: the replay binds the params computed from the parked message itself', async () => {
    let strict = true;
    const { handler } = handlerFor('batch-statement', {
      onPermanentError: 'park',
      parse: (body) => {
        if (strict) throw new Error('unknown schema');
        return JSON.parse(body);
      },
      statementBatch: {
        // The shipped count comes from the params: how many messages the statement was given.
        sql: "INSERT INTO public.orders (order_id, status, shipped_count) SELECT body->>'orderId', 'shipped', :given FROM claimed",
        params: (messages) => ({ given: messages.length }),
      },
    });
    const record = sqsRecord({ body: { orderId: 'replay-params-0' } });
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([]);
    strict = false;
    const [parked] = await parkedMessages(handler).list();
    expect(await parkedMessages(handler).replay(parked!.id)).toBe('replayed');
    expect(await shippedCounts('replay-params')).toEqual({ 'replay-params-0': 1 });
  });
});

describe('the batch modes, the rest of their contract', () => {
  it('batch-transaction: a poison record that only fails at commit (a deferred constraint) still fails alone', async () => {
    await db.query(`CREATE TABLE IF NOT EXISTS public.deferred_orders (order_id text PRIMARY KEY,
      CONSTRAINT not_poison CHECK (order_id NOT LIKE '%-x'))`);
    await db.query(`CREATE TABLE IF NOT EXISTS public.deferred_parent (order_id text PRIMARY KEY)`);
    await db.query(`DO $$ BEGIN
      ALTER TABLE public.deferred_orders ADD CONSTRAINT parent_fk FOREIGN KEY (order_id) REFERENCES public.deferred_parent DEFERRABLE INITIALLY DEFERRED;
      EXCEPTION WHEN duplicate_object THEN NULL; END $$`);
    await db.query("INSERT INTO public.deferred_parent SELECT 'deferred-' || g FROM generate_series(0, 3) g ON CONFLICT DO NOTHING");
    const { handler } = handlerFor('batch-transaction', {
      applyBatch: async (tx, messages) => {
        await tx.execute('INSERT INTO public.deferred_orders (order_id) SELECT order_id FROM jsonb_to_recordset(:o::jsonb) AS o(order_id text)', {
          o: messages.map((m) => ({ order_id: m.body.orderId })),
        });
      },
    });
    // deferred-9 has no parent row: the foreign key, checked only at COMMIT, fails the whole batch's commit.
    const batch = [0, 1, 9, 2].map((i) => sqsRecord({ body: { orderId: `deferred-${i}` } }));
    const response = await handler({ Records: batch }, lambdaContext());
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: batch[2]!.messageId }]);
    expect((await db.query('SELECT order_id FROM public.deferred_orders ORDER BY 1')).map((r) => r.order_id)).toEqual([
      'deferred-0',
      'deferred-1',
      'deferred-2',
    ]);
  });

  it('batch-transaction: a set holding fresh records and duplicates commits the fresh ones (first delivery, no filter)', async () => {
    const { handler } = handlerFor('batch-transaction');
    const earlier = orders('mixed', 4);
    await handler({ Records: earlier.slice(0, 2) }, lambdaContext());
    db.server.stats.reset();
    // The same two messages again (as if a producer sent them twice) beside two new ones, all first deliveries.
    expect((await handler({ Records: earlier }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(db.server.stats.total()).toBe(withConflicts(db, 4, RERUN['batch-transaction']));
    expect(await shippedCounts('mixed')).toEqual({ 'mixed-0': 1, 'mixed-1': 1, 'mixed-2': 1, 'mixed-3': 1 });
  });

  it.each([
    ['skip-group', 4],
    ['stop-batch', 0],
  ] as const)('FIFO, %s: the groups a malformed record does not block still go in one batch (%i calls for them)', async (onFailure, calls) => {
    // One group at a time, so the order in which stop-batch sees the failure is the batch's.
    const { handler, metrics } = handlerFor('batch-transaction', { fifo: { onFailure }, concurrency: 1 });
    const malformed = sqsRecord({ groupId: 'g1', body: 'not json' });
    const records = [
      malformed,
      ...[2, 3].flatMap((g) => [0, 1].map((i) => sqsRecord({ groupId: `g${g}`, body: { orderId: `calls-fifo-${onFailure}-g${g}-${i}` } }))),
    ];
    await handler({ Records: records }, lambdaContext());
    // stop-batch: the malformed record comes first, so nothing after it starts.
    expect(db.server.stats.total()).toBe(withConflicts(db, calls, RERUN['batch-transaction']));
    // The malformed record is the failure; under stop-batch the four after it are short-circuited, not failed.
    expect(metrics.published[0]).toMatchObject(
      onFailure === 'stop-batch' ? { Failures: [1], ShortCircuited: [4], Processed: [0] } : { Failures: [1], ShortCircuited: [0], Processed: [4] },
    );
  });

  it.each(BATCH_MODES)('%s: records one latency per record, and a whole batch deferred by the deadline makes no call', async (mode) => {
    const { handler, metrics } = handlerFor(mode, { deadlineMarginMs: 1_000 });
    await handler({ Records: orders(`lat-${mode}`, 3) }, lambdaContext());
    expect(metrics.published[0]!.RecordLatency).toHaveLength(3);
    db.server.stats.reset();
    const late = orders(`late-${mode}`, 3);
    const response = await handler(
      { Records: late },
      lambdaContext(() => 500),
    );
    expect(response.batchItemFailures.map((f) => f.itemIdentifier)).toEqual(late.map((r) => r.messageId));
    expect(db.server.stats.total()).toBe(0);
    // No set started: none counted, and no latency recorded for records that never ran.
    expect(metrics.published.at(-1)).toMatchObject({ DeferredByDeadline: [3], BatchSets: [0] });
    expect(metrics.published.at(-1)!.RecordLatency ?? []).toHaveLength(0);
  });

  it("batch-statement: `claimed` carries each message's group, id, attempt and position", async () => {
    await db.query('CREATE TABLE IF NOT EXISTS public.claimed_rows (message_key text, group_id text, sqs_message_id text, attempt int, position int)');
    const { handler } = handlerFor('batch-statement', {
      statementBatch: { sql: 'INSERT INTO public.claimed_rows SELECT message_key, group_id, sqs_message_id, attempt, position FROM claimed' },
    });
    const records = [
      sqsRecord({ groupId: 'ga', key: 'row-a', body: { orderId: 'a' } }),
      sqsRecord({ groupId: 'gb', key: 'row-b', receiveCount: 3, body: { orderId: 'b' } }),
    ];
    await handler({ Records: records }, lambdaContext());
    expect(await db.query('SELECT * FROM public.claimed_rows ORDER BY position')).toEqual([
      { message_key: 'row-a', group_id: 'ga', sqs_message_id: records[0]!.messageId, attempt: 1, position: 0 },
      { message_key: 'row-b', group_id: 'gb', sqs_message_id: records[1]!.messageId, attempt: 3, position: 1 },
    ]);
  });

  it.each(BATCH_MODES)('%s: logs how many records the failed batch held when it falls back', async (mode) => {
    const { handler, logger } = handlerFor(mode);
    await handler({ Records: [...orders(`fb-${mode}`, 2), sqsRecord({ body: { orderId: `fb-${mode}-x`, poison: true } })] }, lambdaContext());
    const line = logger.lines.find((l) => l.message.startsWith('the batch failed as a whole'));
    expect(line?.extra[0]).toMatchObject({ records: 3, error: { name: expect.any(String) } });
  });

  it.each(ALL_MODES)('%s: the duplicate filter catches a redelivered message that reuses a claimed key with another body', async (mode) => {
    for (const onPermanentError of ['retry', 'park'] as const) {
      await db.query('TRUNCATE public.orders, inbox.consumed_message, inbox.parked_message');
      const { handler, logger, metrics } = handlerFor(mode, { onPermanentError: onPermanentError === 'park' ? 'park' : 'retry', duplicateFilter: 'always' });
      await handler({ Records: [sqsRecord({ key: 'filtered', body: { orderId: `f-first-${mode}` } })] }, lambdaContext());
      const reuse = { ...sqsRecord({ key: 'filtered', body: { orderId: `f-second-${mode}` } }) };
      const response = await handler({ Records: redelivered([reuse]) }, lambdaContext());
      expect(response.batchItemFailures).toEqual(onPermanentError === 'retry' ? [{ itemIdentifier: reuse.messageId }] : []);
      expect(await db.query('SELECT order_id FROM public.orders WHERE order_id = $1', [`f-second-${mode}`])).toEqual([]);
      expect(JSON.stringify(logger.lines)).toMatch(/key collision/);
      expect(metrics.published.at(-1)!.KeyCollisions).toEqual([1]);
      if (onPermanentError === 'park') expect(await db.query('SELECT error_class FROM inbox.parked_message')).toEqual([{ error_class: 'KeyCollisionError' }]);
    }
  });

  const partlyNew: Record<Mode, number> = {
    transaction: 1 + 2 * 4, // the lookup, then Begin, claim, effect, Commit for each new record
    statement: 1 + 2,
    'batch-transaction': 1 + 4,
    'batch-statement': 1, // no lookup: its one statement settles the duplicates
  };

  it.each(ALL_MODES)('%s: a redelivered batch that is partly new looks up once, then claims only the new records', async (mode) => {
    const { handler } = handlerFor(mode);
    const batch = orders(`partly-${mode}`, 4);
    await handler({ Records: batch.slice(0, 2) }, lambdaContext());
    db.server.stats.reset();
    // Only the first record is a redelivery: one is enough for 'auto' to look up.
    const delivery = [...redelivered(batch.slice(0, 1)), ...batch.slice(1)];
    expect((await handler({ Records: delivery }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(db.server.stats.total()).toBe(withConflicts(db, partlyNew[mode], RERUN[mode]));
    expect(Object.values(await shippedCounts(`partly-${mode}`))).toEqual([1, 1, 1, 1]);
  });

  it('batch-transaction: tx.executeBatch runs one statement for every message, in one BatchExecuteStatement call on the Data API', async () => {
    const { handler } = handlerFor('batch-transaction', {
      applyBatch: async (tx, messages) => {
        expect(
          await tx.executeBatch(
            SHIP_ONE,
            messages.map((m) => ({ orderId: m.body.orderId, status: 'shipped' })),
          ),
        ).toBe(messages.length);
        expect(await tx.executeBatch(SHIP_ONE, [])).toBe(0);
      },
    });
    await handler({ Records: orders('exec-batch', 5) }, lambdaContext());
    // Each run of the transaction, and on the DSQL profile one more for each conflict it lost.
    const runs = withConflicts(db, 1, 1);
    expect(db.server.stats.calls).toMatchObject(
      onTransport({
        'data-api': { BeginTransaction: 1, ExecuteStatement: 1, BatchExecuteStatement: 1, CommitTransaction: 1 },
        // The wire has no batch call: the claim, then one statement per set, on the transaction's connection.
        wire: { BeginTransaction: runs, ExecuteStatement: (1 + 5) * runs, BatchExecuteStatement: 0, CommitTransaction: runs },
      }),
    );
    expect(Object.values(await shippedCounts('exec-batch'))).toEqual([1, 1, 1, 1, 1]);
  });

  it('a duplicate filter whose lookup fails is logged and left to the claims, which still settle every record', async () => {
    const { handler, logger } = handlerFor('transaction');
    const batch = orders('filter-down', 3);
    await handler({ Records: batch.slice(0, 1) }, lambdaContext());
    db.server.faults.serverError({ count: 1, operation: 'ExecuteStatement', status: 500 });
    expect((await handler({ Records: redelivered(batch) }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(JSON.stringify(logger.lines)).toMatch(
      onTransport({
        'data-api': /the duplicate filter failed; each record's claim decides.*InternalServerErrorException/,
        // The proxy's refusal is PostgreSQL's 53300: the lookup did not run.
        wire: /the duplicate filter failed; each record's claim decides.*ExecuteStatement failed \(unavailable\): Injected fault/,
      }),
    );
    expect(Object.values(await shippedCounts('filter-down'))).toEqual([1, 1, 1]);
  });
});

// A set goes in as many statements as the session's limits need: the Data API's request (4 MiB) and answer
// (1 MiB) split it; on the wire, which has no such limit, it is one statement. Both are written out.
describe("batch sets and the transport's request limits (the Data API's 4 MiB request and 1 MiB answer; none on the wire)", () => {
  // About 700 KB each: eight fit in one Lambda invocation (6 MB) but not in one Data API request.
  const large = (prefix: string, n: number, extra: (i: number) => Partial<Parameters<typeof sqsRecord>[0]> = () => ({})) =>
    Array.from({ length: n }, (_, i) => sqsRecord({ body: { orderId: `${prefix}-${i}`, pad: 'x'.repeat(700_000) }, ...extra(i) }));

  // Not on the DSQL profile: there the runs are set by its 1,000 records a transaction (dsql.test.ts).
  it.skipIf(TRANSPORT === 'dsql')(
    'batch-statement: 7,000 small messages go in two statements, whose answers (a claim row each) fit in 1 MiB (one on the wire)',
    async () => {
      const { handler } = handlerFor('batch-statement');
      // Each statement is well within 4 MiB; 7,000 claim rows of up to 160 bytes are not within 1 MiB.
      const batch = orders('answers', 7_000);
      expect((await handler({ Records: batch }, lambdaContext())).batchItemFailures).toEqual([]);
      expect(db.server.stats.calls).toMatchObject({ ExecuteStatement: withConflicts(db, onTransport({ 'data-api': 2, wire: 1 }), 1) });
      expect(await db.query("SELECT count(*)::int AS n FROM public.orders WHERE order_id LIKE 'answers-%' AND shipped_count = 1")).toEqual([{ n: 7_000 }]);
    },
  );

  it('batch-statement: eight 700 KB messages go in two statements that fit, not one refused statement and eight alone (one statement on the wire)', async () => {
    const { handler, metrics } = handlerFor('batch-statement');
    const batch = large('big', 8);
    expect((await handler({ Records: batch }, lambdaContext())).batchItemFailures).toEqual([]);
    const statements = onTransport({ 'data-api': 2, wire: 1 });
    expect(db.server.stats.calls).toMatchObject({ ExecuteStatement: withConflicts(db, statements, 1) });
    expect(db.server.stats.total()).toBe(withConflicts(db, statements, 1));
    expect(Object.values(await shippedCounts('big'))).toEqual(Array(8).fill(1));
    expect(metrics.published[0]).toMatchObject({ BatchSets: [1], BatchFallbacks: [0] });
  });

  // Runs of a set exist where the transport's limits split it: on the Data API.
  it.skipIf(CURRENT.protocol !== 'data-api')(
    'batch-statement: a run left when the deadline comes is deferred, unstarted; the runs before it commit',
    async () => {
      const { handler, metrics } = handlerFor('batch-statement', { deadlineMarginMs: 1_000 });
      const batch = large('bigdeadline', 8);
      // The Lambda's time runs short once the first run's statement has reached the server.
      const response = await handler(
        { Records: batch },
        lambdaContext(() => (db.server.stats.total() > 0 ? 500 : 60_000)),
      );
      expect(response.batchItemFailures.map((f) => f.itemIdentifier)).toEqual(batch.slice(4).map((r) => r.messageId));
      expect(Object.keys(await shippedCounts('bigdeadline')).sort()).toEqual([0, 1, 2, 3].map((i) => `bigdeadline-${i}`));
      // A conflict on the first run's statement runs it again at once: it had started before the deadline.
      expect(db.server.stats.total()).toBe(withConflicts(db, 1, 1));
      expect(metrics.published[0]).toMatchObject({ DeferredByDeadline: [4], BatchFallbacks: [0] });
    },
  );

  it.skipIf(CURRENT.protocol !== 'data-api')(
    'batch-statement, FIFO: when a later run fails, the earlier run stays committed and the rest runs alone in group order',
    async () => {
      const { handler, metrics } = handlerFor('batch-statement');
      // Groups a and b alternate; record 5 (group b, in the second run) breaks the statement.
      const batch = large('bigfifo', 8, (i) => ({
        groupId: i % 2 === 0 ? 'a' : 'b',
        body: { orderId: `bigfifo-${i}`, poison: i === 5, pad: 'x'.repeat(700_000) },
      }));
      const response = await handler({ Records: batch }, lambdaContext());
      // Record 5 fails, and record 7, later in group b, is not run; everything else is applied once.
      expect(new Set(response.batchItemFailures.map((f) => f.itemIdentifier))).toEqual(new Set([batch[5]!.messageId, batch[7]!.messageId]));
      expect(Object.keys(await shippedCounts('bigfifo')).sort()).toEqual(['bigfifo-0', 'bigfifo-1', 'bigfifo-2', 'bigfifo-3', 'bigfifo-4', 'bigfifo-6']);
      expect(Object.values(await shippedCounts('bigfifo'))).toEqual(Array(6).fill(1));
      // The first run (records 0-3) in one statement, the failed second run in one, then 4, 5 and 6 alone.
      expect(db.server.stats.total()).toBe(withConflicts(db, 2 + 3, 1));
      expect(metrics.published[0]).toMatchObject({ BatchSets: [1], BatchFallbacks: [1], ShortCircuited: [1] });
    },
  );

  // Not on the DSQL profile: one transaction past DSQL's 3,000 modified rows, which the batch modes never
  // send there (they split at 1,000 records; test/inbox/transport/dsql.test.ts).
  it.skipIf(TRANSPORT === 'dsql')(
    'batch-transaction: claims a redelivered batch of 10,000 in runs whose answers (their stored hashes) fit in 1 MiB',
    async () => {
      const members = Array.from({ length: 10_000 }, (_, i) => ({
        message: { key: `redelivered-${i}` } as InboxMessage<unknown, unknown>,
        sha256: new Uint8Array(32).fill(i % 256),
      }));
      const claimAll = async () => {
        const tx = await db.session.transaction();
        const claims = await claimSet(tx, { tables: inboxTables('inbox'), consumer: 'big-redelivery', members, callTimeoutMs: 10_000 });
        await tx.commit();
        return claims;
      };
      await claimAll();
      db.server.stats.reset();
      const again = await claimAll();
      expect(db.server.stats.calls).toMatchObject({ ExecuteStatement: onTransport({ 'data-api': 2, wire: 1 }) });
      expect(again.every((claim, i) => !claim.claimed && claim.existingSha256?.[0] === i % 256)).toBe(true);
    },
  );

  // Not on the DSQL profile: one transaction past DSQL's 3,000 modified rows, which the batch modes never
  // send there (they split at 1,000 records; test/inbox/transport/dsql.test.ts).
  // Its calls move megabytes (a 3.5 MB claim, a 3.8 MB answer on the wire), which a loaded two-core machine can
  // take past the fixture session's 10 s call timeout: it runs on a session of its own with 60 s, and once more
  // on a busier machine still, under a consumer name of its own, since a timed-out transaction's outcome is unknown.
  // Its own time is bounded by those calls, not by the suite's 30 s: a run with two workers beside other load took
  // the test past 30 s twice (4 Dec 2026), with every call within its timeout.
  let bigClaims = 0;
  it.skipIf(TRANSPORT === 'dsql')(
    'batch-transaction: claims 7,000 records with 512-byte keys in two statements of one transaction; the filter looks them up in runs whose answers fit',
    { retry: 1, timeout: 240_000 },
    async () => {
      const consumer = `big-claims-${bigClaims++}`;
      const session = driverOf(db.instance()).open({ callTimeoutMs: 60_000, resumeDelaysMs: [] });
      const tx = await session.transaction();
      // The file's database ends a transaction idle for 2 s; building the second 1.7 MB request may take longer here.
      await tx.execute("SET LOCAL idle_in_transaction_session_timeout = '60s'");
      const members = Array.from({ length: 7_000 }, (_, i) => ({
        message: { key: `${String(i).padStart(6, '0')}-${'k'.repeat(505)}` } as InboxMessage<unknown, unknown>,
        sha256: new Uint8Array(32).fill(i % 256),
      }));
      db.server.stats.reset();
      const claims = await claimSet(tx, { tables: inboxTables('inbox'), consumer, members, callTimeoutMs: 60_000 });
      await tx.commit();
      expect(db.server.stats.calls).toMatchObject({ ExecuteStatement: onTransport({ 'data-api': 2, wire: 1 }) });
      expect(claims).toHaveLength(7_000);
      expect(claims.every((claim) => claim.claimed)).toBe(true);
      expect(await db.query('SELECT count(*)::int AS n FROM inbox.consumed_message WHERE consumer_name = $1', [consumer])).toEqual([{ n: 7_000 }]);

      // The duplicate filter's lookup of the same keys, as a redelivery of them would make it. Its rows carry
      // the keys: 7,000 of them take about 4.6 MB, so the answers (1 MiB each) set the runs: 8 of 875 keys.
      const prepared = members.map(
        (member, index) => ({ index, record: {} as never, key: member.message.key, sha256: member.sha256 }) as PreparedRecord<unknown>,
      );
      db.server.stats.reset();
      await markKnownClaims(session, inboxTables('inbox'), consumer, prepared);
      expect(db.server.stats.calls).toMatchObject({ ExecuteStatement: onTransport({ 'data-api': 8, wire: 1 }) });
      expect(prepared.every((p) => p.known === 'duplicate')).toBe(true);
    },
  );
});
