import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { decimal, json, uuid } from '../../../lambda/inbox/index.js';
import { INBOX_MIGRATIONS, migrate } from '../../../lambda/inbox/sql/schema.js';
import { PostgresError } from '../../../lambda/inbox/errors.js';
import { purge } from '../../../lambda/inbox/sql/purge.js';
import { parkedMessageStore } from '../../../lambda/inbox/parked/store.js';
import { importClaims } from '../../../lambda/operations/claims-import.js';
import { postgres } from '../../../lambda/inbox/transport/postgres/index.js';
import { PostgresSession } from '../../../lambda/inbox/transport/postgres/postgres-session.js';
import { inbox } from '../../../lambda/inbox/index.js';
import type { InboxOptions } from '../../../lambda/inbox/index.js';
import { EXAMPLE_ORDER_MIGRATIONS } from '../../../demo/functions/example-migrations.js';
import { freshDatabase } from '../../support/database.js';
import { lambdaContext, recordingLogger, recordingMetrics, sqsRecord } from '../../support/inbox.js';
import { parkedMessages } from '../../../lambda/inbox/parked/parking.js';

let pool: pg.Pool;
let session: PostgresSession;
beforeAll(async () => {
  pool = new pg.Pool({ connectionString: await freshDatabase('wire'), max: 6 });
  session = new PostgresSession({ pool }, { callTimeoutMs: 10_000 });
  // The migrations themselves run over the wire transport.
  await migrate(session, [EXAMPLE_ORDER_MIGRATIONS]);
});
afterAll(async () => pool.end());
beforeEach(async () => {
  await pool.query('TRUNCATE public.orders, inbox.consumed_message, inbox.parked_message');
});

type Order = { orderId: string };
const SHIP = `INSERT INTO public.orders (order_id, status, shipped_count) VALUES (:orderId, 'shipped', 1)
  ON CONFLICT (order_id) DO UPDATE SET shipped_count = orders.shipped_count + 1`;
const SHIP_CLAIMED = `INSERT INTO public.orders (order_id, status, shipped_count) SELECT :orderId, 'shipped', 1 FROM claimed
  ON CONFLICT (order_id) DO UPDATE SET shipped_count = orders.shipped_count + 1`;
const SHIP_BATCH = `INSERT INTO public.orders (order_id, status, shipped_count) SELECT body->>'orderId', 'shipped', 1 FROM claimed
  ON CONFLICT (order_id) DO UPDATE SET shipped_count = orders.shipped_count + 1`;

const shippedCounts = async () =>
  Object.fromEntries((await pool.query('SELECT order_id, shipped_count FROM public.orders')).rows.map((row) => [row.order_id, row.shipped_count]));

describe('the operations over a transport', () => {
  it('migrate takes postgres(pool) as a script gives it, and finds every version applied', async () => {
    const report = await migrate(postgres(pool), [EXAMPLE_ORDER_MIGRATIONS]);
    expect(report.applied).toEqual([]);
    expect(Object.keys(report.versions).sort()).toEqual([INBOX_MIGRATIONS.name, EXAMPLE_ORDER_MIGRATIONS.name].sort());
  });

  it('purge, the parked store and the claims import take postgres(pool): no wire session needs making', async () => {
    await pool.query(`INSERT INTO inbox.consumed_message (consumer_name, message_id, processed_at) VALUES ('wire-ops', 'old', now() - interval '2 days')`);
    expect(await purge(postgres(pool), { retentionSeconds: 3600 })).toMatchObject({ deleted: 1, moreRemaining: false });
    expect(await parkedMessageStore({ session: postgres(pool), consumer: 'wire-ops' }).list()).toEqual([]);
    await pool.query('CREATE TABLE IF NOT EXISTS public.wire_ops_done (message_id text PRIMARY KEY)');
    await pool.query(`INSERT INTO public.wire_ops_done VALUES ('a'), ('b') ON CONFLICT DO NOTHING`);
    const imported = await importClaims({ session: postgres(pool), from: 'public.wire_ops_done', keyColumn: 'message_id', consumer: 'wire-ops' });
    expect(imported).toMatchObject({ read: 2, imported: 2 });
  });

  it('refuses what is not a transport, naming the three, where a pool or a URL would fail deep inside', async () => {
    for (const wrong of [pool, 'postgres://localhost/orders', undefined]) {
      await expect(migrate(wrong as never)).rejects.toThrow(
        expect.objectContaining({ name: 'InboxConfigError', message: expect.stringContaining('postgres(pool) from sqs-inbox/postgres') }),
      );
    }
    expect(() => parkedMessageStore({ session: pool as never, consumer: 'wire-ops' })).toThrow(/"session": must be a transport/);
  });
});

