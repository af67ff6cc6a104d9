import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inbox } from '../../lambda/inbox/index.js';
import { runScenario, startLocal } from '../../local/index.js';
import type { LocalStack, ScenarioEnvironment, ScenarioOptions, ScenarioTransport } from '../../local/index.js';

// The judge without `verify`: a write the handler makes outside the inbox's transaction while a record is
// applied, and well-formed messages that end in the dead-letter queue, are problems on their own, on the
// app's own unique-keyed table, where a doubled effect never shows as a second row.
let local: LocalStack;
beforeAll(async () => {
  local = await startLocal({ dataApi: { transactionIdleTimeoutMs: 2000 } });
});
afterAll(async () => local?.close());

interface Reservation {
  readonly reservationId: string;
  readonly sku: string;
}

const reservations: Omit<ScenarioOptions, 'handler'> = {
  setup: [
    'CREATE TABLE public.stock (sku text PRIMARY KEY, units int NOT NULL)',
    "INSERT INTO public.stock VALUES ('sku-1', 1000000)",
    'CREATE TABLE public.reservations (reservation_id text PRIMARY KEY, sku text NOT NULL, id bigserial)',
  ],
  message: (i) => ({ key: `res-${i}`, body: { reservationId: `res-${i}`, sku: 'sku-1' }, groupId: `order-${i % 4}` }),
  effects: 'SELECT reservation_id AS key, count(*), min(id) AS seq FROM public.reservations GROUP BY 1',
  env: { INBOX_CONSUMER: 'reservations' },
};

const RESERVE = 'INSERT INTO public.reservations (reservation_id, sku) VALUES (:id, :sku)';
const DECREMENT = 'UPDATE public.stock SET units = units - 1 WHERE sku = :sku';

/** The stock decremented on a session of the handler's own: autocommit, outside the record's transaction. */
const decrementOutside = ({ database, session }: ScenarioEnvironment) =>
  inbox<Reservation>({
    database,
    apply: async (tx, message) => {
      await tx.execute(RESERVE, { id: message.body.reservationId, sku: message.body.sku });
      await session.execute(DECREMENT, { sku: message.body.sku });
    },
  });

const correct = ({ database }: ScenarioEnvironment) =>
  inbox<Reservation>({
    database,
    apply: async (tx, message) => {
      await tx.execute(RESERVE, { id: message.body.reservationId, sku: message.body.sku });
      await tx.execute(DECREMENT, { sku: message.body.sku });
    },
  });

/** A well-formed message the handler can never apply: it fails every receive, then lands in the dead-letter queue. */
const refusesOne = ({ database }: ScenarioEnvironment) =>
  inbox<Reservation>({
    database,
    apply: async (tx, message) => {
      if (message.body.reservationId === 'res-3') throw new Error('stock service unreachable');
      await tx.execute(RESERVE, { id: message.body.reservationId, sku: message.body.sku });
    },
  });

/** Commits by hand inside apply: refused before it is sent, so no record ever applies. */
const commitsItself = ({ database }: ScenarioEnvironment) =>
  inbox<Reservation>({
    database,
    apply: async (tx, message) => {
      await tx.execute(RESERVE, { id: message.body.reservationId, sku: message.body.sku });
      await tx.execute('COMMIT');
    },
  });

/** One gated statement per record: it commits on its own, with no COMMIT of the handler's. */
const gatedStatement = ({ database }: ScenarioEnvironment) =>
  inbox<Reservation>({
    database,
    statement: (message) => ({
      sql: 'INSERT INTO public.reservations (reservation_id, sku) SELECT :id, :sku FROM claimed',
      params: { id: message.body.reservationId, sku: message.body.sku },
    }),
  });

/** The stock decremented in a transaction of the handler's own (a second session's BeginTransaction or BEGIN), committed while the record's is open. */
async function decrementInOwnTransaction(session: ScenarioEnvironment['session'], sku: string): Promise<void> {
  const own = await session.begin();
  await session.execute(DECREMENT, { sku }, own);
  await session.commit(own);
}

type Mode = 'apply' | 'with-first-statement' | 'applyBatch';

/** The same bug in each way a handler gets its transaction: per record, with the claim riding its first statement, per batch. */
const decrementInOwnTransactionBy =
  (mode: Mode) =>
  ({ database, session }: ScenarioEnvironment) => {
    if (mode === 'applyBatch')
      return inbox<Reservation>({
        database,
        applyBatch: async (tx, messages) => {
          for (const message of messages) {
            await tx.execute(RESERVE, { id: message.body.reservationId, sku: message.body.sku });
            await decrementInOwnTransaction(session, message.body.sku);
          }
        },
      });
    return inbox<Reservation>({
      database,
      ...(mode === 'with-first-statement' ? { claim: 'with-first-statement' as const } : {}),
      apply: async (tx, message) => {
        await tx.execute(RESERVE, { id: message.body.reservationId, sku: message.body.sku });
        await decrementInOwnTransaction(session, message.body.sku);
      },
    });
  };

