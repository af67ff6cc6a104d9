import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocal } from '../../local/index.js';
import type { LocalStack } from '../../local/index.js';
import { runPipeline } from '../../demo/pipeline/run.js';
import type { PipelineResult } from '../../demo/pipeline/run.js';
import { PIPELINE_VARIANTS } from '../../demo/pipeline/variants.js';
import type { PipelineVariant } from '../../demo/pipeline/variants.js';
import { pipelineVerdict } from '../../demo/pipeline/demo.js';
import { freshDatabase } from '../support/database.js';

// The two-stage demo (`sqs-inbox demo --pipeline`): orders are shipped by one inbox consumer, which hands
// an invoice message on to a second queue, whose inbox consumer invoices them; every fault of the demo
// strikes both stages, and the hand-off meets its own (a worker dying before it sends, lost
// SendMessageBatch answers). The three variants run at once, each on a stack of its own, while the CLI
// runs in its own process.

/** Orders through the outbox pipeline; the naive ones need fewer to show what they lose. */
const ORDERS = 150;
const NAIVE_ORDERS = 90;
const SEED = 417;
/** The installed bin: compiled JavaScript, as `npx sqs-inbox` runs it (`npm test` builds dist/ first). */
const BIN = 'dist/demo/cli.js';

const previousDatabaseUrl = process.env.DATABASE_URL;
const stacks: LocalStack[] = [];
const results = new Map<PipelineVariant, PipelineResult>();
let demo: Promise<Exited>;

interface Exited {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the CLI to its end. */
function cli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Exited> {
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

beforeAll(async () => {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run \`node scripts/build.mjs --js-only\` (npm test does).`);
  // The shared test server: each stack's runs make (and drop) databases of their own on it.
  process.env.DATABASE_URL = await freshDatabase('pipeline');
  demo = cli(['demo', '--pipeline', '--messages', '8', '--faults', 'none', '--consumers', '1']);
  for (const _ of PIPELINE_VARIANTS) stacks.push(await startLocal({ dataApi: { transactionIdleTimeoutMs: 2000 } }));
  // A broken hand-off that never drains fails here with its problems, not at the hook's timeout.
  const runs = await Promise.all(
    PIPELINE_VARIANTS.map((variant, index) =>
      runPipeline({ local: stacks[index], variant, messages: variant === 'outbox' ? ORDERS : NAIVE_ORDERS, seed: SEED, timeoutMs: 150_000 }),
    ),
  );
  for (const run of runs) results.set(run.variant, run);
}, 240_000);

afterAll(async () => {
  await Promise.all(stacks.map((stack) => stack.close()));
  if (previousDatabaseUrl === undefined) delete process.env.DATABASE_URL;
  else process.env.DATABASE_URL = previousDatabaseUrl;
});

const result = (variant: PipelineVariant) => results.get(variant)!;

describe('the two-stage pipeline: ship, then invoice, through every fault', () => {
  it('inbox + outbox: ships every order once and invoices every shipped order once, none lost, none before its shipment, in order', () => {
    const outbox = result('outbox');
    expect(outbox.problems).toEqual([]);
    expect(outbox.completed).toBe(true);
    // Every order accounted for at the ship stage: shipped, or (poison) parked or dead-lettered.
    expect(outbox.ship.applied + outbox.ship.parked + outbox.ship.deadLettered).toBeGreaterThanOrEqual(ORDERS);
    expect(outbox.invoice.expected).toBe(outbox.ship.applied);
    expect(outbox.invoice.applied).toBe(outbox.ship.applied);
    expect([outbox.ship.extraEffects, outbox.invoice.extraEffects, outbox.invoice.lostKeys.length, outbox.invoice.phantomKeys.length]).toEqual([0, 0, 0, 0]);
    // The faults did strike: commits whose answer was lost leave rows only the sweeper sends.
    expect(outbox.faultsInjected).toMatchObject({
      'drop-commit': expect.any(Number),
      'crash-in-transaction': expect.any(Number),
      'drop-send-response': expect.any(Number),
      poison: expect.any(Number),
    });
    expect(outbox.handOff.swept).toBeGreaterThan(0);
  });

  it('send in the handler: invoices orders whose shipment had not committed, or never did (phantom messages)', () => {
    const inside = result('send-in-handler');
    // The inbox still ships exactly once: what goes wrong is the message, not the effect.
    expect([inside.ship.extraEffects, inside.ship.lostKeys.length]).toEqual([0, 0]);
    expect(inside.invoice.phantomKeys.length).toBeGreaterThan(0);
    expect(inside.exactlyOnce).toBe(false);
    expect(inside.problems.join('\n')).toMatch(/invoiced while not shipped/);
  });

  it('send after commit: loses the invoice messages of workers that died between the commit and the send, or never heard their commit', () => {
    const after = result('send-after-commit');
    expect([after.ship.extraEffects, after.ship.lostKeys.length]).toEqual([0, 0]);
    expect(after.invoice.lostKeys.length).toBeGreaterThan(0);
    expect(after.invoice.phantomKeys).toEqual([]);
    expect(after.exactlyOnce).toBe(false);
  });

  it('sqs-inbox demo --pipeline prints the side-by-side table and exits 0 when the outbox pipeline is exactly once', async () => {
    const { code, stdout, stderr } = await demo;
    expect(stderr).not.toMatch(/Error:/);
    expect(stdout).not.toContain('FAILED');
    expect(stdout).toMatch(/inbox \+ outbox\s+send in handler\s+send after commit/);
    expect(stdout).toMatch(/phantom \(invoiced while not shipped\)\s+0\s/);
    expect(stdout).toContain('The inbox + outbox shipped every order once and invoiced every shipped order once');
    expect(code).toBe(0);
  });

  it('exits 1 when the outbox pipeline shows a problem, whatever the naive runs show', () => {
    const all = PIPELINE_VARIANTS.map(result);
    expect(pipelineVerdict(all).code).toBe(0);
    // The outbox run as if it had sent from the handler: its phantoms fail the demo.
    const phantoms = { ...result('send-in-handler'), variant: 'outbox' as const };
    const verdict = pipelineVerdict([phantoms, ...all.slice(1)]);
    expect(verdict.code).toBe(1);
    expect(verdict.text).toMatch(/^FAILED: .*invoice stage: \d+ order\(s\) invoiced while not shipped/);
    expect(pipelineVerdict([{ ...result('send-after-commit'), variant: 'outbox' as const }]).code).toBe(1);
  });

  it('takes the hand-off faults with --pipeline only, and names an unknown one (exit 2)', async () => {
    const plain = await cli(['demo', '--faults', 'crash-before-send']);
    expect(plain.code).toBe(2);
    expect(plain.stderr).toMatch(/^sqs-inbox demo: --faults names "crash-before-send", which is not one of/);
    const unknown = await cli(['demo', '--pipeline', '--faults', 'crash-before-send,meteor']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^sqs-inbox demo: --faults names "meteor", which is not one of: .*drop-send-response/);
  });
});
