import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BatchSummary } from '../../../lambda/inbox/index.js';
import { inboxFixture, recordingLogger, recordingMetrics } from '../../support/inbox.js';
import type { InboxFixture } from '../../support/inbox.js';
import {
  EFFECTS_DDL,
  STREAM_SOURCES,
  effectOptions,
  effectsByLane,
  expectedDelivery,
  expectedRestarts,
  laneIds,
  nextDelivery,
  restarts,
  skippedUncommitted,
} from '../../support/stream-sources.js';
import type { EffectHooks, Mode, Report, StreamHandler, StreamItem, StreamSource } from '../../support/stream-sources.js';
import { propertyParameters } from '../../support/seed.js';

// Two handler instances given the same stream batch at once, as Lambda can after a timeout or a lost
// checkpoint. Separate handlers with separate clients: separate Lambda instances.

let db: InboxFixture;
beforeAll(async () => {
  db = await inboxFixture('stream_races');
  await db.query(EFFECTS_DDL);
});
afterAll(async () => db.close());

let run = 0;

/** `n` instances of one consumer; each record's effect holds its claim a moment so the others pile up behind its row lock. */
function instances(source: StreamSource, mode: Mode, consumer: string, n: number, hooks: EffectHooks = {}, summaries: BatchSummary[] = []): StreamHandler[] {
  return Array.from({ length: n }, () =>
    source.handler({
      consumer,
      database: db.instance(),
      logger: recordingLogger(),
      metrics: recordingMetrics(),
      concurrency: 3,
      onBatch: (summary: BatchSummary) => void summaries.push(summary),
      ...effectOptions(mode, source, consumer, {
        ...hooks,
        before: async (tx) => void (await tx.execute('SELECT pg_sleep(0.01)')),
      }),
    }),
  );
}

async function committedIds(consumer: string): Promise<Set<string>> {
  return new Set(Object.values(await effectsByLane(db.query, consumer)).flat());
}

/** Races the instances on the batch, then on what their answers ask to deliver again, until nothing is left. */
async function raceUntilDone(
  handlers: readonly StreamHandler[],
  items: readonly StreamItem[],
  consumer: string,
  check: (reports: Report[], delivery: StreamItem[]) => Promise<void>,
) {
  let deliveries: StreamItem[][] = [[...items]];
  for (let round = 1; deliveries.length > 0; round++) {
    expect(round).toBeLessThanOrEqual(2 * items.length + 1);
    const next: StreamItem[][] = [];
    for (const delivery of deliveries) {
      const answers = await Promise.all(
        handlers.map(async (handler) => {
          const report = await handler(delivery);
          // What had committed when the instance answered (give or take what the other commits meanwhile).
          return { report, committed: await committedIds(consumer) };
        }),
      );
      const reports = answers.map((answer) => answer.report);
      // Neither instance names a committed record as a restart point ahead of an uncommitted one, nor
      // leaves out a lane holding an uncommitted record.
      for (const { report, committed } of answers) expect(skippedUncommitted(delivery, report, committed)).toEqual([]);
      await check(reports, delivery);
      // Lambda goes on from one answer; the other instance's is checked above, and the same or later.
      const rest = nextDelivery(delivery, reports[0]!);
      if (rest.length > 0) next.push(rest);
    }
    deliveries = next;
  }
  // Each effect applied exactly once, each lane in order.
  expect(await effectsByLane(db.query, consumer)).toEqual(laneIds(items));
}

const batchOf = (lanes: readonly string[]) =>
  fc
    .array(fc.record({ lane: fc.constantFrom(...lanes), fails: fc.integer({ min: 0, max: 5 }).map((x) => x === 0) }), { minLength: 1, maxLength: 6 })
    .map((plan) => {
      const positions = new Map<string, number>();
      return plan.map(({ lane, fails }) => {
        const n = (positions.get(lane) ?? 0) + 1;
        positions.set(lane, n);
        return { lane, n, fails };
      });
    });

describe.each(STREAM_SOURCES)('racing stream consumers, $name', (source) => {
  it.each(['apply', 'applyBatch'] as const)(
    '%s: two instances given the same batch apply each effect once, in lane order, and both answer the first failure of each lane (property-based)',
    async (mode) => {
      await fc.assert(
        fc.asyncProperty(batchOf(source.lanes), async (plan) => {
          const consumer = `races-${run++}`;
          const items = source.build(plan);
          // A failing record fails in both instances until Lambda's first retry, when its cause is fixed.
          let failing = new Set(items.filter((_, index) => plan[index]!.fails).map((item) => item.id));
          const handlers = instances(source, mode, consumer, 2, { failing: () => failing });
          const committed = new Set<string>();
          await raceUntilDone(handlers, items, consumer, async (reports, delivery) => {
            const expected = expectedDelivery(delivery, committed, failing);
            for (const report of reports) expect(restarts(report)).toEqual(expectedRestarts(source, expected.restartAt));
            for (const id of expected.applied) committed.add(id);
            expect(await effectsByLane(db.query, consumer)).toEqual(laneIds(items, committed));
            failing = new Set();
          });
        }),
        propertyParameters(5),
      );
    },
  );

  it.each([2, 3])('%i instances given the same batch, none failing, apply each effect once and all answer success', async (n) => {
    const consumer = `races-${run++}`;
    const items = source.build(source.lanes.flatMap((lane) => [1, 2, 3].map((step) => ({ lane, n: step }))));
    const summaries: BatchSummary[] = [];
    const reports = await Promise.all(instances(source, 'apply', consumer, n, {}, summaries).map((handler) => handler(items)));
    // The losers waited for the winner's commit and then saw a duplicate.
    expect(reports.map(restarts)).toEqual(Array(n).fill({}));
    expect(summaries.reduce((sum, s) => sum + s.processed, 0)).toBe(items.length);
    expect(summaries.reduce((sum, s) => sum + s.duplicates, 0)).toBe((n - 1) * items.length);
    expect(await effectsByLane(db.query, consumer)).toEqual(laneIds(items));
  });

  // One instance meets a fault on a record the other then finds committed (the commit happened) or claims
  // itself (it did not): the first answers it as a restart point, which costs a duplicate, never an effect.
  it.each([
    ['commit executed, its answer lost', () => db.server.faults.dropResponse({ operation: 'CommitTransaction' })],
    ['commit refused (5xx, not executed)', () => db.server.faults.serverError({ count: 1, operation: 'CommitTransaction', status: 500 })],
  ] as const)('the instance that claimed t2 meets "%s": t2 applied once; no answer skips an uncommitted record', async (_, fault) => {
    const consumer = `races-${run++}`;
    // One lane: the next commit after t2's effect is t2's, whichever instance claimed it.
    const items = source.build([1, 2, 3].map((n) => ({ lane: source.lanes[0]!, n })));
    const t2 = items[1]!;
    let armed = false;
    const handlers = instances(source, 'apply', consumer, 2, {
      after: (message) => {
        if (message.id !== t2.id || armed) return;
        armed = true;
        fault();
      },
    });
    let first = true;
    await raceUntilDone(handlers, items, consumer, async (reports) => {
      if (!first) return;
      first = false;
      expect(armed).toBe(true);
      // The instance that met the fault restarts at t2 (or, without a partial response, fails whole);
      // the other went through. t2 counts as failed where its outcome was unknown.
      const answers = reports.map(restarts);
      expect(answers).toContainEqual(source.partial ? { [t2.lane]: t2.id } : 'whole');
      expect(answers).toContainEqual({});
    });
  });
});
