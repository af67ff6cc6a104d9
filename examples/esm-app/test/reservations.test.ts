// test/reservations.test.ts: the reservations worker through the faults on its own schema (its migrations,
// a UNIQUE reservation id) with no verify: the testbed judges the handler as it is. The correct handler
// passes; the classic mistakes (an effect in autocommit, or in a transaction of the handler's own) fail, each named, on the Data API and on the PostgreSQL wire protocol.
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { inbox } from 'sqs-inbox';
import { runScenario } from 'sqs-inbox/local';
import type { ScenarioEnvironment, ScenarioTransport } from 'sqs-inbox/local';
import { RESERVE, reserve, TAKE_STOCK } from '../src/reservations-worker.js';
import type { Reservation } from '../src/reservations-worker.js';

const migrations = new URL('../migrations/reservations/', import.meta.url);
const reservations = {
  // The app's own migrations, one statement per file, then its stock.
  setup: [
    ...readdirSync(migrations)
      .sort()
      .map((file) => readFileSync(new URL(file, migrations), 'utf8')),
    "INSERT INTO public.stock (sku, available) VALUES ('sku-1', 100000), ('sku-2', 100000)",
  ],
  message: (i: number) => ({ key: `res-${i}`, body: { reservationId: `res-${i}`, sku: `sku-${(i % 2) + 1}`, units: 1 }, groupId: `order-${i % 10}` }),
  effects: 'SELECT reservation_id AS key, count(*), min(seq) AS seq FROM public.reservations GROUP BY 1',
  env: { INBOX_CONSUMER: 'reservations', POWERTOOLS_METRICS_DISABLED: 'true', POWERTOOLS_LOG_LEVEL: 'SILENT' },
};

/** The stock taken on a session of the handler's own, an autocommit statement outside the inbox's transaction. */
const stockOutside = ({ database, session }: ScenarioEnvironment) =>
  inbox<Reservation>({
    database,
    apply: async (tx, { body }) => {
      await tx.execute(RESERVE, { id: body.reservationId, sku: body.sku, units: body.units });
      await session.execute(TAKE_STOCK, { sku: body.sku, units: body.units });
    },
  });

/** The reservation row written outside the inbox's transaction: a crash before the commit leaves it, and the redelivery hits its UNIQUE key. */
const rowOutside = ({ database, session }: ScenarioEnvironment) =>
  inbox<Reservation>({
    database,
    apply: async (tx, { body }) => {
      await session.execute(RESERVE, { id: body.reservationId, sku: body.sku, units: body.units });
      await tx.execute(TAKE_STOCK, { sku: body.sku, units: body.units });
    },
  });

/** The stock taken in a transaction of the handler's own (a second BeginTransaction, or BEGIN on a second pool client), committed before the record's. */
const stockInOwnTransaction = ({ database, session }: ScenarioEnvironment) =>
  inbox<Reservation>({
    database,
    apply: async (tx, { body }) => {
      await tx.execute(RESERVE, { id: body.reservationId, sku: body.sku, units: body.units });
      const own = await session.begin();
      await session.execute(TAKE_STOCK, { sku: body.sku, units: body.units }, own);
      await session.commit(own);
    },
  });

describe.each<ScenarioTransport>(['data-api', 'postgres'])('the reservations worker on %s', (transport) => {
  it('reserves each line exactly once through every fault', async () => {
    const report = await runScenario({ ...reservations, transport, handler: ({ database }) => inbox<Reservation>({ database, apply: reserve }) });
    expect(report.problems).toEqual([]);
  }, 240_000);

  it("fails the stock taken outside the transaction, in autocommit or in a transaction of the handler's own, naming the statement and the record", async () => {
    for (const handler of [stockOutside, stockInOwnTransaction]) {
      const report = await runScenario({ ...reservations, transport, handler, messages: 20, faults: [] });
      expect(report.problems).toEqual([
        expect.stringMatching(/^a write outside the inbox's transaction while .*res-\d+.* was being applied .*: UPDATE public\.stock/),
      ]);
    }
  }, 240_000);

  it('fails the row written outside the transaction, naming the statement and the messages lost', async () => {
    const report = await runScenario({ ...reservations, transport, handler: rowOutside, messages: 150, faults: ['crash-in-transaction'] });
    expect(report.problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^a write outside the inbox's transaction while .* was being applied .*: INSERT INTO public\.reservations/),
        expect.stringMatching(/^\d+ well-formed message\(s\) ended in the dead-letter queue or the parked table, their effect lost: res-/),
      ]),
    );
  }, 240_000);
});