describe('PostgresSession: the Data API session over the wire', () => {
  it('binds :name parameters and returns rows typed as the Data API session types them', async () => {
    const { rows } = await session.execute(
      `SELECT :text AS text, :n AS n, :big AS big, :f AS f, :flag AS flag, :bytes AS bytes, :obj AS obj, :when AS "when",
              :id AS id, :amount AS amount, :doc AS doc, :none AS none, ':not_a_param' AS literal, 2::int8 AS int8,
              '2026-12-01 21:00:00.5+00'::timestamptz AS tz, :text AS again`,
      {
        text: 'héllo',
        n: 42,
        big: 2n ** 60n,
        f: 1.5,
        flag: true,
        bytes: new Uint8Array([0, 255, 7]),
        obj: { a: [1, 'x'] },
        when: new Date('2026-12-01T12:34:56.789Z'),
        id: uuid('0b9a3b5e-4e8f-4a55-9d7b-3c2f6c1d2e3f'),
        amount: decimal('12.50'),
        doc: json({ k: 1 }),
        none: null,
      },
    );
    expect(rows).toEqual([
      {
        text: 'héllo',
        n: 42,
        big: 2n ** 60n,
        f: 1.5,
        flag: true,
        bytes: new Uint8Array([0, 255, 7]),
        obj: { a: [1, 'x'] },
        when: new Date('2026-12-01T12:34:56.789Z'),
        id: '0b9a3b5e-4e8f-4a55-9d7b-3c2f6c1d2e3f',
        amount: '12.50',
        doc: { k: 1 },
        none: null,
        literal: ':not_a_param',
        int8: 2,
        tz: new Date('2026-12-01T21:00:00.500Z'),
        again: 'héllo',
      },
    ]);
  });

  it('counts the rows a write changed, and none for a SELECT', async () => {
    expect((await session.execute(SHIP, { orderId: 'u-1' })).updated).toBe(1);
    expect((await session.execute('SELECT 1 AS one')).updated).toBe(0);
  });

  it('commits a transaction, and refuses to call one committed that PostgreSQL rolled back', async () => {
    const tx = await session.transaction();
    await tx.execute(SHIP, { orderId: 't-1' });
    await tx.commit();
    expect(await shippedCounts()).toEqual({ 't-1': 1 });

    // A failed statement whose error was caught: PostgreSQL aborted the transaction; COMMIT answers ROLLBACK.
    const id = await session.begin();
    await session.execute('SELECT 1/0', {}, id).catch(() => {});
    await session.execute(SHIP, { orderId: 't-2' }, id).catch(() => {});
    const failure = await session.commit(id).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(PostgresError);
    expect(failure).toMatchObject({ operation: 'CommitTransaction', failure: 'rejected', ambiguous: false });
    expect(await shippedCounts()).toEqual({ 't-1': 1 });
  });

  it('classifies a statement PostgreSQL refused as a definite statement failure with its SQLSTATE', async () => {
    const failure = await session.execute('SELECT * FROM no_such_table').catch((error: unknown) => error);
    expect(failure).toMatchObject({ name: 'PostgresError', failure: 'statement', ambiguous: false, sqlState: '42P01' });
  });

  it('runs an autocommit batch all or nothing', async () => {
    expect(await session.executeBatch(SHIP, [{ orderId: 'b-1' }, { orderId: 'b-2' }])).toBe(2);
    await expect(
      session.executeBatch('INSERT INTO public.orders (order_id, status) VALUES (:id, :status)', [
        { id: 'b-3', status: 'x' },
        { id: 'b-3', status: 'y' },
      ]),
    ).rejects.toThrow(PostgresError);
    expect(Object.keys(await shippedCounts()).sort()).toEqual(['b-1', 'b-2']);
  });

  it('bounds every statement of a transaction on the server: statement_timeout below the call timeout', async () => {
    const short = new PostgresSession({ pool }, { callTimeoutMs: 1500 });
    const tx = await short.transaction();
    const failure = await tx.execute('SELECT pg_sleep(5)').catch((error: unknown) => error);
    // Cancelled by the server before the client gave up: a definite failure, nothing ran on late.
    expect(failure).toMatchObject({ failure: 'timeout', ambiguous: false, sqlState: '57014' });
    await tx.rollback();
  });

  it('leaves a short call timeout a statement timeout its statements fit in', async () => {
    const short = new PostgresSession({ pool }, { callTimeoutMs: 1000 });
    const tx = await short.transaction();
    expect((await tx.execute('SELECT pg_sleep(0.2) AS slept, current_setting(:name) AS limit', { name: 'statement_timeout' })).rows).toEqual([
      { slept: '', limit: '750ms' },
    ]);
    await tx.rollback();
  });

  it('refuses two statements in one call, as the Data API does, so that SQL written on the wire runs on both', async () => {
    const failure = await session.execute("UPDATE public.orders SET status = 'a'; UPDATE public.orders SET status = 'b'").catch((error: unknown) => error);
    expect(failure).toMatchObject({ name: 'PostgresError', failure: 'statement', ambiguous: false, sqlState: '42601' });
  });

  it('purges old claims over the wire', async () => {
    await pool.query(
      "INSERT INTO inbox.consumed_message (consumer_name, message_id, processed_at) VALUES ('c', 'old', now() - interval '3 days'), ('c', 'new', now())",
    );
    const report = await purge(session, { retentionSeconds: 86_400 });
    expect(report.deleted).toBe(1);
    expect((await pool.query('SELECT message_id FROM inbox.consumed_message')).rows).toEqual([{ message_id: 'new' }]);
  });
});

