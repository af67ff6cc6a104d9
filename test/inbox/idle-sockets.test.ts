import { RDSDataClient } from '@aws-sdk/client-rds-data';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { dataApi, DataApiError } from '../../lambda/inbox/index.js';
import { DataApiSession } from '../../lambda/inbox/transport/data-api/session.js';
import { inbox } from '../../lambda/inbox/index.js';
import type { InboxOptions } from '../../lambda/inbox/index.js';
import type { DatabaseTarget } from '../../lambda/inbox/transport/data-api/session.js';
import { defaultDataApiClient } from '../../lambda/inbox/transport/data-api/client.js';
import { resolveTarget } from '../../lambda/inbox/transport/data-api/transport.js';
import { startIdleDropProxy } from '../support/idle-proxy.js';
import type { IdleDropProxy } from '../support/idle-proxy.js';
import { dataApiTarget, inboxFixture, lambdaContext, recordingLogger, recordingMetrics, sqsRecord } from '../support/inbox.js';
import type { InboxFixture } from '../support/inbox.js';

// The first call after an idle spell. Between the SDK and the local Data API sits a proxy that forgets a
// connection idle for 300 ms without telling the client, as a NAT gateway or load balancer does, and
// answers the client's next bytes on it with a reset.
const PROXY_IDLE_MS = 300;
let db: InboxFixture;
let proxy: IdleDropProxy;
const clients: RDSDataClient[] = [];
beforeAll(async () => {
  db = await inboxFixture('idle_sockets');
  proxy = await startIdleDropProxy(db.server.endpoint, PROXY_IDLE_MS);
});
afterAll(async () => {
  for (const client of clients) client.destroy();
  await proxy?.close();
  await db?.close();
});
beforeEach(async () => {
  await db.query('TRUNCATE public.orders, inbox.consumed_message');
  db.server.stats.reset();
});

const local = { region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } };

