import pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { inbox } from '../../../lambda/inbox/index.js';
import { migrate } from '../../../lambda/inbox/sql/schema.js';
import { postgres } from '../../../lambda/inbox/transport/postgres/index.js';
import { PostgresSession } from '../../../lambda/inbox/transport/postgres/postgres-session.js';
import type { InboxOptions } from '../../../lambda/inbox/index.js';
import { EXAMPLE_ORDER_MIGRATIONS } from '../../../demo/functions/example-migrations.js';
import { freshDatabase } from '../../support/database.js';
import { lambdaContext, recordingLogger, recordingMetrics, sqsRecord } from '../../support/inbox.js';
import { startWireProxy } from '../../../local/wire/proxy.js';
import type { WireProxy } from '../../../local/wire/proxy.js';

// The wire's own failures, each injected at the socket by the testkit's wire proxy (local/wire/proxy.ts)
// between node-postgres and a real PostgreSQL. In each, no record that did not commit is acknowledged.

let url: string;
let direct: pg.Pool;
let proxy: WireProxy;
let pool: pg.Pool;
beforeAll(async () => {
  url = await freshDatabase('wire_faults');
  direct = new pg.Pool({ connectionString: url, max: 2 });
  await migrate(new PostgresSession({ pool: direct }, { callTimeoutMs: 10_000 }), [EXAMPLE_ORDER_MIGRATIONS]);
});
afterAll(async () => direct.end());
beforeEach(async () => {
  await direct.query('TRUNCATE public.orders, inbox.consumed_message');
  proxy = await startWireProxy(url);
  pool = new pg.Pool({ connectionString: proxy.url, max: 2, application_name: WORKER });
  pool.on('error', () => {}); // an idle connection the proxy killed
});
afterEach(async () => {
  await pool.end().catch(() => {});
  await proxy.close();
});

/** The workers' connections, so that a test can end them on the server and no one else's. */
const WORKER = 'wire-worker';

type Order = { orderId: string };
const SHIP = `INSERT INTO public.orders (order_id, status, shipped_count) VALUES (:orderId, 'shipped', 1)
  ON CONFLICT (order_id) DO UPDATE SET shipped_count = orders.shipped_count + 1`;

function worker(
  extra: Partial<InboxOptions<Order>> = {},
  apply: InboxOptions<Order>['apply'] = async (tx, m) => void (await tx.execute(SHIP, { orderId: m.body.orderId })),
) {
  const logger = recordingLogger();
  const handler = inbox<Order>({
    consumer: 'wire',
    database: postgres(pool, { idleCheckMs: 50 }),
    callTimeoutMs: 2000,
    logger,
    metrics: recordingMetrics(),
    apply,
    ...extra,
  });
  return { handler, logger };
}
const shipped = async (orderId: string) =>
  (await direct.query('SELECT shipped_count FROM public.orders WHERE order_id = $1', [orderId])).rows[0]?.shipped_count as number | undefined;
const failedWith = (logger: ReturnType<typeof recordingLogger>) => JSON.stringify(logger.lines.filter((line) => line.level !== 'debug'));
/** Each failed record's logged error message, by its messageId. */
const failureOf = (logger: ReturnType<typeof recordingLogger>) =>
  Object.fromEntries(
    logger.lines
      .filter((line) => line.message.startsWith('record failed'))
      .map((line) => {
        const { messageId, error } = line.extra[0] as { messageId: string; error: { message: string } };
        return [messageId, error.message];
      }),
  );
