import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAULTS, runScenario, startLocal } from '../../local/index.js';
import type { FaultName, LocalStack, ScenarioResult } from '../../local/index.js';
import { demoConsumer } from '../../demo/consumers.js';
import { propertyParameters, propertyRuns } from '../support/seed.js';

// End to end: producer -> SQS model -> event source mappings -> handler -> Data API server -> PostgreSQL,
// with seeded random fault schedules: 4,000 orders through the inbox in this file, and 3,000 in batch mode (at INBOX_TEST_RUNS=1, CI's).
let local: LocalStack;
beforeAll(async () => {
  local = await startLocal({ dataApi: { transactionIdleTimeoutMs: 2000 } });
});
afterAll(async () => local.close());

const schedule = fc.record({
  seed: fc.integer({ min: 0, max: 1_000_000 }),
  // Every schedule crashes workers between the effect and its commit, the fault the naive pattern
  // cannot survive, so the naive check below can fail.
  faults: fc.subarray([...FAULTS].filter((fault) => fault !== 'crash-in-transaction')).map((faults): FaultName[] => [...faults, 'crash-in-transaction']),
  consumers: fc.integer({ min: 1, max: 4 }),
});

const RUNS = propertyRuns(4);
// 1 000 orders a run: at the faults' rates (1.5 to 5 per cent of messages, deliveries or commits, FAULT_RATES)
// each fault a schedule holds strikes some 15 to 50 times in every run, auto-pause once. At 2 500 the four runs
// took 380 s (4 Dec 2026), the longest file of the suite by far, for more strikes of the same faults.
const MESSAGES = 1000;

describe('random fault schedules, end to end (property-based)', () => {
  const inboxRuns: ScenarioResult[] = [];
  const naiveRuns: ScenarioResult[] = [];

  it(`the inbox applies every one of ${RUNS * MESSAGES} orders exactly once, loses none, and keeps each group's order`, async () => {
    await fc.assert(
      fc.asyncProperty(schedule, async ({ seed, faults, consumers }) => {
        const result = await runScenario(local, { ...demoConsumer('inbox'), messages: MESSAGES, seed, faults, consumers });
        inboxRuns.push(result);
        expect(result.completed).toBe(true);
        expect(result.extraEffects).toBe(0);
        expect(result.lost).toBe(0);
        expect(result.orderViolations).toBe(0);
        // Every order is accounted for: shipped, or (poison) parked, or dead-lettered.
        expect(result.applied + result.parked + result.deadLettered).toBeGreaterThanOrEqual(result.messages);
        const naive = await runScenario(local, { ...demoConsumer('naive'), messages: 500, seed, faults, consumers });
        naiveRuns.push(naive);
      }),
      { ...propertyParameters(4), endOnFailure: true },
    );
    expect(inboxRuns.reduce((sum, run) => sum + run.messages, 0)).toBeGreaterThanOrEqual(RUNS * MESSAGES);
  }, 900_000);

  it('the inbox in batch mode (one transaction per batch, falling back to each record alone) does the same', async () => {
    await fc.assert(
      fc.asyncProperty(schedule, async ({ seed, faults, consumers }) => {
        const result = await runScenario(local, { ...demoConsumer('inbox-batch'), messages: 1000, seed, faults, consumers });
        expect(result.completed).toBe(true);
        expect(result.extraEffects).toBe(0);
        expect(result.lost).toBe(0);
        expect(result.orderViolations).toBe(0);
        expect(result.applied + result.parked + result.deadLettered).toBeGreaterThanOrEqual(result.messages);
      }),
      { ...propertyParameters(3), endOnFailure: true },
    );
  }, 600_000);

  it('the naive pattern, under the same schedules, applies effects twice (so the check above can fail)', () => {
    expect(naiveRuns).toHaveLength(RUNS);
    expect(naiveRuns.reduce((sum, run) => sum + run.extraEffects, 0)).toBeGreaterThan(0);
  });
});
