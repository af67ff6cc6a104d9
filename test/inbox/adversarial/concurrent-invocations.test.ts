import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BatchSummary } from '../../../lambda/inbox/index.js';
import { TRANSPORT, inboxFixture } from '../../support/inbox.js';
import type { InboxFixture } from '../../support/inbox.js';
import { EFFECTS_DDL, handlerOptions, materialise } from './consumer-run.js';
import type { MaterialCase } from './consumer-run.js';
import type { Expected, Mode, Policy } from './expectations.js';
import { fuzzParameters, fuzzTimeout } from './fuzz-settings.js';
import { account } from './invariant.js';
import { LAMBDA_SOURCES } from './lambda-sources.js';
import type { Built, LambdaSource } from './lambda-sources.js';
import { casePlan } from './planned-case.js';
import type { Entry } from './planned-case.js';

// Lambda Managed Instances run several invocations in one process: several events handled at once by ONE
// handler instance. Each answer must name exactly its own event's failures, whatever the others do; each
// summary, one invocation's; and each message is applied once.

let db: InboxFixture;
beforeAll(async () => {
  db = await inboxFixture('adversarial_concurrent');
  await db.query(EFFECTS_DDL);
});
afterAll(async () => db.close());

/** What the first delivery of a record comes to: acknowledged, reported failed, or either (the rules allow both). */
type First = 'acked' | 'failed' | 'either';

/**
 * The first delivery of a batch, record by record: a record that can apply is acknowledged unless its effect
 * hiccups; one refused for good is parked (acknowledged) or failed; a failure holds back the rest of its
 * lane. In the batch modes a hiccup may be spent by the set and the record then pass alone: either.
 */
function firstDelivery(records: readonly Built[], expected: ReadonlyMap<Built, Expected>, material: MaterialCase): Map<Built, First> {
  const { source, policy, mode, stopBatch } = material.context;
  const batchMode = mode === 'applyBatch' || mode === 'statementBatch';
  const lanes = new Map<string, First>();
  const result = new Map<Built, First>();
  for (const record of records) {
    const lane = stopBatch ? 'batch' : record.lane;
    const held = source.ordered ? lanes.get(lane) : undefined;
    const e = expected.get(record)!;
    const hiccups = typeof record.plan.effect === 'object';
    let first: First;
    if (e.canApply && e.causes.size > 0) first = 'either';
    else if (!e.canApply) first = policy === 'park' ? 'acked' : 'failed';
    else if (hiccups) first = batchMode ? 'either' : 'failed';
    else first = 'acked';
    if (held === 'failed') first = 'failed';
    else if (held === 'either' && first === 'acked') first = 'either';
    if (first !== 'acked' && held !== 'failed') lanes.set(lane, first);
    result.set(record, first);
  }
  // Kafka without a partial response fails the whole invocation for any failure.
  if (!source.failsWhole || ![...result.values()].some((first) => first !== 'acked')) return result;
  const whole: First = [...result.values()].includes('failed') ? 'failed' : 'either';
  return new Map(records.map((record) => [record, result.get(record) === 'acked' ? whole : 'either']));
}

const freshOnly = (entries: readonly Entry[]) => entries.filter((entry) => entry.kind === 'fresh' && entry.plan.shape === 'lambda');

let cases = 0;
const RUNS = 4;

describe.each(LAMBDA_SOURCES)('$name: concurrent invocations of one handler (property-based)', (source: LambdaSource) => {
  it(
    `on ${TRANSPORT}: each answer names exactly its own event's failures, each summary is one invocation's, each message applies once`,
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(casePlan(source.rules, source.healthyPayload), { minLength: 2, maxLength: 4 }),
          fc.constantFrom<Mode>('apply', 'statement', 'applyBatch', 'statementBatch'),
          fc.constantFrom<Policy>('retry', 'park'),
          async (plans, mode, policy) => {
            const consumer = `fz-concurrent-${cases++}`;
            // One handler: every event takes the first plan's options; each holds fresh records only.
            const healthy = plans.map((plan) => ({ ...plan, options: plans[0]!.options, first: freshOnly(plan.first), second: [] }));
            const events = healthy.map((plan) => materialise(plan, source, mode, policy, `${cases++}`));
            const all: MaterialCase = { ...events[0]!, effects: new Map(events.flatMap((event) => [...event.effects])) };
            const summaries: BatchSummary[] = [];
            const invoke = source.handler({ ...handlerOptions(all, healthy[0]!, consumer, db), onBatch: (summary: BatchSummary) => summaries.push(summary) });
            const batches = events.map((event) => event.generations[0]!);
            const answers = await Promise.all(batches.map((batch) => invoke(batch)));

            const found: string[] = [];
            for (const [index, batch] of batches.entries()) {
              const answer = answers[index]!;
              const model = firstDelivery(batch, events[index]!.expected, events[index]!);
              for (const record of batch) {
                const first = model.get(record)!;
                const acked = answer.kind === 'answered' && answer.acked.has(record);
                if (first !== 'either' && acked !== (first === 'acked')) {
                  found.push(
                    `event ${index}, record ${record.copy} (${JSON.stringify(record.plan.effect)}): ${acked ? 'acknowledged' : 'reported failed'}, expected ${first}`,
                  );
                }
              }
              if (answer.kind === 'answered' && answer.foreign.length > 0)
                found.push(`event ${index}: its answer names ${answer.foreign.join(', ')}, no record of it`);
            }
            // Each summary is one invocation's: its failed ids are those of one event, and every event has one.
            expect(summaries).toHaveLength(batches.length);
            for (const summary of summaries) {
              const owner = batches.find(
                (batch) => summary.failedMessageIds.every((id) => batch.some((record) => record.id === id)) && summary.records === batch.length,
              );
              if (!owner) found.push(`a summary of no single invocation: ${JSON.stringify(summary.failedMessageIds)}`);
              // What it counted besides the outcomes is its own too: a latency per record that ran (twice for a
              // member of a set that fell back to running alone), one set at most.
              if (summary.recordLatenciesMs.length > 2 * summary.records)
                found.push(`a summary of ${summary.records} records holds ${summary.recordLatenciesMs.length} latencies`);
              if (summary.batchSets > 1) found.push(`a summary counts ${summary.batchSets} batch sets`);
            }
            const applied = await db.query('SELECT token, count(*)::int AS n FROM public.fuzz_effects WHERE consumer = $1 GROUP BY token HAVING count(*) > 1', [
              consumer,
            ]);
            for (const row of applied) found.push(`message ${row.token} applied ${row.n} times`);
            expect(
              found,
              events.map((event, index) => `event ${index}: ${account(event, { deliveries: [], effects: new Map(), parked: [] })}`).join('\n'),
            ).toEqual([]);
          },
        ),
        fuzzParameters(RUNS),
      );
    },
    fuzzTimeout(RUNS, 4_000),
  );
});