/** A target through the proxy, with a client as a user would make it: `maxAttempts: 1`, the SDK's agent. */
function throughProxy(client = new RDSDataClient({ ...local, endpoint: proxy.endpoint, maxAttempts: 1 })): DatabaseTarget {
  clients.push(client);
  return dataApiTarget(db.server, client);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const idle = () => sleep(PROXY_IDLE_MS + 200);

const SHIP_ONE = `INSERT INTO public.orders (order_id, status, shipped_count) VALUES (:orderId, 'shipped', 1)
  ON CONFLICT (order_id) DO UPDATE SET shipped_count = orders.shipped_count + 1`;
const SHIP_CLAIMED = `INSERT INTO public.orders (order_id, status, shipped_count) SELECT body->>'orderId', 'shipped', 1 FROM claimed
  ON CONFLICT (order_id) DO UPDATE SET shipped_count = orders.shipped_count + 1`;

type Order = { orderId: string };
// `calls`: what the second batch costs at the server; the reset call never reaches it.
const firstCalls: { call: string; calls: number; options: Partial<InboxOptions<Order>>; redeliver?: boolean }[] = [
  { call: 'BeginTransaction (apply)', calls: 8, options: { apply: async (tx, m) => void (await tx.execute(SHIP_ONE, { orderId: m.body.orderId })) } },
  {
    call: 'the gated statement (statement)',
    calls: 2,
    options: { statement: { sql: SHIP_CLAIMED.replace("body->>'orderId'", ':orderId'), params: (m) => ({ orderId: m.body.orderId }) } },
  },
  { call: 'the set statement (statementBatch)', calls: 1, options: { statementBatch: { sql: SHIP_CLAIMED } } },
  // The lookup settles the redelivered batch in its one call (had it failed, each claim would: 6 calls).
  {
    call: "the duplicate filter's lookup",
    calls: 1,
    options: { apply: async (tx, m) => void (await tx.execute(SHIP_ONE, { orderId: m.body.orderId })), duplicateFilter: 'always' },
    redeliver: true,
  },
];

describe('the first call after an idle spell', () => {
  it.each(firstCalls)(
    '$call, reset on a connection the network forgot, is sent again on a new one; every record succeeds',
    async ({ call, calls, options, redeliver }) => {
      // Arrange: one batch leaves its connection idle in the pool; then the proxy forgets it.
      const prefix = `idle-${call.replace(/\W+/g, '-')}`;
      const logger = recordingLogger();
      const handler = inbox<Order>({
        consumer: 'idle-worker',
        database: dataApi(throughProxy()),
        concurrency: 1,
        logger,
        metrics: recordingMetrics(),
        ...options,
      } as InboxOptions<Order>);
      const first = [0, 1].map((i) => sqsRecord({ body: { orderId: `${prefix}-${i}` } }));
      expect((await handler({ Records: first }, lambdaContext())).batchItemFailures).toEqual([]);
      await idle();
      const resetsBefore = proxy.resets;
      db.server.stats.reset();

      // Act
      const second = redeliver
        ? first.map((record) => ({ ...record, attributes: { ...record.attributes, ApproximateReceiveCount: '2' } }))
        : [2, 3].map((i) => sqsRecord({ body: { orderId: `${prefix}-${i}` } }));
      const response = await handler({ Records: second }, lambdaContext());

      // Assess: the reset happened, and nothing failed or applied twice.
      expect(proxy.resets - resetsBefore).toBe(1);
      expect(response.batchItemFailures).toEqual([]);
      expect(db.server.stats.total()).toBe(calls);
      expect(logger.lines.filter((line) => line.level === 'warn')).toEqual([]);
      const rows = await db.query('SELECT order_id, shipped_count FROM public.orders WHERE order_id LIKE $1 ORDER BY 1', [`${prefix}-%`]);
      expect(rows.map((row) => row.shipped_count)).toEqual(Array(redeliver ? 2 : 4).fill(1));
    },
  );

  it('never sends a statement inside a transaction twice, nor a commit: the reset fails the call, as ambiguous', async () => {
    const session = new DataApiSession(throughProxy(), { callTimeoutMs: 5_000, resumeDelaysMs: [] });
    const tx = await session.transaction();
    await tx.execute('SELECT 1');
    await idle();
    db.server.stats.reset();
    const statement = await tx.execute('SELECT 2').then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(statement).toBeInstanceOf(DataApiError);
    expect(statement).toMatchObject({ operation: 'ExecuteStatement', ambiguous: true });

    const other = await session.transaction();
    await idle();
    const commit = await other.commit().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(commit).toMatchObject({ operation: 'CommitTransaction', ambiguous: true });
    // Neither reached the server: the reset came from the proxy, and nothing was sent again.
    expect(db.server.stats.calls).toMatchObject({ ExecuteStatement: 0, CommitTransaction: 0 });
  });
});

describe('a network that resets every connection', () => {
  let always: IdleDropProxy;
  beforeAll(async () => {
    always = await startIdleDropProxy(db.server.endpoint, 0);
  });
  afterAll(() => always?.close());
  const through = (policy: Partial<DataApiSession['policy']> = {}) =>
    new DataApiSession(throughProxy(new RDSDataClient({ ...local, endpoint: always.endpoint, maxAttempts: 1 })), {
      callTimeoutMs: 5_000,
      resumeDelaysMs: [],
      ...policy,
    });
  const failureOf = (promise: Promise<unknown>) =>
    promise.then(
      () => expect.fail('the call succeeded through a proxy that resets every connection'),
      (error: unknown) => error,
    );

  it('sends a call that is safe to send twice once more, on a new connection, then fails it', async () => {
    const before = always.resets;
    expect(await failureOf(through().begin())).toMatchObject({ operation: 'BeginTransaction' });
    expect(always.resets - before).toBe(2);
    expect(db.server.stats.calls.BeginTransaction ?? 0).toBe(0);
  });

  it('sends it no more once the deadline has passed', async () => {
    const before = always.resets;
    expect(await failureOf(through({ timeLeftMs: () => 0 }).begin())).toMatchObject({ operation: 'BeginTransaction' });
    expect(always.resets - before).toBe(1);
  });

  it('never sends a rollback or a commit twice', async () => {
    const before = always.resets;
    expect(await failureOf(through().rollback('00000000-0000-0000-0000-000000000000'))).toMatchObject({ operation: 'RollbackTransaction' });
    expect(await failureOf(through().commit('00000000-0000-0000-0000-000000000000'))).toMatchObject({ operation: 'CommitTransaction', ambiguous: true });
    expect(always.resets - before).toBe(2);
  });
});

describe("inbox()'s default client", () => {
  it('does not reuse a connection idle past its limit, even when no timer ran (a frozen Lambda)', async () => {
    // A limit below the proxy's, as IDLE_SOCKET_TIMEOUT_MS is below the AWS network's.
    const session = new DataApiSession(throughProxy(defaultDataApiClient({ ...local, endpoint: proxy.endpoint }, PROXY_IDLE_MS - 100)), {
      callTimeoutMs: 5_000,
      resumeDelaysMs: [],
    });
    const tx = await session.transaction();
    await tx.execute('SELECT 1');
    const resetsBefore = proxy.resets;

    // Act: the event loop stands still past both limits, as in a frozen Lambda, so no idle timer fires
    // before the next call goes out.
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, PROXY_IDLE_MS + 200);
    const { rows } = await tx.execute('SELECT 2 AS n');
    await tx.commit();

    // Assess: a new connection, no reset, and the statement inside the transaction ran.
    expect(rows).toEqual([{ n: 2 }]);
    expect(proxy.resets - resetsBefore).toBe(0);
  });

  it('lets a call run longer than the idle limit: only idle connections are dropped', async () => {
    const session = new DataApiSession(throughProxy(defaultDataApiClient({ ...local, endpoint: db.server.endpoint }, 100)), {
      callTimeoutMs: 5_000,
      resumeDelaysMs: [],
    });
    expect((await session.execute('SELECT 1 AS n FROM pg_sleep(0.4)')).rows).toEqual([{ n: 1 }]);
  });

  it('is what inbox() makes when no client is given', () => {
    const { client } = resolveTarget({ resourceArn: db.server.resourceArn, secretArn: db.server.secretArn }, { INBOX_DATA_API_ENDPOINT: proxy.endpoint });
    clients.push(client);
    expect(client.middlewareStack.identify().join(' ')).toContain('sqsInboxDropStaleSockets');
  });
});
