import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { inbox } from '../../lambda/inbox/index.js';
import type { InboxOptions, InboxTransaction } from '../../lambda/inbox/index.js';
import { inboxFixture, lambdaContext, recordingLogger, recordingMetrics, sqsRecord, TRANSPORT } from '../support/inbox.js';
import type { InboxFixture } from '../support/inbox.js';

// Transaction control sent as SQL, in every place user SQL enters the inbox's transaction, on the transport
// the suite runs on: refused before it is sent, so the record fails and nothing of it commits. On the wire,
// before this was refused, `tx.execute('ROLLBACK')` ended the inbox's transaction, the effect's statements
// after it committed on their own, and the inbox's COMMIT ("there is no transaction in progress") was taken
// for success: the record was acknowledged without its claim, and a redelivery applied it again.

let db: InboxFixture;
beforeAll(async () => {
  db = await inboxFixture('transaction_control');
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
const ship = (tx: InboxTransaction, m: { body: Order }) => tx.execute(SHIP, { orderId: m.body.orderId });

const shipped = async (orderId: string) =>
  ((await db.query('SELECT shipped_count FROM public.orders WHERE order_id = $1', [orderId]))[0]?.shipped_count as number | undefined) ?? 0;
const claims = async () => (await db.query('SELECT count(*)::int AS n FROM inbox.consumed_message'))[0]!.n as number;

/** A consumer of this file, with `options` for its mode; its logger keeps what it is told. */
function worker(options: Partial<InboxOptions<Order>>) {
  const logger = recordingLogger();
  const handler = inbox<Order>({ consumer: 'control-worker', database: db.target, logger, metrics: recordingMetrics(), ...options } as InboxOptions<Order>);
  return { handler, logger };
}

/** The failed records' logged errors, by messageId. */
function failures(logger: ReturnType<typeof recordingLogger>): Record<string, { name: string; message: string }> {
  return Object.fromEntries(
    logger.lines
      .filter((line) => line.message.startsWith('record failed'))
      .map((line) => {
        const { messageId, error } = line.extra[0] as { messageId: string; error: { name: string; message: string } };
        return [messageId, error];
      }),
  );
}

/** The statements the database was sent (through the local Data API, or the wire proxy), from now on: not the inbox's own Begin, Commit or Rollback. */
function sentSql(): string[] {
  const sent: string[] = [];
  db.server.faults.watch(({ operation, sql }) => {
    if ((operation === 'ExecuteStatement' || operation === 'BatchExecuteStatement') && sql !== undefined) sent.push(sql);
  });
  return sent;
}

/** Where user SQL enters the inbox's transaction, and how each sends a text of its own there before the effect. */
const ENTRIES: readonly {
  readonly name: string;
  readonly options: (control: string) => Partial<InboxOptions<Order>>;
}[] = [
  {
    name: 'tx.execute in apply',
    options: (control) => ({
      apply: async (tx, m) => {
        await tx.execute(control);
        await ship(tx, m);
      },
    }),
  },
  {
    name: 'tx.execute in apply, the claim riding on the first statement',
    options: (control) => ({
      claim: 'with-first-statement',
      apply: async (tx, m) => {
        await tx.execute(control);
        await ship(tx, m);
      },
    }),
  },
  {
    name: 'tx.executeBatch in apply',
    options: (control) => ({
      apply: async (tx, m) => {
        await tx.executeBatch(control, [{}, {}]);
        await ship(tx, m);
      },
    }),
  },
  {
    name: 'tx.execute in applyBatch',
    options: (control) => ({
      applyBatch: async (tx, messages) => {
        await tx.execute(control);
        for (const m of messages) await ship(tx, m);
      },
    }),
  },
  {
    name: 'tx.execute in apply, the error caught by apply',
    options: (control) => ({
      apply: async (tx, m) => {
        await tx.execute(control).catch(() => {});
        await ship(tx, m);
      },
    }),
  },
];

/** Transaction control as code may write it: each refused with the statement it is. */
const CONTROLS = [
  { sql: 'ROLLBACK', refused: 'ROLLBACK' },
  { sql: 'commit', refused: 'COMMIT' },
  { sql: '/* done */ End Transaction', refused: 'END' },
  { sql: 'SAVEPOINT before_ship', refused: 'SAVEPOINT' },
  { sql: 'SELECT 1 -- one statement, then\r; ROLLBACK', refused: 'ROLLBACK' },
] as const;

describe.each(ENTRIES)(`transaction control sent as SQL: $name (${TRANSPORT})`, ({ options }) => {
  it.each(CONTROLS)(
    'refuses $sql before it is sent: the records fail (not parked), nothing of them commits, and once fixed their redelivery applies each once',
    async ({ sql, refused }) => {
      // A bug in the code, not in the message: it is not parked.
      const { handler, logger } = worker({ onPermanentError: 'park', ...options(sql) });
      const records = [sqsRecord({ body: { orderId: 'tc-1' } }), sqsRecord({ body: { orderId: 'tc-2' } })];
      const sent = sentSql();
      const response = await handler({ Records: records }, lambdaContext());
      expect(response.batchItemFailures).toEqual(records.map((record) => ({ itemIdentifier: record.messageId })));
      for (const record of records)
        expect(failures(logger)[record.messageId]).toMatchObject({ name: 'TransactionControlError', message: expect.stringMatching(`^${refused} refused`) });
      expect(sent.filter((text) => text.includes(sql))).toEqual([]);
      expect([await shipped('tc-1'), await shipped('tc-2'), await claims()]).toEqual([0, 0, 0]);
      expect(await db.query('SELECT count(*)::int AS n FROM inbox.parked_message')).toEqual([{ n: 0 }]);

      const fixed = worker(options('SELECT 1')).handler;
      expect((await fixed({ Records: records }, lambdaContext())).batchItemFailures).toEqual([]);
      expect([await shipped('tc-1'), await shipped('tc-2'), await claims()]).toEqual([1, 1, 2]);
    },
  );
});

describe(`transaction control in a statement mode's SQL (${TRANSPORT})`, () => {
  const gated = "INSERT INTO public.orders (order_id, status, shipped_count) SELECT :orderId, 'shipped', 1 FROM claimed";
  const batchGated = "INSERT INTO public.orders (order_id, status, shipped_count) SELECT body->>'orderId', 'shipped', 1 FROM claimed";

  it.each([`${gated}; COMMIT`, `${gated} -- a note\r; ROLLBACK`, `${gated} /* ; */; END`])('refuses %j at cold start, naming the option', (sql) => {
    const make = () => inbox<Order>({ consumer: 'control-worker', database: db.target, statement: { sql, params: (m) => ({ orderId: m.body.orderId }) } });
    expect(make).toThrow('inbox option "statement.sql": holds more than one statement');
  });

  it.each([`${batchGated}; COMMIT`, `${batchGated} -- a note\r; ROLLBACK`])('refuses %j at cold start in statementBatch, naming the option', (sql) => {
    expect(() => inbox<Order>({ consumer: 'control-worker', database: db.target, statementBatch: { sql } })).toThrow(
      'inbox option "statementBatch.sql": holds more than one statement',
    );
  });

  it('refuses it in a statement made per message, before it is sent, and fails the record', async () => {
    const { handler, logger } = worker({ statement: (m) => ({ sql: `${gated} -- hidden\r; ROLLBACK`, params: { orderId: m.body.orderId } }) });
    const record = sqsRecord({ body: { orderId: 'st-1' } });
    const sent = sentSql();
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect(failures(logger)[record.messageId]?.message).toMatch(/holds more than one statement/);
    expect(sent.filter((text) => text.includes('ROLLBACK'))).toEqual([]);
    expect(await shipped('st-1')).toBe(0);
  });

  it('keeps a gated statement that only mentions transaction control in literals and comments', async () => {
    const { handler } = worker({
      statement: { sql: `${gated.replace("'shipped'", "'shipped; COMMIT'")} /* ; ROLLBACK */ -- ; END`, params: (m) => ({ orderId: m.body.orderId }) },
    });
    const record = sqsRecord({ body: { orderId: 'st-2' } });
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(await db.query('SELECT status FROM public.orders WHERE order_id = $1', ['st-2'])).toEqual([{ status: 'shipped; COMMIT' }]);
  });
});
