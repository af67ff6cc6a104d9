import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { inbox } from '../../lambda/inbox/index.js';
import { dataApi } from '../../lambda/inbox/index.js';
import type { BatchSummary, InboxOptions } from '../../lambda/inbox/index.js';
import { dataApiSettings, inboxFixture, lambdaContext, recordingLogger, recordingMetrics, sqsRecord } from '../support/inbox.js';
import type { InboxFixture } from '../support/inbox.js';
import { dataApiOnly } from '../support/data-api-only.js';

let db: InboxFixture;
beforeAll(async () => {
  db = await inboxFixture('consumer');
});
afterAll(async () => db.close());
beforeEach(async () => {
  await db.query('TRUNCATE public.orders, inbox.consumed_message, inbox.parked_message');
  db.server.faults.clear();
  db.server.stats.reset();
});

type Order = { orderId: string };
const SHIP = `INSERT INTO public.orders (order_id, status, shipped_count) VALUES (:orderId, 'shipped', 1)
  ON CONFLICT (order_id) DO UPDATE SET shipped_count = orders.shipped_count + 1`;

function transactionMode(extra: Partial<InboxOptions<Order>> = {}) {
  const calls: string[] = [];
  const handler = inbox<Order>({
    consumer: 'order-worker',
    database: db.target,
    logger: recordingLogger(),
    metrics: recordingMetrics(),
    apply: async (tx, message) => {
      calls.push(message.body.orderId);
      await tx.execute(SHIP, { orderId: message.body.orderId });
    },
    ...extra,
  });
  return { handler, calls };
}

function singleStatementMode(extra: Partial<InboxOptions<Order>> = {}) {
  return inbox<Order>({
    consumer: 'order-worker',
    database: db.target,
    logger: recordingLogger(),
    metrics: recordingMetrics(),
    statement: {
      sql: `INSERT INTO public.orders (order_id, status, shipped_count) SELECT :orderId, 'shipped', 1 FROM claimed
            ON CONFLICT (order_id) DO UPDATE SET shipped_count = orders.shipped_count + 1`,
      params: (message) => ({ orderId: message.body.orderId }),
    },
    ...extra,
  });
}

async function shipped(orderId: string): Promise<number> {
  const rows = await db.query('SELECT shipped_count FROM public.orders WHERE order_id = $1', [orderId]);
  return rows[0]?.shipped_count ?? 0;
}

const modes = [
  { name: 'transaction mode', make: () => transactionMode().handler },
  { name: 'single-statement mode', make: () => singleStatementMode() },
];

describe.each(modes)('$name', ({ make }) => {
  it('applies a new record once and reports no failure', async () => {
    const handler = make();
    const record = sqsRecord({ body: { orderId: 'order-417' } });
    const response = await handler({ Records: [record] }, lambdaContext());
    expect(response).toEqual({ batchItemFailures: [] });
    expect(await shipped('order-417')).toBe(1);
    const claims = await db.query('SELECT consumer_name, message_id, payload_sha256 FROM inbox.consumed_message');
    expect(claims).toHaveLength(1);
    expect(claims[0]).toMatchObject({ consumer_name: 'order-worker', message_id: record.messageId });
    expect(Buffer.from(claims[0]!.payload_sha256).toString('hex')).toHaveLength(64);
  });

  it('treats a redelivery as a duplicate: nothing applied, reported succeeded', async () => {
    const handler = make();
    const record = sqsRecord({ body: { orderId: 'order-417' } });
    await handler({ Records: [record] }, lambdaContext());
    const again = await handler({ Records: [{ ...record, attributes: { ...record.attributes, ApproximateReceiveCount: '2' } }] }, lambdaContext());
    expect(again.batchItemFailures).toEqual([]);
    expect(await shipped('order-417')).toBe(1);
  });

  it('uses the producer key over the messageId, so a re-sent message is a duplicate', async () => {
    const handler = make();
    const first = sqsRecord({ body: { orderId: 'order-9' }, key: 'key-9' });
    const resent = sqsRecord({ body: { orderId: 'order-9' }, key: 'key-9' });
    expect(first.messageId).not.toBe(resent.messageId);
    await handler({ Records: [first] }, lambdaContext());
    await handler({ Records: [resent] }, lambdaContext());
    expect(await shipped('order-9')).toBe(1);
  });

  it('keeps consumers apart: the same key claimed by two consumers applies for each', async () => {
    const handler = make();
    const record = sqsRecord({ body: { orderId: 'order-5' }, key: 'shared' });
    await handler({ Records: [record] }, lambdaContext());
    const other = inbox<Order>({
      consumer: 'billing',
      database: db.target,
      logger: recordingLogger(),
      metrics: recordingMetrics(),
      apply: async (tx, message) => void (await tx.execute(SHIP, { orderId: message.body.orderId })),
    });
    await other({ Records: [record] }, lambdaContext());
    expect(await shipped('order-5')).toBe(2);
  });
});

