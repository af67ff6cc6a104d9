import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import base from '../../vitest.config.js';

// Mutation runs need only the runtime library's tests: test/inbox holds the tests of the correctness core.
// (Not mergeConfig: it would append to `include` rather than replace it.)
// Stryker's vitest runner runs one worker per test runner process and starts globalSetup (embedded
// PostgreSQL) once per process, so each of Stryker's test runners has its own server.
export default defineConfig({
  ...base,
  root: fileURLToPath(new URL('../..', import.meta.url)),
  test: {
    ...base.test,
    include: ['test/inbox/**/*.test.ts'],
  },
});
