import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runStreamScenario, startLocal } from '../../local/index.js';
import { STREAM_SOURCES } from '../../local/scenario/stream.js';
import type { LocalStack } from '../../local/index.js';
import { streamDemoConsumer } from '../../demo/streams/consumers.js';

// One stack for the file; each run works in a database of its own.
let local: LocalStack;
beforeAll(async () => {
  local = await startLocal({ dataApi: { transactionIdleTimeoutMs: 2000 } });
}, 60_000);
afterAll(async () => local.close());

/** Seed 3 injects every stream fault on every source at 120 orders, and the naive runs ship some orders twice. */
const SEED = 3;
/**
 * The schedule decides crash-after-commit by each record's lane and position: a seed under which the
 * worker dies before the checkpoint at least once on each source, at 60 orders.
 */
const CRASH_SEED = 4;

describe.each(STREAM_SOURCES)('the stream demo on %s', (source) => {
  it("ships every order exactly once and in each customer's order through every fault, where the naive consumer ships some twice", async () => {
    // Arrange, Act
    const inbox = await runStreamScenario(local, { source, ...streamDemoConsumer(source, 'inbox', 120), messages: 120, seed: SEED });
    const naive = await runStreamScenario(local, { source, ...streamDemoConsumer(source, 'naive', 120), messages: 120, seed: SEED });

    // Assess: 120 orders need not strike every fault (the scenario names those that never struck); none else.
    expect(inbox.problems.filter((problem) => !/^[a-z-]+ was never injected/.test(problem))).toEqual([]);
    expect([inbox.applied, inbox.extraEffects, inbox.lost, inbox.orderViolations, inbox.parked]).toEqual([120, 0, 0, 0, 0]);
    expect(Object.keys(inbox.faultsInjected)).toEqual(expect.arrayContaining(['auto-pause', 'drop-commit', 'crash-in-transaction']));
    if (source !== 'dynamodb') expect(inbox.duplicateSends).toBeGreaterThan(0);
    expect(naive.completed).toBe(true);
    expect(naive.lost).toBe(0);
    expect(naive.extraEffects).toBeGreaterThan(0);
  }, 60_000);

  it('finds the claims of what committed when the worker dies before the checkpoint and the records come again', async () => {
    const inbox = await runStreamScenario(local, {
      source,
      ...streamDemoConsumer(source, 'inbox', 60),
      messages: 60,
      seed: CRASH_SEED,
      batchSize: 4,
      faults: ['crash-after-commit'],
    });

    expect(inbox.crashesBeforeCheckpoint).toBeGreaterThan(0);
    // The crashed batches were delivered again, and shipped nothing more.
    expect(inbox.recordsDelivered).toBeGreaterThan(inbox.writes);
    expect(inbox.problems).toEqual([]);
    expect([inbox.applied, inbox.extraEffects]).toEqual([60, 0]);
  }, 60_000);
});

describe('sqs-inbox demo --source kafka', () => {
  const BIN = 'dist/demo/cli.js';

  it('prints the inbox and naive runs side by side and exits 0', async () => {
    if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run \`npm run build --silent -- --js-only\` first (npm test does).`);
    const child = spawn(process.execPath, [BIN, 'demo', '--source', 'kafka', '--messages', '60', '--seed', String(SEED)]);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));

    expect({ code, stderr: code === 0 ? '' : stderr }).toEqual({ code: 0, stderr: '' });
    expect(stdout).toContain('a Kafka topic of 4 partitions');
    expect(stdout).toMatch(/^ +inbox +naive$/m);
    expect(stdout).toMatch(/^double effects +0 +[1-9]\d*$/m);
    expect(stdout).toMatch(/^lost \(not shipped, not parked\) +0 +0$/m);
    expect(stdout).toMatch(/^out-of-order effects +0 +\d+$/m);
    expect(stdout).toContain('The inbox applied every order exactly once');
  }, 60_000);

  it('refuses --source with --pipeline, and an unknown source, as misuse', async () => {
    for (const args of [
      ['--source', 'kafka', '--pipeline'],
      ['--source', 'rabbitmq'],
    ]) {
      const child = spawn(process.execPath, [BIN, 'demo', ...args]);
      let stderr = '';
      child.stderr.on('data', (chunk) => (stderr += chunk));
      const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
      expect(code).toBe(2);
      expect(stderr).toMatch(/--source/);
    }
  });
});
