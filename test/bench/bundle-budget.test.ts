import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildBundles, checkInboxFunction, ensureBuilt } from '../../bench/bundle.js';

// Inside the repository (ignored by git), as the bench writes its bundles; one directory per test process.
const out = join(import.meta.dirname, '..', '..', '.tmp', `bundle-budget-${process.pid}`);
afterAll(() => rm(out, { recursive: true, force: true }));

describe('the consumer bundle', () => {
  // The bench also holds it to BUNDLE_CEILING_BYTES (45 KB), which it does not meet yet (50,977 B; moving
  // parking behind an import would take it to about 45.1 KB, see bench/README.md): `npm run bench` names
  // that problem and exits 1.
  it("stays within its budget: no larger than Powertools' idempotent batch handler bundled the same way", async () => {
    await ensureBuilt(() => {});
    const [ours, theirs] = await buildBundles(out);
    expect(ours!.bytes).toBeLessThanOrEqual(theirs!.bytes);
    // What a plain inbox() consumer never runs stays out: the batch modes, the outbox, the stream sources, the producer.
    const modules = ours!.byModule.map((entry) => entry.name);
    const unused =
      /transport\/postgres\/|modes\/batch\.js|statement-set\.js|outbox\/(relay|outbox-writer|outbox-message|sqs-outbox|outbox-destinations)\.js|sources\/(kinesis|dynamodb|kafka)\.js|producer\.js|parked-redrive\.js/;
    expect(modules.filter((name) => unused.test(name))).toEqual([]);
  }, 120_000);

  it('is bundled with the options InboxFunction gives NodejsFunction (read from lib/consumer/inbox-function.ts)', () => {
    expect(checkInboxFunction()).toEqual([]);
  });
});
