import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BUNDLE_CEILING_BYTES, buildBundles, bundleBudgetProblems, ensureBuilt } from '../../bench/bundle.js';

// Inside the repository (ignored by git), as the bench writes its bundles; one directory per test process.
const out = join(import.meta.dirname, '..', '..', '.tmp', `bundle-budget-${process.pid}`);
afterAll(() => rm(out, { recursive: true, force: true }));

describe('the consumer bundle', () => {
  it("stays within its budget: no larger than Powertools' idempotent batch handler bundled the same way, and at most 45 KB", async () => {
    await ensureBuilt(() => {});
    const [ours, theirs] = await buildBundles(out);
    expect(bundleBudgetProblems(ours!, theirs!)).toEqual([]);
    expect(ours!.bytes).toBeLessThanOrEqual(BUNDLE_CEILING_BYTES);
    // What a plain inbox() consumer never runs stays out: the batch modes, the outbox, the stream sources, the producer.
    const modules = ours!.byModule.map((entry) => entry.name);
    const unused = /modes\/batch\.js|statement-set\.js|outbox\/(relay|outbox-writer|outbox-message|sqs-outbox)\.js|sources\/(kinesis|dynamodb|kafka)\.js|producer\.js|parked-redrive\.js/;
    expect(modules.filter((name) => unused.test(name))).toEqual([]);
  }, 120_000);
});