const modes: { name: string; options: Partial<InboxOptions<Order>> }[] = [
  { name: 'apply', options: { apply: async (tx, m) => void (await tx.execute(SHIP, { orderId: m.body.orderId })) } },
  {
    name: "apply, claim: 'with-first-statement'",
    options: { claim: 'with-first-statement', apply: async (tx, m) => void (await tx.execute(SHIP, { orderId: m.body.orderId })) },
  },
  { name: 'statement', options: { statement: { sql: SHIP_CLAIMED, params: (m) => ({ orderId: m.body.orderId }) } } },
  {
    name: 'applyBatch',
    options: {
      applyBatch: async (tx, messages) => {
        for (const m of messages) await tx.execute(SHIP, { orderId: m.body.orderId });
      },
    },
  },
  { name: 'statementBatch', options: { statementBatch: { sql: SHIP_BATCH } } },
];

describe.each(modes)('inbox() over a node-postgres pool, $name', ({ options }) => {
  const handler = () =>
    inbox<Order>({
      consumer: 'wire-worker',
      database: postgres(pool),
      logger: recordingLogger(),
      metrics: recordingMetrics(),
      ...(options as InboxOptions<Order>),
    });

  it('applies each message once, its redelivery and a second worker not at all', async () => {
    const records = [1, 2, 3].map((i) => sqsRecord({ body: { orderId: `w-${i}` } }));
    const [a, b] = [handler(), handler()];
    const responses = await Promise.all([a({ Records: records }, lambdaContext()), b({ Records: records }, lambdaContext())]);
    for (const response of responses) expect(response.batchItemFailures).toEqual([]);
    const redelivered = records.map((record) => ({ ...record, attributes: { ...record.attributes, ApproximateReceiveCount: '2' } }));
    expect((await a({ Records: redelivered }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(await shippedCounts()).toEqual({ 'w-1': 1, 'w-2': 1, 'w-3': 1 });
  });

  it('keeps FIFO order: a failed record fails the rest of its group, unstarted, and other groups commit', async () => {
    const bad = sqsRecord({ body: '{"orderId": ', groupId: 'g1' });
    const later = sqsRecord({ body: { orderId: 'f-2' }, groupId: 'g1' });
    const other = sqsRecord({ body: { orderId: 'f-3' }, groupId: 'g2' });
    const response = await handler()({ Records: [bad, later, other] }, lambdaContext());
    expect(response.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual([bad.messageId, later.messageId].sort());
    expect(await shippedCounts()).toEqual({ 'f-3': 1 });
  });
});

describe('inbox() over a pool: options', () => {
  it('refuses what is not a pool, and a pool not made a transport, naming the fix', () => {
    expect(() => postgres({} as pg.Pool)).toThrow(/inbox option "postgres\(pool\)": must be given a node-postgres Pool/);
    expect(() => inbox({ consumer: 'x', database: { pool } as never, apply: async () => {} })).toThrow(
      /inbox option "database": must be a transport: .*postgres\(pool\) from "sqs-inbox\/postgres"/,
    );
  });

  it('parks a poison message over the wire, and replays it once', async () => {
    const worker = inbox<Order>({
      consumer: 'wire-parker',
      database: postgres(pool),
      onPermanentError: 'park',
      logger: recordingLogger(),
      metrics: recordingMetrics(),
      apply: async (tx, m) => {
        if (m.body.orderId === 'poison') throw new (await import('../../../lambda/inbox/index.js')).PermanentError('not yet');
        await tx.execute(SHIP, { orderId: m.body.orderId });
      },
    });
    const record = sqsRecord({ body: { orderId: 'poison' } });
    expect((await worker({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([]);
    const [parked] = await parkedMessages(worker).list();
    expect(parked).toMatchObject({ sqsMessageId: record.messageId });
    // The effect is fixed: replay applies it (here: the same SQL, a different order id is not needed).
    await pool.query('UPDATE inbox.parked_message SET payload = convert_to(\'{"orderId":"cured"}\', \'UTF8\') WHERE id = $1', [parked!.id]);
    expect(await parkedMessages(worker).replay(parked!.id)).toBe('replayed');
    expect(await parkedMessages(worker).replay(parked!.id)).not.toBe('replayed');
    expect(await shippedCounts()).toEqual({ cured: 1 });
  });
});