describe('transaction mode', () => {
  it('rolls the claim back with the effect when apply throws, so the redelivery applies it', async () => {
    let fail = true;
    const { handler } = transactionMode({
      apply: async (tx, message) => {
        await tx.execute(SHIP, { orderId: message.body.orderId });
        if (fail) throw new Error('downstream said no');
      },
    });
    const record = sqsRecord({ body: { orderId: 'order-1' } });
    expect(await handler({ Records: [record] }, lambdaContext())).toEqual({ batchItemFailures: [{ itemIdentifier: record.messageId }] });
    expect(await shipped('order-1')).toBe(0);
    expect(await db.query('SELECT 1 FROM inbox.consumed_message')).toHaveLength(0);
    fail = false;
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(await shipped('order-1')).toBe(1);
  });

  it('reports exactly the failed records of a mixed standard batch', async () => {
    const { handler } = transactionMode({
      apply: async (tx, message) => {
        if (message.body.orderId.startsWith('bad')) throw new Error('rejected');
        await tx.execute(SHIP, { orderId: message.body.orderId });
      },
    });
    const records = ['a', 'bad-1', 'b', 'bad-2', 'c'].map((id) => sqsRecord({ body: { orderId: id } }));
    const response = await handler({ Records: records }, lambdaContext());
    expect(response.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual([records[1]!.messageId, records[3]!.messageId].sort());
    for (const id of ['a', 'b', 'c']) expect(await shipped(id)).toBe(1);
  });

  it('sends the statements of one transaction one at a time even when apply runs them concurrently', async () => {
    const { handler } = transactionMode({
      apply: async (tx, message) => {
        await Promise.all([1, 2, 3].map(() => tx.execute(SHIP, { orderId: message.body.orderId })));
      },
    });
    const response = await handler({ Records: [sqsRecord({ body: { orderId: 'order-3x' } })] }, lambdaContext());
    expect(response.batchItemFailures).toEqual([]);
    expect(await shipped('order-3x')).toBe(3);
  });

  it('never commits a transaction in which a statement failed, even when apply caught the error', async () => {
    const { handler } = transactionMode({
      apply: async (tx, message) => {
        await tx.execute('SELECT 1 / 0').catch(() => {});
        await tx.execute(SHIP, { orderId: message.body.orderId }).catch(() => {});
      },
    });
    const record = sqsRecord({ body: { orderId: 'swallowed' } });
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect(db.server.stats.calls).toMatchObject({ CommitTransaction: 0, RollbackTransaction: 1 });
    expect(await shipped('swallowed')).toBe(0);
  });

  dataApiOnly(
    'test/inbox/consumer.test.ts',
    'refuses, at the first invocation, a client whose SDK retries would re-send statements inside a transaction',
    async () => {
      const { RDSDataClient } = await import('@aws-sdk/client-rds-data');
      const retrying = new RDSDataClient({ endpoint: db.server.endpoint, region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
      const { handler } = transactionMode({ database: dataApi({ ...dataApiSettings(db.server), client: retrying }) });
      await expect(handler({ Records: [sqsRecord()] }, lambdaContext())).rejects.toThrow(/database\.client.*maxAttempts: 1/s);
      await expect(handler({ Records: [sqsRecord()] }, lambdaContext())).rejects.toThrow(
        'inbox option "database.client": retries each call up to 3 times; inside a transaction a retried statement whose first response was lost runs twice. ',
      );
      expect(db.server.stats.total()).toBe(0);
      // Single-statement mode is safe with retries: a re-sent statement finds its own claim.
      const single = singleStatementMode({ database: dataApi({ ...dataApiSettings(db.server), client: retrying }) });
      expect((await single({ Records: [sqsRecord({ body: { orderId: 'retrying-ok' } })] }, lambdaContext())).batchItemFailures).toEqual([]);
      // The batch modes likewise: one transaction refuses retries, one gated statement takes them.
      const inboxWith = (mode: object) =>
        inbox<Order>({
          consumer: 'order-worker',
          database: dataApi({ ...dataApiSettings(db.server), client: retrying }),
          logger: recordingLogger(),
          metrics: recordingMetrics(),
          ...mode,
        });
      const batchTx = inboxWith({ applyBatch: async () => {} });
      await expect(batchTx({ Records: [sqsRecord()] }, lambdaContext())).rejects.toThrow(/database\.client.*maxAttempts: 1/s);
      const batchStatement = inboxWith({
        statementBatch: { sql: "INSERT INTO public.orders (order_id, status, shipped_count) SELECT body->>'orderId', 'shipped', 1 FROM claimed" },
      });
      expect((await batchStatement({ Records: [sqsRecord({ body: { orderId: 'retrying-batch-ok' } })] }, lambdaContext())).batchItemFailures).toEqual([]);
      retrying.destroy();
    },
  );

  it('hands apply the key, the parsed body, the record, the attempt and the FIFO group', async () => {
    const seen: unknown[] = [];
    const { handler } = transactionMode({ apply: async (_, message) => void seen.push(message) });
    const fifo = sqsRecord({ body: { orderId: 'm-1' }, key: 'key-m1', groupId: 'customer-1', receiveCount: 3 });
    const standard = sqsRecord({ body: { orderId: 'm-2' } });
    await handler({ Records: [fifo] }, lambdaContext());
    await handler({ Records: [standard] }, lambdaContext());
    expect(seen).toEqual([
      { key: 'key-m1', body: { orderId: 'm-1' }, record: fifo, id: fifo.messageId, attempt: 3, groupId: 'customer-1' },
      { key: standard.messageId, body: { orderId: 'm-2' }, record: standard, id: standard.messageId, attempt: 1, groupId: undefined },
    ]);
  });

  it.each(['0', '-2', '1.5', 'many'])('counts the attempt as 1 when ApproximateReceiveCount is %s', async (count) => {
    const attempts: number[] = [];
    const { handler } = transactionMode({ apply: async (_, message) => void attempts.push(message.attempt) });
    const record = sqsRecord();
    await handler({ Records: [{ ...record, attributes: { ...record.attributes, ApproximateReceiveCount: count } }] }, lambdaContext());
    expect(attempts).toEqual([1]);
  });

  it('makes k + 3 Data API calls for an apply of k statements, and 3 for a duplicate', async () => {
    for (const k of [0, 1, 3]) {
      const handler = inbox<Order>({
        consumer: `calls-${k}`,
        database: db.target,
        logger: recordingLogger(),
        metrics: recordingMetrics(),
        apply: async (tx) => {
          for (let i = 0; i < k; i++) await tx.execute('SELECT 1');
        },
      });
      const record = sqsRecord();
      db.server.stats.reset();
      await handler({ Records: [record] }, lambdaContext());
      expect(db.server.stats.total()).toBe(k + 3);
      expect(db.server.stats.calls).toMatchObject({ BeginTransaction: 1, CommitTransaction: 1, ExecuteStatement: k + 1 });
      db.server.stats.reset();
      await handler({ Records: [record] }, lambdaContext());
      expect(db.server.stats.total()).toBe(3);
      expect(db.server.stats.calls).toMatchObject({ BeginTransaction: 1, RollbackTransaction: 1, ExecuteStatement: 1 });
    }
  });
});

describe('single-statement mode', () => {
  it('makes exactly one Data API call per record, new or duplicate', async () => {
    const handler = singleStatementMode();
    const records = [1, 2, 3].map((i) => sqsRecord({ body: { orderId: `s-${i}` } }));
    await handler({ Records: records }, lambdaContext());
    expect(db.server.stats.total()).toBe(3);
    expect(db.server.stats.calls.ExecuteStatement).toBe(3);
    db.server.stats.reset();
    await handler({ Records: records }, lambdaContext());
    expect(db.server.stats.total()).toBe(3);
    for (const i of [1, 2, 3]) expect(await shipped(`s-${i}`)).toBe(1);
  });

  it('refuses a statement that mentions claimed only inside a string literal or a comment', () => {
    for (const sql of [
      "UPDATE public.orders SET status = 'claimed' WHERE order_id = :orderId",
      'UPDATE public.orders SET status = :s /* claimed */ WHERE order_id = :orderId',
    ]) {
      expect(() => inbox<Order>({ consumer: 'x', database: db.target, statement: { sql, params: () => ({}) } })).toThrow(/never mentions `claimed`/);
    }
  });

  const refusedSql: [string, string, RegExp][] = [
    ['an empty statement', '   ', /"statement\.sql": must give a non-empty `sql` string/],
    [
      'claimed only in a line comment',
      'UPDATE public.orders SET status = :s WHERE order_id = :orderId -- claimed',
      /never mentions `claimed`, so it would apply its effect to duplicates too\. Gate it on the claim, e\.g\. `UPDATE orders SET status = 'shipped' WHERE order_id = :orderId AND EXISTS \(SELECT 1 FROM claimed\)` or `INSERT INTO shipments \(order_id\) SELECT :orderId FROM claimed`$/,
    ],
    ['claimed only in a quoted identifier', 'UPDATE public.orders SET "claimed" = true WHERE order_id = :orderId', /never mentions `claimed`/],
    [
      'claimed only in a literal with an escaped quote',
      "UPDATE public.orders SET status = 'it''s claimed' WHERE order_id = :orderId",
      /never mentions `claimed`/,
    ],
    ['claimed only inside a longer word', 'UPDATE public.orders SET unclaimed = true WHERE order_id = :orderId', /never mentions `claimed`/],
    ['claimed only when a literal between its halves is dropped', "UPDATE public.orders SET status = :s WHERE clai'x'med", /never mentions `claimed`/],
    [
      'claimed only when a quoted identifier between its halves is dropped',
      'UPDATE public.orders SET status = :s WHERE clai"x"med',
      /never mentions `claimed`/,
    ],
    [
      'two statements',
      'INSERT INTO public.orders (order_id) SELECT :orderId FROM claimed; DELETE FROM public.orders',
      /"statement\.sql": holds more than one statement; the Data API runs one statement per call/,
    ],
    [
      'two statements with no space between them',
      'INSERT INTO public.orders (order_id) SELECT :orderId FROM claimed;DELETE FROM public.orders',
      /holds more than one statement/,
    ],
    [
      'two statements split over lines',
      'INSERT INTO public.orders (order_id) SELECT :orderId FROM claimed;\n\n  DELETE FROM public.orders',
      /holds more than one statement/,
    ],
  ];

  it.each(refusedSql)('refuses at cold start %s', (_, sql, message) => {
    expect(() => inbox<Order>({ consumer: 'x', database: db.target, statement: { sql, params: () => ({}) } })).toThrow(message);
  });

  it('runs a gated statement that ends in a semicolon, and one whose comment or literal holds a semicolon', async () => {
    for (const [orderId, sql] of [
      ['semi-1', `INSERT INTO public.orders (order_id, status, shipped_count) SELECT :orderId, 'shipped', 1 FROM claimed; \n `],
      ['semi-2', `INSERT INTO public.orders (order_id, status, shipped_count) SELECT :orderId, 'a;b', 1 FROM claimed /* one; statement */`],
      ['semi-3', `INSERT INTO public.orders (order_id, status, shipped_count) SELECT :orderId, 'a;b', 1 FROM/* gate */claimed`],
    ] as const) {
      const handler = singleStatementMode({ statement: { sql, params: (m) => ({ orderId: m.body.orderId }) } });
      expect((await handler({ Records: [sqsRecord({ body: { orderId } })] }, lambdaContext())).batchItemFailures).toEqual([]);
      expect(await shipped(orderId)).toBe(1);
    }
    expect(await db.query("SELECT order_id, status FROM public.orders WHERE order_id LIKE 'semi-%' ORDER BY order_id")).toEqual([
      { order_id: 'semi-1', status: 'shipped' },
      { order_id: 'semi-2', status: 'a;b' },
      { order_id: 'semi-3', status: 'a;b' },
    ]);
  });

  it('fails a record whose statement uses a parameter name the claim reserves, naming it, without a call', async () => {
    const logger = recordingLogger();
    const handler = singleStatementMode({
      logger,
      statement: (m) => ({ sql: 'INSERT INTO public.orders (order_id) SELECT :inbox_order FROM claimed', params: { inbox_order: m.body.orderId } }),
    });
    const record = sqsRecord();
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect(logger.lines.filter((l) => l.level === 'warn').map((l) => (l.extra[0] as { error: { message: string } }).error.message)).toEqual([
      'inbox option "statement": parameter ":inbox_order" uses the prefix inbox_, which the claim reserves; rename it',
    ]);
    expect(db.server.stats.total()).toBe(0);
  });

  it('refuses at cold start a statement that never mentions claimed', () => {
    expect(() =>
      inbox<Order>({
        consumer: 'x',
        database: db.target,
        statement: { sql: "UPDATE public.orders SET status = 'shipped' WHERE order_id = :orderId", params: (m) => ({ orderId: m.body.orderId }) },
      }),
    ).toThrow(/statement\.sql.*never mentions `claimed`/s);
  });

  it('fails a record whose statement function returns ungated SQL, with the fix in the error', async () => {
    const logger = recordingLogger();
    const handler = inbox<Order>({
      consumer: 'x',
      database: db.target,
      logger,
      metrics: recordingMetrics(),
      statement: (m) => ({ sql: "UPDATE public.orders SET status = 'x' WHERE order_id = :orderId", params: { orderId: m.body.orderId } }),
    });
    const record = sqsRecord();
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect(JSON.stringify(logger.lines)).toMatch(/EXISTS \(SELECT 1 FROM claimed\)/);
    expect(db.server.stats.total()).toBe(0);
  });
});

describe('telemetry', () => {
  it('publishes one set of metrics per invocation with each outcome counted', async () => {
    const metrics = recordingMetrics();
    const summaries: unknown[] = [];
    const handler = inbox<Order>({
      consumer: 'order-worker',
      database: db.target,
      logger: recordingLogger(),
      metrics,
      onBatch: (summary) => summaries.push(summary),
      apply: async (tx, message) => {
        if (message.body.orderId === 'boom') throw new Error('boom');
        await tx.execute(SHIP, { orderId: message.body.orderId });
      },
    });
    const ok = sqsRecord({ body: { orderId: 'ok' } });
    const boom = sqsRecord({ body: { orderId: 'boom' } });
    await handler({ Records: [ok] }, lambdaContext());
    await handler({ Records: [ok, boom, sqsRecord({ body: { orderId: 'new' } })] }, lambdaContext());
    expect(metrics.published).toHaveLength(2);
    const second = metrics.published[1]!;
    expect(second).toMatchObject({
      Processed: [1],
      Duplicates: [1],
      Failures: [1],
      KeyCollisions: [0],
      Parked: [0],
      ShortCircuited: [0],
      DeferredByDeadline: [0],
    });
    expect(second.RecordLatency).toHaveLength(3);
    expect(second.BatchLatency).toHaveLength(1);
    expect(summaries[1]).toMatchObject({ records: 3, processed: 1, duplicates: 1, failures: 1, failedMessageIds: [boom.messageId] });
    expect(summaries[0]).toMatchObject({ failedMessageIds: [] });
  });

  it('names a failed record that has no messageId as "" in the summary, and fails the batch it cannot report', async () => {
    const summaries: BatchSummary[] = [];
    const handler = inbox<Order>({
      consumer: 'order-worker-unnamed',
      database: db.target,
      logger: recordingLogger(),
      metrics: recordingMetrics(),
      onBatch: (summary) => summaries.push(summary),
      apply: async () => {
        throw new Error('boom');
      },
    });
    const unnamed = { ...sqsRecord({ body: { orderId: 'unnamed' }, key: 'k-unnamed' }), messageId: '' };
    await expect(handler({ Records: [unnamed] }, lambdaContext())).rejects.toThrow('a record that did not commit has no messageId');
    expect(summaries.map((summary) => summary.failedMessageIds)).toEqual([['']]);
  });
});

describe('the handler', () => {
  it('refuses an event without Records, or no event, before any call: a misconfigured trigger must not acknowledge anything', async () => {
    const { handler } = transactionMode();
    await expect(handler({} as never, lambdaContext())).rejects.toThrow(/handles SQS events/);
    await expect(handler(null as never, lambdaContext())).rejects.toThrow(/handles SQS events/);
    expect(db.server.stats.total()).toBe(0);
  });

  it('runs every record when the context has no clock', async () => {
    const { handler } = transactionMode();
    const records = [sqsRecord({ body: { orderId: 'no-clock-1' } }), sqsRecord({ body: { orderId: 'no-clock-2' } })];
    expect((await handler({ Records: records }, {} as never)).batchItemFailures).toEqual([]);
    expect((await handler({ Records: [sqsRecord({ body: { orderId: 'no-context' } })] })).batchItemFailures).toEqual([]);
    for (const id of ['no-clock-1', 'no-clock-2', 'no-context']) expect(await shipped(id)).toBe(1);
  });

  it('processes a hand-built record that carries no attributes at all', async () => {
    const { handler, calls } = transactionMode();
    const record = { ...sqsRecord({ body: { orderId: 'bare' } }), attributes: undefined as never, messageAttributes: undefined as never };
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(calls).toEqual(['bare']);
  });

  it('takes its default deadline margin as twice callTimeoutMs when that is under half the remaining time', async () => {
    let remaining = 5_000;
    const started: string[] = [];
    const { handler } = transactionMode({
      callTimeoutMs: 1_000,
      concurrency: 1,
      apply: async (_, message) => {
        started.push(message.body.orderId);
        remaining -= 1_400;
      },
    });
    const records = ['m1', 'm2', 'm3', 'm4'].map((orderId) => sqsRecord({ body: { orderId } }));
    const response = await handler(
      { Records: records },
      lambdaContext(() => remaining),
    );
    // Margin min(2 x 1 s, 5 s / 2) = 2 s: m3 starts with 2.2 s left, m4 would start with 0.8 s.
    expect(started).toEqual(['m1', 'm2', 'm3']);
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: records[3]!.messageId }]);
  });

  it('starts a record when the remaining time equals the margin exactly', async () => {
    const { handler, calls } = transactionMode({ deadlineMarginMs: 5_000 });
    expect(
      (
        await handler(
          { Records: [sqsRecord({ body: { orderId: 'on-the-line' } })] },
          lambdaContext(() => 5_000),
        )
      ).batchItemFailures,
    ).toEqual([]);
    expect(calls).toEqual(['on-the-line']);
  });

  dataApiOnly('test/inbox/consumer.test.ts', 'retries auto-pause only while the retry can finish before the deadline margin', async () => {
    db.server.faults.autoPause({ resumeAfterMs: 60_000 });
    const slept: number[] = [];
    const { handler } = transactionMode({
      deadlineMarginMs: 5_000,
      resumeDelaysMs: [4_000, 6_000],
      sleep: async (ms) => void slept.push(ms),
    });
    const record = sqsRecord();
    // 10 s left, 5 s margin: the 4 s retry fits in the 5 s before the margin, the 6 s one does not.
    expect(
      (
        await handler(
          { Records: [record] },
          lambdaContext(() => 10_000),
        )
      ).batchItemFailures,
    ).toEqual([{ itemIdentifier: record.messageId }]);
    expect(slept).toEqual([4_000]);
  });

  it('measures record and batch latency on its clock', async () => {
    const metrics = recordingMetrics();
    let clock = 1_000;
    const { handler } = transactionMode({
      metrics,
      concurrency: 1,
      now: () => clock,
      apply: async () => {
        clock += 250;
      },
    });
    await handler({ Records: [sqsRecord(), sqsRecord()] }, lambdaContext());
    expect(metrics.published[0]!.RecordLatency).toEqual([250, 250]);
    expect(metrics.published[0]!.BatchLatency).toEqual([500]);
  });

  describe('when INBOX_CONSUMER names another consumer than the option', () => {
    const previous = process.env.INBOX_CONSUMER;
    const restore = () => (previous === undefined ? delete process.env.INBOX_CONSUMER : (process.env.INBOX_CONSUMER = previous));
    const warnings = (consumer: string | undefined) => {
      const logger = recordingLogger();
      inbox<Order>({ ...(consumer === undefined ? {} : { consumer }), database: db.target, logger, metrics: recordingMetrics(), apply: async () => {} });
      return logger.lines.filter((l) => l.level === 'warn');
    };

    it('warns once at cold start, naming both', () => {
      process.env.INBOX_CONSUMER = 'deployed-worker';
      try {
        expect(warnings('order-worker')).toEqual([
          {
            level: 'warn',
            message: "inbox consumer differs from INBOX_CONSUMER: claims and metrics use the option, the deployment's alarms watch the environment name",
            extra: [{ consumer: 'order-worker', INBOX_CONSUMER: 'deployed-worker' }],
          },
        ]);
      } finally {
        restore();
      }
    });

    it('stays quiet when they agree, when only one is set, or when the option is left to the environment', () => {
      try {
        process.env.INBOX_CONSUMER = 'order-worker';
        expect(warnings('order-worker')).toEqual([]);
        expect(warnings(undefined)).toEqual([]);
        delete process.env.INBOX_CONSUMER;
        expect(warnings('order-worker')).toEqual([]);
      } finally {
        restore();
      }
    });
  });
});