describe.each<[ScenarioTransport, Mode]>([
  ['data-api', 'apply'],
  ['data-api', 'with-first-statement'],
  ['data-api', 'applyBatch'],
  ['postgres', 'apply'],
  ['postgres', 'with-first-statement'],
  ['postgres', 'applyBatch'],
  ['dsql', 'apply'],
  ['dsql', 'with-first-statement'],
])('the judge on %s with %s', (transport, mode) => {
  it("names a write committed in a transaction of the handler's own, and the record it was made for", async () => {
    const report = await runScenario(local, {
      ...reservations,
      handler: decrementInOwnTransactionBy(mode),
      transport,
      messages: 1,
      consumers: 1,
      faults: [],
      ...(transport === 'dsql' ? { conflictRate: 0 } : {}),
    });

    expect(report.doubleEffects).toEqual([]);
    expect(report.problems).toEqual([
      `a write outside the inbox's transaction while record res-0 was being applied (1 time(s)): ` +
        `${transport === 'data-api' ? DECREMENT : 'UPDATE public.stock SET units = units - 1 WHERE sku = $1'}. ` +
        "A rollback does not undo it and a redelivery makes it again: run it on the transaction apply is given (tx.execute(...), or your ORM's tx), not on a session, pool or transaction of the handler's own",
    ]);
  }, 60_000);
});

describe.each<ScenarioTransport>(['data-api', 'postgres'])('the judge on %s', (transport) => {
  it("leads with how few applied and the handler's first error, even with its log silenced", async () => {
    const report = await runScenario(local, {
      ...reservations,
      handler: commitsItself,
      transport,
      messages: 2,
      consumers: 1,
      faults: ['drop-commit'],
      visibilityTimeoutSeconds: 1,
      env: { ...reservations.env, POWERTOOLS_LOG_LEVEL: 'SILENT' },
    });

    expect(report.problems[0]).toMatch(/^0 of 2 applied; first error: TransactionControlError: COMMIT refused inside the inbox's transaction/);
    expect(report.problems.join('\n')).not.toContain('commit point');
  }, 60_000);

  it('names the commit a handler never made as its transport names it', async () => {
    const report = await runScenario(local, { ...reservations, handler: gatedStatement, transport, messages: 2, consumers: 1, faults: ['drop-commit'] });

    const commit = transport === 'data-api' ? 'CommitTransaction' : 'COMMIT';
    expect(report.problems).toEqual([
      expect.stringContaining(`commit point never matched: drop-commit was never injected; the handler made no ${commit} call.`),
    ]);
  });

  it('names a write outside the inbox transaction and the record it was made for', async () => {
    const report = await runScenario(local, { ...reservations, handler: decrementOutside, transport, messages: 1, consumers: 1, faults: [] });

    expect(report.doubleEffects).toEqual([]);
    expect(report.problems).toEqual([
      "a write outside the inbox's transaction while record res-0 was being applied (1 time(s)): " +
        `${transport === 'data-api' ? DECREMENT : 'UPDATE public.stock SET units = units - 1 WHERE sku = $1'}. ` +
        "A rollback does not undo it and a redelivery makes it again: run it on the transaction apply is given (tx.execute(...), or your ORM's tx), not on a session, pool or transaction of the handler's own",
    ]);
  });

  it('finds nothing wrong with the same effect on the transaction, through every fault', async () => {
    const report = await runScenario(local, { ...reservations, handler: correct, transport, messages: 300 });

    expect(report.problems).toEqual([]);
  }, 240_000);

  it('names well-formed messages that ended in the dead-letter queue, unless the scenario expects them', async () => {
    const run = { ...reservations, handler: refusesOne, transport, messages: 6, consumers: 1, faults: [], visibilityTimeoutSeconds: 1, fifo: false };
    const report = await runScenario(local, run);

    expect(report.problems).toEqual([
      '1 well-formed message(s) ended in the dead-letter queue or the parked table, their effect lost: res-3. ' +
        "Find why the handler failed them (its log, or the parked table's error); if your handler refuses them on purpose, say so: expectedFailures: (key) => ...",
    ]);
    const expected = await runScenario(local, { ...run, expectedFailures: (key: string) => key === 'res-3' });
    expect(expected.problems).toEqual([]);
    expect(expected.wellFormedInDlqOrParked).toBe(1);
  }, 60_000);
});

describe('the judge on the DSQL profile', () => {
  it('names the commit a handler never made as the wire names it, not as the Data API does', async () => {
    const report = await runScenario(local, {
      ...reservations,
      handler: gatedStatement,
      transport: 'dsql',
      conflictRate: 0,
      messages: 2,
      consumers: 1,
      faults: ['drop-commit'],
    });

    expect(report.problems).toEqual([expect.stringContaining('commit point never matched: drop-commit was never injected; the handler made no COMMIT call.')]);
  }, 60_000);
});
