// StrykerJS over the runtime library's correctness core: `npm run mutate` (not part of `npm test` or CI).
// Paths are relative to the repository root. `npm run mutate` runs it through run.mjs, on a snapshot of the
// working tree: the TypeScript checker reads the project directory itself, not Stryker's sandbox.
/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'tools/mutate/vitest.config.mts' },
  // Mutants that do not compile are reported as CompileError and left out of the score.
  checkers: ['typescript'],
  tsconfigFile: 'tools/mutate/tsconfig.json',
  mutate: [
    'lambda/inbox/sql/claim.ts',
    'lambda/inbox/handler/consumer.ts',
    'lambda/inbox/lanes/lanes.ts',
    'lambda/inbox/transport/transaction.ts',
    'lambda/inbox/transport/values.ts',
    'lambda/inbox/transport/data-api/session.ts',
    'lambda/inbox/transport/data-api/transport.ts',
    'lambda/inbox/transport/data-api/parameters.ts',
    'lambda/inbox/transport/data-api/results.ts',
    'lambda/inbox/transport/data-api/failures.ts',
    'lambda/inbox/sql/purge.ts',
    'lambda/inbox/prepare/keys.ts',
    'lambda/inbox/prepare/prepare.ts',
    'lambda/inbox/prepare/duplicate-filter.ts',
    'lambda/inbox/sources/*.ts',
    'lambda/inbox/modes/*.ts',
    // Moved beside the modes by the layout; it was never part of the mutated core.
    '!lambda/inbox/modes/mode-options.ts',
  ],
  // Each mutant runs only the tests that reach it: the whole suite per mutant would not fit 2 cores.
  coverageAnalysis: 'perTest',
  // Static mutants (module-level constants such as uuid() or NOT_EXECUTED_5XX, run once at import) are
  // reported as Ignored: the vitest runner cannot re-activate a module-level mutant after the first import,
  // so they would survive although the tests catch them (breaking uuid() by hand fails "binds uuid()").
  ignoreStatic: true,
  // Equivalent mutants (no test can kill them) are listed, each with its reason, in equivalent-mutants.mjs; this
  // ignorer reports them as Ignored. Paths of plugins are relative to the directory Stryker runs in, the root.
  appendPlugins: ['./tools/mutate/equivalent-ignorer.mjs'],
  ignorers: ['equivalent-mutants'],
  concurrency: 2,
  timeoutMS: 10_000,
  // docs/stack.md stays: the isolation tests check every cell of the matrix it holds (test/support/isolation-matrix.ts).
  ignorePatterns: ['/dist', '/cdk.out', '/coverage', '/.tmp', '/reports', '/bench', '/docs/*', '!/docs/stack.md', '/examples'],
  tempDirName: '.stryker-tmp',
  reporters: ['clear-text', 'progress', 'html', 'json'],
  htmlReporter: { fileName: 'reports/mutation/mutation.html' },
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  thresholds: { high: 95, low: 90, break: null },
};