const claimed = async (messageId: string) => (await direct.query('SELECT 1 FROM inbox.consumed_message WHERE message_id = $1', [messageId])).rowCount;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('wire failures, injected at the socket', () => {
  it('reports a record failed when the connection dies with COMMIT in flight (it committed), and its redelivery is a duplicate', async () => {
    const { handler, logger } = worker();
    const record = sqsRecord({ body: { orderId: 'c-1' } });
    proxy.faults.dropResponse({ operation: 'CommitTransaction' });
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect(failedWith(logger)).toMatch(/CommitTransaction failed \(network, outcome unknown\)/);
    expect(await shipped('c-1')).toBe(1);
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(await shipped('c-1')).toBe(1);
  });

  it('reports a record failed when COMMIT does not answer within the call timeout (outcome unknown), and its redelivery applies it once', async () => {
    const { handler, logger } = worker();
    const record = sqsRecord({ body: { orderId: 'c-2' } });
    // Held on its way for longer than callTimeoutMs (2 s): the client cannot know whether it committed.
    proxy.faults.latency({ ms: 2_500, operation: 'CommitTransaction' });
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect(failureOf(logger)[record.messageId]).toMatch(/^CommitTransaction failed \(timeout, outcome unknown\): /);
    proxy.faults.clear();
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(await shipped('c-2')).toBe(1);
  });

  it('reports a single statement failed when its answer is lost after it ran, and applies nothing twice', async () => {
    const { handler } = worker({
      apply: undefined,
      statement: {
        sql: `INSERT INTO public.orders (order_id, status, shipped_count) SELECT :orderId, 'shipped', 1 FROM claimed ON CONFLICT (order_id) DO UPDATE SET shipped_count = orders.shipped_count + 1`,
        params: (m) => ({ orderId: m.body.orderId }),
      },
    });
    const record = sqsRecord({ body: { orderId: 's-1' } });
    proxy.faults.dropResponse({ match: (sql) => sql.includes('INSERT INTO public.orders') });
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(await shipped('s-1')).toBe(1);
  });

  it('detects a connection a frozen Lambda left half-open before trusting it, and replaces it', async () => {
    const { handler } = worker();
    expect((await handler({ Records: [sqsRecord({ body: { orderId: 'h-1' } })] }, lambdaContext())).batchItemFailures).toEqual([]);
    // The pooled connection goes silent (RDS Proxy closed it while the function was frozen; no FIN reached us).
    proxy.silenceOpenConnections();
    await new Promise((resolve) => setTimeout(resolve, 100));
    const record = sqsRecord({ body: { orderId: 'h-2' } });
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(await shipped('h-2')).toBe(1);
  });

  it('detects a half-open connection before a single statement too, where nothing may be sent twice', async () => {
    const { handler } = worker({
      apply: undefined,
      statement: {
        sql: `INSERT INTO public.orders (order_id, status, shipped_count) SELECT :orderId, 'shipped', 1 FROM claimed`,
        params: (m) => ({ orderId: m.body.orderId }),
      },
    });
    expect((await handler({ Records: [sqsRecord({ body: { orderId: 'h-3' } })] }, lambdaContext())).batchItemFailures).toEqual([]);
    proxy.silenceOpenConnections();
    await new Promise((resolve) => setTimeout(resolve, 100));
    const record = sqsRecord({ body: { orderId: 'h-4' } });
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(await shipped('h-4')).toBe(1);
  });

  it('fails a transaction the server ended for idling (idle_in_transaction_session_timeout), applying nothing', async () => {
    await direct.query(`ALTER DATABASE ${new URL(url).pathname.slice(1)} SET idle_in_transaction_session_timeout = '300ms'`);
    try {
      const fresh = new pg.Pool({ connectionString: proxy.url, max: 2 });
      fresh.on('error', () => {});
      const record = sqsRecord({ body: { orderId: 'i-1' } });
      const logger = recordingLogger();
      const handler = inbox<Order>({
        consumer: 'wire',
        database: postgres(fresh),
        logger,
        metrics: recordingMetrics(),
        apply: async (tx, m) => {
          await tx.execute(SHIP, { orderId: m.body.orderId });
          await new Promise((resolve) => setTimeout(resolve, 800)); // the handler stalls inside the transaction
        },
      });
      expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
      expect(failedWith(logger)).toMatch(/failed \(transaction-not-found\)/);
      expect(await shipped('i-1')).toBeUndefined();
      await fresh.end();
    } finally {
      await direct.query(`ALTER DATABASE ${new URL(url).pathname.slice(1)} RESET idle_in_transaction_session_timeout`);
    }
  });

  it('fails the records, without acknowledging any, when the pool has no connection free in time', async () => {
    const tiny = new pg.Pool({ connectionString: proxy.url, max: 1, connectionTimeoutMillis: 200 });
    const held = await tiny.connect();
    try {
      const record = sqsRecord({ body: { orderId: 'p-1' } });
      const logger = recordingLogger();
      const handler = inbox<Order>({
        consumer: 'wire',
        database: postgres(tiny),
        logger,
        metrics: recordingMetrics(),
        apply: async (tx, m) => void (await tx.execute(SHIP, { orderId: m.body.orderId })),
      });
      expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
      expect(failedWith(logger)).toMatch(/failed \(unavailable\)/);
    } finally {
      held.release();
      await tiny.end();
    }
  });

  it('fails the records in flight when every connection drops (an RDS Proxy failover), takes new connections at once, and the redelivery applies each once', async () => {
    const records = [1, 2, 3, 4].map((i) => sqsRecord({ body: { orderId: `f-${i}` } }));
    let killed = false;
    const { handler, logger } = worker({}, async (tx, m) => {
      await tx.execute(SHIP, { orderId: m.body.orderId });
      if (m.body.orderId === 'f-2' && !killed) {
        killed = true;
        proxy.killAll();
      }
      await tx.execute('SELECT 1');
    });
    const first = await handler({ Records: records }, lambdaContext());
    const acknowledged = records.filter((record) => !first.batchItemFailures.some((failure) => failure.itemIdentifier === record.messageId));
    // Every acknowledged record committed.
    for (const record of acknowledged) expect(await shipped(JSON.parse(record.body).orderId)).toBe(1);
    expect(first.batchItemFailures.length).toBeGreaterThan(0);
    // f-2's transaction was in flight on a connection that dropped: its outcome is not the statement's doing,
    // and it is never 'nothing ran' (unavailable), which would let a caller send it again blindly.
    expect(failureOf(logger)[records[1]!.messageId]).toMatch(/^ExecuteStatement failed \((network, outcome unknown|transaction-not-found)\): /);
    // The new writer accepts connections: the pool's dead ones are not trusted, the next batch runs at once.
    const next = sqsRecord({ body: { orderId: 'f-5' } });
    expect((await handler({ Records: [next] }, lambdaContext())).batchItemFailures).toEqual([]);
    const again = await handler({ Records: records.filter((record) => !acknowledged.includes(record)) }, lambdaContext());
    expect(again.batchItemFailures).toEqual([]);
    for (const i of [1, 2, 3, 4, 5]) expect(await shipped(`f-${i}`)).toBe(1);
  });

  it('fails the records of a server restart: the ended session as not committed, the refused connections as nothing ran; back up, the redelivery applies each once', async () => {
    const records = [1, 2, 3, 4].map((i) => sqsRecord({ body: { orderId: `sr-${i}` } }));
    let restarted = false;
    const { handler, logger } = worker({ concurrency: 1 }, async (tx, m) => {
      await tx.execute(SHIP, { orderId: m.body.orderId });
      if (m.body.orderId === 'sr-2' && !restarted) {
        restarted = true;
        // PostgreSQL shutting down ends every session with 57P01, as pg_terminate_backend does; until it is
        // back, nothing accepts a connection.
        await direct.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [WORKER]);
        proxy.refuseConnections(true);
        await sleep(100);
      }
      await tx.execute('SELECT 1');
    });
    const first = await handler({ Records: records }, lambdaContext());
    expect(first.batchItemFailures.map((failure) => failure.itemIdentifier)).toEqual(records.slice(1).map((record) => record.messageId));
    const failures = failureOf(logger);
    // The server ended sr-2's session, and its transaction with it: known not committed.
    expect(failures[records[1]!.messageId]).toMatch(/^ExecuteStatement failed \(transaction-not-found\): /);
    // sr-3 and sr-4 found no server: nothing of them ran.
    for (const record of records.slice(2)) {
      expect(failures[record.messageId]).toMatch(/^Connect failed \(unavailable\): /);
      expect(await claimed(record.messageId)).toBe(0);
    }
    expect(await shipped('sr-1')).toBe(1);
    expect(await shipped('sr-2')).toBeUndefined();
    proxy.refuseConnections(false);
    expect((await handler({ Records: records.slice(1) }, lambdaContext())).batchItemFailures).toEqual([]);
    for (const i of [1, 2, 3, 4]) expect(await shipped(`sr-${i}`)).toBe(1);
  });

  it('fails a record whose statement outran statement_timeout as a definite timeout: nothing committed, and the redelivery applies it once', async () => {
    await direct.query("INSERT INTO public.orders (order_id, status, shipped_count) VALUES ('st-1', 'new', 0)");
    const holder = await direct.connect();
    await holder.query('BEGIN');
    await holder.query("SELECT 1 FROM public.orders WHERE order_id = 'st-1' FOR UPDATE");
    const { handler, logger } = worker(
      {},
      async (tx, m) =>
        void (await tx.execute('UPDATE public.orders SET shipped_count = shipped_count + 1 WHERE order_id = :orderId', { orderId: m.body.orderId })),
    );
    const record = sqsRecord({ body: { orderId: 'st-1' } });
    try {
      expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    } finally {
      await holder.query('COMMIT');
      holder.release();
    }
    // PostgreSQL cancelled it below the call timeout (2 s): it says the statement did not run, so the outcome is known.
    expect(failureOf(logger)[record.messageId]).toBe('ExecuteStatement failed (timeout): canceling statement due to statement timeout');
    expect(await claimed(record.messageId)).toBe(0);
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(await shipped('st-1')).toBe(1);
  });

  it('never retries a statement inside a transaction: a lost answer fails the record, the statement runs once', async () => {
    const { handler } = worker();
    const record = sqsRecord({ body: { orderId: 'r-1' } });
    proxy.faults.dropResponse({ match: (sql) => sql.includes('INSERT INTO public.orders') });
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect(proxy.statements.filter((sql) => sql.includes('INSERT INTO public.orders'))).toHaveLength(1);
    // The connection died with the transaction open: PostgreSQL rolled it back.
    expect(await shipped('r-1')).toBeUndefined();
  });

  // Transaction control is refused before it is sent (test/inbox/transaction-control.test.ts). Should one get
  // past that scan, the session still never takes a transaction a statement ended for one that committed: the
  // proxy turns a harmless statement into a ROLLBACK at the socket, which the scan cannot see.
  const ENDS_IT = '/* the proxy ends the transaction here */';
  const endingApply: InboxOptions<Order>['apply'] = async (tx, m) => {
    await tx.execute(`SELECT 1 ${ENDS_IT}`);
    await tx.execute(SHIP, { orderId: m.body.orderId });
  };

  it('fails the record at the statement that ended its transaction, and sends nothing after it, so nothing commits on its own', async () => {
    const { handler, logger } = worker({}, endingApply);
    proxy.rewriteWith((sql) => (sql.includes(ENDS_IT) ? 'ROLLBACK' : sql));
    const record = sqsRecord({ body: { orderId: 'tx-ended' } });
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect(failureOf(logger)[record.messageId]).toMatch(
      /^ExecuteStatement failed \(transaction-not-found, outcome unknown\): the statement ended the transaction/,
    );
    expect(proxy.statements.filter((sql) => sql.includes('INSERT INTO public.orders'))).toEqual([]);
    expect([await shipped('tx-ended'), await claimed(record.messageId)]).toEqual([undefined, 0]);
    proxy.rewriteWith(undefined);
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(await shipped('tx-ended')).toBe(1);
  });

  it('fails the record when its COMMIT found no transaction in progress, with a node-postgres that reports no transaction status', async () => {
    // node-postgres before getTransactionStatus(): only the COMMIT's warning (25P01) tells that nothing was left to commit.
    pool.on('connect', (client) => Object.defineProperty(client, 'getTransactionStatus', { value: undefined }));
    const { handler, logger } = worker({}, endingApply);
    proxy.rewriteWith((sql) => (sql.includes(ENDS_IT) ? 'ROLLBACK' : sql));
    const record = sqsRecord({ body: { orderId: 'tx-no-commit' } });
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect(failureOf(logger)[record.messageId]).toMatch(
      /^CommitTransaction failed \(transaction-not-found, outcome unknown\): PostgreSQL warned that there was no transaction in progress \(25P01\)/,
    );
    expect(await claimed(record.messageId)).toBe(0);
  });
});
