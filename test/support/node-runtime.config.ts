import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { MAX_WORKERS, shared } from '../../vitest.config.js';
import LongestFirst from './longest-first.js';
import { suitesOfThisNode } from './node-runtime.js';

// The Node.js-version runs (scripts/on-node.mjs, which `npm test` runs for each tools/node<major>): the suites
// of ./node-runtime.ts, on the Data API, under the Node.js the script starts vitest with. Its own config, not a
// project of the root's, so that the machine's `vitest run` does not run them a second time.
export default defineConfig({
  root: fileURLToPath(new URL('../..', import.meta.url)),
  test: {
    ...shared,
    maxWorkers: MAX_WORKERS,
    sequence: { sequencer: LongestFirst },
    name: 'node-runtime',
    include: suitesOfThisNode(),
    globalSetup: ['test/support/global-setup.ts', 'test/support/node-runtime-setup.ts'],
  },
});
