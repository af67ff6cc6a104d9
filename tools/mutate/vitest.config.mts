import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { SOURCE_ENTRIES, shared } from '../../vitest.config.js';

// Mutation runs need only the runtime library's tests: test/inbox holds the tests of the correctness core,
// on the Data API (the root config's `default` project; its `wire` and `dsql` projects are not run here).
// Stryker's vitest runner runs one worker per test runner process and starts globalSetup (embedded
// PostgreSQL) once per process, so each of Stryker's test runners has its own server.
// `.mts`: tools/mutate/package.json has no "type": "module", and vite would load a `.ts` config as CommonJS.
export default defineConfig({
  root: fileURLToPath(new URL('../..', import.meta.url)),
  // The examples' `sqs-inbox` imports resolve to the sources, as in the root config (test/inbox/orm.test.ts).
  resolve: SOURCE_ENTRIES,
  test: {
    ...shared,
    globalSetup: ['test/support/global-setup.ts'],
    include: ['test/inbox/**/*.test.ts'],
    // The adversarial suite's properties run every source in every mode, so they reach nearly every line of
    // the core: Stryker would run them (tens of seconds) for nearly every mutant. The focused suites kill the
    // core's mutants; the adversarial suite looks for defects no suite names yet (`npm run fuzz`).
    exclude: ['test/inbox/adversarial/**'],
  },
});
