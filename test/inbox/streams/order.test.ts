import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InboxError } from '../../../lambda/inbox/index.js';
import { inboxFixture, recordingLogger, recordingMetrics } from '../../support/inbox.js';
import type { InboxFixture } from '../../support/inbox.js';
import {
  EFFECTS_DDL,
  KINESIS_MULTI_SHARD,
  STREAM_SOURCES,
  effectOptions,
  effectsByLane,
  expectedDelivery,
  expectedRestarts,
  laneIds,
  nextDelivery,
  restarts,
} from '../../support/stream-sources.js';
import type { Mode, Step, StreamSource } from '../../support/stream-sources.js';
import { propertyParameters } from '../../support/seed.js';

// Order within a lane (Kinesis shard, DynamoDB shard, Kafka topic-partition), property-based: random
// batches with random failing records, delivered again from the reported restart points as Lambda does,
// until every record is done. After every delivery: per lane, the effects are exactly the records
// committed so far, in lane order, once each; the response names exactly the first failure of each lane.

let db: InboxFixture;
beforeAll(async () => {
  db = await inboxFixture('stream_order');
  await db.query(EFFECTS_DDL);
});
afterAll(async () => db.close());

/** A planned record: its lane, and in how many of the deliveries that reach it its effect fails. */
type Planned = { lane: string; failures: number };

const batchOf = (lanes: readonly string[]) =>
  fc.array(
    fc.record({
      lane: fc.constantFrom(...lanes),
      // Mostly none; often once, now and then in two deliveries in a row.
      failures: fc.integer({ min: 0, max: 19 }).map((x) => (x < 13 ? 0 : x < 18 ? 1 : 2)),
    }),
    { minLength: 1, maxLength: 8 },
  );

function steps(plan: readonly Planned[]): Step[] {
  const positions = new Map<string, number>();
  return plan.map(({ lane }) => {
    const n = (positions.get(lane) ?? 0) + 1;
    positions.set(lane, n);
    return { lane, n };
  });
}

let run = 0;

/** Delivers the batch, then what each response asks to deliver again, checking every delivery against the model. */
async function deliverUntilDone(source: StreamSource, mode: Mode, plan: readonly Planned[], coldRetries: boolean) {
  const consumer = `order-${run++}`;
  const items = source.build(steps(plan));
  const failuresLeft = new Map(items.map((item, index) => [item.id, plan[index]!.failures]));
  let failing = new Set<string>();
  const instance = () =>
    source.handler({
      consumer,
      database: db.target,
      logger: recordingLogger(),
      metrics: recordingMetrics(),
      concurrency: 3,
      ...effectOptions(mode, source, consumer, { failing: () => failing }),
    });
  // Lambda retries in the same warm instance (which remembers the keys it met, and looks them up first)
  // or in another one (where each record's claim decides).
  let handler = instance();
  const committed = new Set<string>();
  let delivery = items;
  for (let deliveries = 1; delivery.length > 0; deliveries++) {
    // Each failure takes one delivery to fix: more than this means the restart points do not converge.
    expect(deliveries).toBeLessThanOrEqual(2 * items.length + 1);
    failing = new Set([...failuresLeft].filter(([, left]) => left > 0).map(([id]) => id));
    const expected = expectedDelivery(delivery, committed, failing);

    const report = await handler(delivery);

    expect(restarts(report)).toEqual(expectedRestarts(source, expected.restartAt));
    if (report.kind === 'whole') expect(report.error).toBeInstanceOf(InboxError);
    for (const id of expected.applied) committed.add(id);
    // The record that stopped its lane was reached: one of its failures is used up.
    for (const id of expected.restartAt.values()) failuresLeft.set(id, failuresLeft.get(id)! - 1);
    // Per lane: exactly the committed records, in lane order, each once.
    expect(await effectsByLane(db.query, consumer)).toEqual(laneIds(items, committed));
    delivery = nextDelivery(delivery, report);
    if (coldRetries) handler = instance();
  }
  // In the end every record's effect is applied exactly once, in lane order.
  expect(await effectsByLane(db.query, consumer)).toEqual(laneIds(items));
}

const MODES: readonly Mode[] = ['apply', 'applyBatch', 'statement', 'statementBatch'];

describe.each([...STREAM_SOURCES, KINESIS_MULTI_SHARD])('stream order, $name (property-based)', (source) => {
  it.each(MODES)(
    "%s: each lane's effects are its prefix before its first failure, the response names that failure, the retries apply every record once in order",
    async (mode) => {
      await fc.assert(
        fc.asyncProperty(batchOf(source.lanes), fc.boolean(), async (plan, coldRetries) => deliverUntilDone(source, mode, plan, coldRetries)),
        propertyParameters(mode === 'apply' || mode === 'applyBatch' ? 10 : 6),
      );
    },
  );
});

describe('stream order: lanes', () => {
  it.each([STREAM_SOURCES.find((s) => s.name === 'kafka')!, KINESIS_MULTI_SHARD])(
    '$name: runs one record of a lane at a time, in order, while lanes run in parallel',
    async (source) => {
      const consumer = `order-lanes-${run++}`;
      const active = new Map<string, number>();
      const started: string[] = [];
      let maxLanes = 0;
      let overlapWithinLane = false;
      const handler = source.handler({
        consumer,
        database: db.target,
        logger: recordingLogger(),
        metrics: recordingMetrics(),
        concurrency: 3,
        ...effectOptions('apply', source, consumer, {
          before: async (tx, message) => {
            const { lane } = source.stepOf(message.body);
            if ((active.get(lane) ?? 0) > 0) overlapWithinLane = true;
            active.set(lane, (active.get(lane) ?? 0) + 1);
            started.push(message.id!);
            maxLanes = Math.max(maxLanes, [...active.values()].filter((count) => count > 0).length);
            await tx.execute('SELECT pg_sleep(0.02)');
            active.set(lane, active.get(lane)! - 1);
          },
        }),
      });
      const items = source.build(source.lanes.flatMap((lane) => [1, 2, 3].map((n) => ({ lane, n }))));
      expect(restarts(await handler(items))).toEqual({});
      expect(overlapWithinLane).toBe(false);
      expect(maxLanes).toBeGreaterThan(1);
      for (const lane of source.lanes) {
        expect(started.filter((id) => items.find((item) => item.id === id)!.lane === lane)).toEqual(laneIds(items)[lane]);
      }
    },
  );
});
