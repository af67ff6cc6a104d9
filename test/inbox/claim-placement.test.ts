import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { inbox, InboxConfigError } from '../../lambda/inbox/index.js';
import type { InboxOptions, InboxTransaction } from '../../lambda/inbox/index.js';
import { inboxFixture, lambdaContext, recordingLogger, recordingMetrics, sqsRecord } from '../support/inbox.js';
import type { InboxFixture } from '../support/inbox.js';
import { seededRandom } from '../support/seed.js';

/** Names unique within the run's database, from the run's seed. */
const uniqueness = seededRandom('claim-placement');

let db: InboxFixture;
beforeAll(async () => {
  db = await inboxFixture('claim_placement');
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

/** A consumer whose claim rides on the effect's first statement; `apply` defaults to one SHIP statement. */
function riding(
  apply: InboxOptions<Order>['apply'] = (tx, m) => tx.execute(SHIP, { orderId: m.body.orderId }).then(() => undefined),
  extra: Partial<InboxOptions<Order>> = {},
) {
  const logger = recordingLogger();
  const metrics = recordingMetrics();
  const handler = inbox<Order>({ consumer: 'order-worker', database: db.target, logger, metrics, claim: 'with-first-statement', apply, ...extra });
  return { handler, logger, metrics };
}

const shipped = async (orderId: string) =>
  (await db.query('SELECT shipped_count FROM public.orders WHERE order_id = $1', [orderId]))[0]?.shipped_count as number | undefined;
const claims = async () => (await db.query('SELECT message_id FROM inbox.consumed_message ORDER BY 1')).map((row) => row.message_id as string);

describe("claim: 'with-first-statement'", () => {
  it('makes k + 2 Data API calls for an apply of k >= 1 statements, 3 for k = 0, and 4 for a duplicate', async () => {
    for (const k of [0, 1, 3]) {
      const { handler } = riding(
        async (tx) => {
          for (let i = 0; i < k; i++) await tx.execute('SELECT 1');
        },
        { consumer: `calls-${k}` },
      );
      const record = sqsRecord();
      db.server.stats.reset();
      expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([]);
      expect(db.server.stats.total()).toBe(k === 0 ? 3 : k + 2);
      expect(db.server.stats.calls).toMatchObject({ BeginTransaction: 1, CommitTransaction: 1, ExecuteStatement: Math.max(k, 1) });
      // A duplicate on its first delivery (the batch filter looks up redeliveries only): Begin, the statement
      // the taken claim refuses, Rollback, and the stored hash's lookup.
      db.server.stats.reset();
      expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([]);
      expect(db.server.stats.total()).toBe(k === 0 ? 3 : 4);
    }
  });

  it('applies a new message once, and a duplicate not at all, reporting both succeeded', async () => {
    const { handler, metrics } = riding();
    const record = sqsRecord({ body: { orderId: 'o-1' } });
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(await shipped('o-1')).toBe(1);
    expect(await claims()).toEqual([record.messageId]);
    expect(metrics.published.map((m) => [m.Processed, m.Duplicates])).toEqual([
      [[1], [0]],
      [[0], [1]],
    ]);
  });

  it('refuses every later statement of a duplicate, even when apply catches the first refusal', async () => {
    const record = sqsRecord({ body: { orderId: 'o-2' } });
    await riding().handler({ Records: [record] }, lambdaContext());
    const seen: Error[] = [];
    const { handler } = riding(async (tx, m) => {
      await tx.execute(SHIP, { orderId: m.body.orderId }).catch((error: Error) => void seen.push(error));
      await tx.execute(SHIP, { orderId: m.body.orderId }).catch((error: Error) => void seen.push(error));
    });
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(seen.map((error) => error.name)).toEqual(['ClaimTakenError', 'ClaimTakenError']);
    // What apply sees says what happened; the first refusal carries the database's unique violation.
    expect(seen[0]!.message).toBe("this message's key is claimed already (a duplicate): nothing ran, and the inbox rolls the transaction back");
    expect(seen[0]!.cause).toMatchObject({ sqlState: '23505' });
    expect(seen[1]!.cause).toBeUndefined();
    expect(await shipped('o-2')).toBe(1);
  });

  it('fails a key reused with another body as a collision, not applied', async () => {
    await riding().handler({ Records: [sqsRecord({ key: 'k-1', body: { orderId: 'first' } })] }, lambdaContext());
    const { handler, logger, metrics } = riding();
    const second = sqsRecord({ key: 'k-1', body: { orderId: 'second' } });
    expect((await handler({ Records: [second] }, lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: second.messageId }]);
    expect(await shipped('second')).toBeUndefined();
    expect(logger.lines.filter((line) => line.level === 'error').map((line) => line.message)).toEqual([expect.stringMatching(/key collision/)]);
    expect(metrics.published[0]).toMatchObject({ KeyCollisions: [1], Failures: [1] });
  });

  it.each([2, 5])('%i handlers given the same message at once apply its effect exactly once, and all succeed', async (n) => {
    const record = sqsRecord({ body: { orderId: `race-${n}` } });
    let effects = 0;
    const handlers = Array.from({ length: n }, () =>
      inbox<Order>({
        consumer: 'order-worker',
        claim: 'with-first-statement',
        database: db.instance(),
        logger: recordingLogger(),
        metrics: recordingMetrics(),
        apply: async (tx, m) => {
          // The claim rides on this statement and holds its row lock while the others pile up behind it.
          await tx.execute('SELECT pg_sleep(0.05)');
          effects++;
          await tx.execute(SHIP, { orderId: m.body.orderId });
        },
      }),
    );
    const responses = await Promise.all(handlers.map((handler) => handler({ Records: [record] }, lambdaContext())));
    for (const response of responses) expect(response.batchItemFailures).toEqual([]);
    expect(effects).toBe(1);
    expect(await shipped(`race-${n}`)).toBe(1);
  });

  it('rolls the claim back with the effect when apply throws after its first statement', async () => {
    const record = sqsRecord({ body: { orderId: 'o-3' } });
    const { handler } = riding(async (tx, m) => {
      await tx.execute(SHIP, { orderId: m.body.orderId });
      throw new Error('boom');
    });
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect(await shipped('o-3')).toBeUndefined();
    expect(await claims()).toEqual([]);
    // Begin, the statement with the claim, Rollback: the carrier succeeded, so no lookup of an earlier claim.
    expect(db.server.stats.total()).toBe(3);
  });

  it('fails, not settles as a duplicate, a record whose apply caught the failure of the statement carrying its claim', async () => {
    await db.query("INSERT INTO public.orders (order_id, status, shipped_count) VALUES ('caught', 'new', 0)");
    const record = sqsRecord({ body: { orderId: 'caught' } });
    const { handler, metrics } = riding(async (tx, m) => {
      // The effect's own unique violation, caught: the claim it carried did not happen either.
      await tx
        .execute("INSERT INTO public.orders (order_id, status, shipped_count) VALUES (:orderId, 'shipped', 1)", { orderId: m.body.orderId })
        .catch(() => {});
    });
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect(metrics.published[0]).toMatchObject({ Duplicates: [0], Failures: [1] });
    expect(await claims()).toEqual([]);
  });

  it("fails, not settles as a duplicate, a statement error that only mentions the inbox key's constraint", async () => {
    const record = sqsRecord({ body: { orderId: 'o-mention' } });
    // 22P02, whose message quotes the input: "consumed_message_pkey", but the claim did not find its key taken.
    const { handler, metrics } = riding((tx) => tx.execute(`SELECT CAST('"consumed_message_pkey"' AS int) AS n`).then(() => undefined));
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect(metrics.published[0]).toMatchObject({ Duplicates: [0], Failures: [1] });
    expect(await claims()).toEqual([]);
  });

  it('sends the claim once when apply makes several batch calls, and runs each of them', async () => {
    const record = sqsRecord({ body: { orderId: 'o-batches' } });
    const { handler, metrics } = riding(async (tx, m) => {
      await tx.executeBatch(SHIP, [{ orderId: m.body.orderId }]);
      await tx.executeBatch(SHIP, [{ orderId: `${m.body.orderId}-b` }]);
    });
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(metrics.published[0]).toMatchObject({ Processed: [1], Duplicates: [0] });
    expect([await shipped('o-batches'), await shipped('o-batches-b')]).toEqual([1, 1]);
    // Begin, the claim alone, the two batch calls, Commit.
    expect(db.server.stats.total()).toBe(5);
  });

  it("fails, not settles as a duplicate, a unique violation of the effect's own table", async () => {
    await db.query("INSERT INTO public.orders (order_id, status, shipped_count) VALUES ('taken', 'new', 0)");
    const record = sqsRecord({ body: { orderId: 'taken' } });
    const { handler, metrics } = riding((tx, m) =>
      tx
        .execute("INSERT INTO public.orders (order_id, status, shipped_count) VALUES (:orderId, 'shipped', 1)", { orderId: m.body.orderId })
        .then(() => undefined),
    );
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect(metrics.published[0]).toMatchObject({ Duplicates: [0], Failures: [1] });
    expect(await claims()).toEqual([]);
  });

  it("settles a duplicate as a duplicate when PostgreSQL reports the effect's own unique violation instead of the claim's", async () => {
    const record = sqsRecord({ body: { orderId: 'o-5' } });
    // A plain INSERT: on the redelivery both the claim and the effect violate a unique key.
    const { handler, metrics } = riding((tx, m) =>
      tx
        .execute("INSERT INTO public.orders (order_id, status, shipped_count) VALUES (:orderId, 'shipped', 1)", { orderId: m.body.orderId })
        .then(() => undefined),
    );
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(metrics.published.map((m) => [m.Processed, m.Duplicates, m.Failures])).toEqual([
      [[1], [0], [0]],
      [[0], [1], [0]],
    ]);
  });

  it('fails the record when the claim going alone (before a statement that takes no CTE) fails, and applies it once on redelivery', async () => {
    const record = sqsRecord({ body: { orderId: 'o-alone' } });
    const { handler } = riding((tx, m) =>
      tx
        .execute("SET LOCAL application_name = 'x'")
        .then(() => tx.execute(SHIP, { orderId: m.body.orderId }))
        .then(() => undefined),
    );
    db.server.faults.serverError({ count: 1, status: 500, operation: 'ExecuteStatement', select: (call) => call.sql?.includes('WITH claim AS') === true });
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect(await shipped('o-alone')).toBeUndefined();
    // Begin, the failed claim, Rollback: apply's statements are not sent after it, and a claim that went
    // alone hides no earlier one (no lookup).
    expect(db.server.stats.total()).toBe(3);
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(await shipped('o-alone')).toBe(1);
  });

  it('reports a commit whose answer was lost as failed, and its redelivery as a duplicate', async () => {
    const record = sqsRecord({ body: { orderId: 'o-4' } });
    const { handler } = riding();
    db.server.faults.dropResponse({ operation: 'CommitTransaction' });
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(await shipped('o-4')).toBe(1);
  });

  // What the first statement looks like decides whether it can carry the claim: one call fewer, or the
  // claim alone just before it. Either way the claim is made exactly once and a duplicate applies nothing.
  const statements: { name: string; calls: number; apply: (tx: InboxTransaction, m: { body: Order }) => Promise<unknown> }[] = [
    { name: 'a statement led by comments', calls: 3, apply: (tx, m) => tx.execute(`-- ship it\n/* once */ ${SHIP}`, { orderId: m.body.orderId }) },
    {
      name: 'a statement with CTEs of its own',
      calls: 3,
      apply: (tx, m) =>
        tx.execute(`WITH o AS (SELECT :orderId::text AS id) INSERT INTO public.orders (order_id, status, shipped_count) SELECT id, 'shipped', 1 FROM o`, {
          orderId: m.body.orderId,
        }),
    },
    {
      name: 'a recursive CTE',
      calls: 3,
      apply: (tx, m) =>
        tx.execute(`with recursive n(i) AS (SELECT 1) INSERT INTO public.orders (order_id, status, shipped_count) SELECT :orderId, 'shipped', i FROM n`, {
          orderId: m.body.orderId,
        }),
    },
    {
      name: 'a recursive CTE with a comment between its keywords',
      calls: 3,
      apply: (tx, m) =>
        tx.execute(
          `/* numbers */ WITH /* all of them */ RECURSIVE n(i) AS (SELECT 1) INSERT INTO public.orders (order_id, status, shipped_count) SELECT :orderId, 'shipped', i FROM n`,
          { orderId: m.body.orderId },
        ),
    },
    { name: 'a batch call', calls: 4, apply: (tx, m) => tx.executeBatch(SHIP, [{ orderId: m.body.orderId }]) },
    // Comments alone make no statement to carry the claim: it goes alone, before them.
    {
      name: 'a text of comments alone',
      calls: 5,
      apply: async (tx, m) => tx.execute('-- nothing to run yet\n/* ; */').then(() => tx.execute(SHIP, { orderId: m.body.orderId })),
    },
    {
      name: 'a statement that takes no CTE',
      calls: 5,
      apply: async (tx, m) => tx.execute("SET LOCAL application_name = 'x'").then(() => tx.execute(SHIP, { orderId: m.body.orderId })),
    },
    // A statement that does not begin with a keyword of its own (a parenthesised query) is not given a CTE.
    {
      name: 'a parenthesised query',
      calls: 5,
      apply: async (tx, m) => tx.execute('(SELECT 1 AS one)').then(() => tx.execute(SHIP, { orderId: m.body.orderId })),
    },
    { name: 'parameters named inbox_', calls: 4, apply: (tx, m) => tx.execute(SHIP.replaceAll(':orderId', ':inbox_order'), { inbox_order: m.body.orderId }) },
  ];

  it.each(statements)('claims exactly once with $name first, in $calls calls', async ({ apply, calls }) => {
    const record = sqsRecord({ body: { orderId: `o-${calls}-${uniqueness()}` } });
    const { handler } = riding(apply as InboxOptions<Order>['apply']);
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(db.server.stats.total()).toBe(calls);
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([]);
    const orderId = JSON.parse(record.body).orderId as string;
    expect(await db.query('SELECT count(*)::int AS n FROM public.orders WHERE order_id = $1', [orderId])).toEqual([{ n: 1 }]);
    expect(await claims()).toEqual([record.messageId]);
  });

  it('before-apply (the default): an apply that throws costs Begin, the claim, its statement and Rollback, no lookup', async () => {
    const record = sqsRecord({ body: { orderId: 'o-before-boom' } });
    const { handler } = riding(
      async (tx, m) => {
        await tx.execute(SHIP, { orderId: m.body.orderId });
        throw new Error('boom');
      },
      { claim: 'before-apply' },
    );
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect(db.server.stats.total()).toBe(4);
    expect(await shipped('o-before-boom')).toBeUndefined();
  });

  it.each(['before-apply', 'with-first-statement'] as const)(
    "%s: apply's statements after the claim run under a server statement_timeout of four fifths of callTimeoutMs",
    async (placement) => {
      const seen: unknown[] = [];
      const { handler } = riding(
        async (tx, m) => {
          await tx.execute(SHIP, { orderId: m.body.orderId });
          seen.push((await tx.execute("SELECT current_setting('statement_timeout') AS limit")).rows[0]!.limit);
        },
        { callTimeoutMs: 5_000, ...(placement === 'before-apply' ? { claim: 'before-apply' } : {}) },
      );
      const record = sqsRecord({ body: { orderId: `o-bound-${placement}` } });
      expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([]);
      expect(seen).toEqual(['4s']);
    },
  );

  it("before-apply (the default): tx.executeBatch runs in the claim's transaction, once", async () => {
    const record = sqsRecord({ body: { orderId: `o-before-${uniqueness()}` } });
    const orders = (orderId: string) => [{ orderId }, { orderId: `${orderId}-b` }];
    const { handler } = riding((tx, m) => tx.executeBatch(SHIP, orders(m.body.orderId)).then(() => undefined), { claim: 'before-apply' });
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(db.server.stats.calls).toMatchObject({ BeginTransaction: 1, CommitTransaction: 1 });
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([]);
    const orderId = JSON.parse(record.body).orderId as string;
    expect([await shipped(orderId), await shipped(`${orderId}-b`)]).toEqual([1, 1]);
  });

  it.each([
    ['before-apply', []],
    ['with-first-statement', ['ClaimWithFirstStatement.execute']],
  ] as const)("%s: a user's tx.execute reaches the transaction through %j, nothing that only forwards", async (placement, between) => {
    // A call after apply returned is refused by the transaction's queue, synchronously under the user's call:
    // the refusal's stack is the path from tx.execute to the transaction.
    let refusal: Promise<Error> | undefined;
    const { handler } = riding(
      async (tx, m) => {
        await tx.execute(SHIP, { orderId: m.body.orderId });
        refusal = new Promise((resolve) => setTimeout(() => tx.execute('SELECT 1').catch(resolve)));
      },
      { claim: placement },
    );
    expect((await handler({ Records: [sqsRecord({ body: { orderId: `o-frames-${placement}` } })] }, lambdaContext())).batchItemFailures).toEqual([]);
    const frames = ((await refusal!).stack ?? '').split('\n').flatMap((line) => /^\s+at (\S+)/.exec(line)?.[1] ?? []);
    const transaction = frames.indexOf('Transaction.execute');
    expect(frames.slice(0, transaction + 1)).toEqual(['Transaction.#enqueue', 'Transaction.execute']);
    // Then the frames between it and the user's callback (the timer's), which V8 names Timeout._onTimeout.
    const user = frames.findIndex((frame) => frame.startsWith('Timeout.'));
    expect(frames.slice(transaction + 1, user)).toEqual(between);
  });

  it('is refused with the single-statement modes, naming the option', () => {
    expect(() =>
      inbox<Order>({ consumer: 'x', database: db.target, claim: 'with-first-statement', statement: { sql: 'SELECT 1 FROM claimed', params: () => ({}) } }),
    ).toThrow(InboxConfigError);
    expect(() => inbox<Order>({ consumer: 'x', database: db.target, claim: 'first' as never, apply: async () => {} })).toThrow(
      /inbox option "claim": "first" must be 'before-apply' or 'with-first-statement'/,
    );
    // The imported object of earlier versions: refused, naming the string that replaced it.
    const withFirstStatement = { [Symbol.for('sqs-inbox.claim-runtime')]: () => undefined };
    expect(() => inbox<Order>({ consumer: 'x', database: db.target, claim: withFirstStatement as never, apply: async () => {} })).toThrow(
      /inbox option "claim": takes a string now: pass claim: 'with-first-statement' where you passed the imported withFirstStatement, which is gone/,
    );
  });
});
