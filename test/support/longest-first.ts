import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that take longest, slowest first (durations from vitest's results cache of earlier runs, and the
 * outside-in files timed after their split, on a loaded 2-core machine: apps 735 s, cdk-init 422 s, orm 159 s,
 * the rest 79 s). With a few workers and one file taking minutes, the run ends when its slowest file does: started
 * last, the tarball test would add its minutes after everything else had finished. A fresh clone has no vitest cache to order by,
 * so the order is written down here. Order only: every file still runs, in every project that includes it.
 */
export const LONGEST_FIRST: readonly string[] = [
  'test/package/outside-in-apps.test.ts',
  'test/package/outside-in-cdk-init.test.ts',
  'test/package/outside-in-orm.test.ts',
  'test/package/outside-in.test.ts',
  'test/local/scenario-judge.test.ts',
  'test/local/example-app.test.ts',
  'test/local/demo-transport.test.ts',
  'test/package/api-docs.test.ts',
  'test/package/commonjs.test.ts',
  'test/bench/capacity.test.ts',
  'test/demo/pipeline.test.ts',
  'test/inbox/batch-modes.test.ts',
  'test/inbox/outbox.test.ts',
  'test/local/harness-faults.test.ts',
  'test/inbox/roles.test.ts',
];

/** The rank of a file in {@link LONGEST_FIRST}; files not listed come after, in vitest's own order. */
function rank(file: string): number {
  const index = LONGEST_FIRST.indexOf(file);
  return index === -1 ? LONGEST_FIRST.length : index;
}

/** vitest's `sequence.sequencer`: the listed files first, slowest first, then the rest as vitest orders them. */
export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const root = this.ctx.config.root;
    // Array.prototype.sort is stable: files of the same rank keep vitest's order (its cache, then size).
    return sorted
      .map((spec) => ({ spec, rank: rank(relative(root, spec.moduleId).split('\\').join('/')) }))
      .sort((a, b) => a.rank - b.rank)
      .map(({ spec }) => spec);
  }
}
