import { configDefaults, defineConfig } from 'vitest/config';
import type { TestProjectInlineConfiguration } from 'vitest/config';
import { NOT_ON_EVERY_TRANSPORT } from './test/support/data-api-only.js';
import LongestFirst from './test/support/longest-first.js';
import { DSQL_CONFLICT_FILES, DSQL_CONFLICT_RATE } from './test/support/dsql-conflicts.js';
import { onOtherNodesOnly } from './test/support/node-runtime.js';

/** What the projects share (and `npm run mutate`'s config). The root's global setup (one embedded PostgreSQL) serves them all. */
export const shared = {
  testTimeout: 30_000,
  hookTimeout: 60_000,
  // Each test file gets its own database; files run in parallel on the shared server.
  pool: 'forks',
  // A failed test prints the seed its random choices came from (test/support/seed.ts).
  setupFiles: ['test/support/seed-report.ts'],
  env: {
    // The SDK warns once per process that it will need Node 22 from 2027; CI runs Node 20 on purpose.
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    POWERTOOLS_LOG_LEVEL: 'SILENT',
    POWERTOOLS_METRICS_DISABLED: 'true',
  },
} satisfies TestProjectInlineConfiguration['test'];

/**
 * Files at once, for every project (one pool serves them all; vitest refuses projects that differ). vitest's
 * default is one fewer than the cores, 1 on CI's 2, yet most of a file's time is spent waiting on PostgreSQL
 * and on child processes, not on a core: at 2, a fresh clone's CI takes about half its time at 1 (1,272 s
 * against 2,508 s, 4 Dec 2026, with the tarball tests run once). Runs at 2 have failed timing-tight tests
 * before: a 200 ms race between statement_timeout and the call timeout (now 600 ms), a 3.5 MB claim in a
 * 10 s call, a testbed run whose receives ran out, the 7,000-claim batch in vitest's 30 s; each was given a
 * margin for a loaded machine. A test that still races the load is a test to fix, not a reason to go back to
 * 1. Not in {@link shared}: `npm run mutate`'s config imports it and sets its own concurrency.
 */
export const MAX_WORKERS = 2;

/**
 * The wire and DSQL projects run each property (the adversarial suite's, FIFO's, parking's...) at half its
 * runs: the generated cases prove the inbox's logic on the Data API, and there only the transport's share of
 * them is new. `INBOX_TEST_RUNS` (test/support/seed.ts) scales them on top.
 */
const OTHER_TRANSPORT_RUNS = String(0.5 * Number(process.env.INBOX_TEST_RUNS ?? 1));

/**
 * The package's own entries, as the examples import them (`sqs-inbox`, `sqs-inbox/orm`, ...), resolved to
 * the sources the tests import: a test's handler and the example's ORM binding are then one module graph, as
 * in a user's bundle, where `sqs-inbox/orm` finds the `tx` that `inbox()` made (pass-through.ts keeps it in a
 * module map). The built package is what the outside-in tests judge.
 */
export const SOURCE_ENTRIES = {
  alias: [
    { find: /^sqs-inbox$/, replacement: new URL('./lambda/inbox/index.ts', import.meta.url).pathname },
    { find: /^sqs-inbox\/orm$/, replacement: new URL('./lambda/inbox/orm/index.ts', import.meta.url).pathname },
    { find: /^sqs-inbox\/postgres$/, replacement: new URL('./lambda/inbox/transport/postgres/index.ts', import.meta.url).pathname },
  ],
};

/**
 * What the full run leaves to another file: the example app's tests against the sources
 * (test/local/example-app.test.ts) are the same files the outside-in test runs against the packed tarball
 * (test/package/outside-in-apps.test.ts), so the full run, which has that test, runs them once. `npm run
 * test:fast` leaves the outside-in tests out and takes the example app's back (INBOX_TEST_FAST).
 */
const COVERED_ELSEWHERE = process.env.INBOX_TEST_FAST ? [] : ['test/local/example-app.test.ts'];

/**
 * What `npm test`'s other runs hold (scripts/test.mjs sets INBOX_TEST_MATRIX): the suites
 * test/support/node-runtime.ts runs only on other Node.js majors (the tarball tests, on Lambda's 24), which on
 * this one would prove nothing those runs do not. A plain `vitest run` keeps them.
 */
const ON_ANOTHER_NODE = process.env.INBOX_TEST_MATRIX ? onOtherNodesOnly(Number(process.versions.node.split('.')[0])) : [];

export default defineConfig({
  test: {
    globalSetup: ['test/support/global-setup.ts'],
    // The slowest files start first, so that none of them starts last (test/support/longest-first.ts).
    sequence: { sequencer: LongestFirst },
    projects: [
      // Everything, the inbox suites on the Data API (or on the transport INBOX_TEST_TRANSPORT names).
      {
        resolve: SOURCE_ENTRIES,
        test: {
          ...shared,
          maxWorkers: MAX_WORKERS,
          name: 'default',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...COVERED_ELSEWHERE, ...ON_ANOTHER_NODE],
        },
      },
      // The inbox's correctness suites again, over the PostgreSQL wire protocol (test/support/transport.ts),
      // but for the files test/support/data-api-only.ts lists, with its reasons, which the setup prints.
      {
        resolve: SOURCE_ENTRIES,
        test: {
          ...shared,
          maxWorkers: MAX_WORKERS,
          name: 'wire',
          include: ['test/inbox/**/*.test.ts'],
          exclude: [...NOT_ON_EVERY_TRANSPORT],
          env: { ...shared.env, INBOX_TEST_TRANSPORT: 'postgres', INBOX_TEST_RUNS: OTHER_TRANSPORT_RUNS },
          globalSetup: ['test/support/wire-setup.ts'],
        },
      },
      // And on the DSQL profile (test/support/inbox.ts: the dsql() target through PostgreSQL held to Aurora
      // DSQL's rules, local/dsql/profile.ts), with the same exclusions.
      {
        resolve: SOURCE_ENTRIES,
        test: {
          ...shared,
          maxWorkers: MAX_WORKERS,
          name: 'dsql',
          include: ['test/inbox/**/*.test.ts'],
          exclude: [...NOT_ON_EVERY_TRANSPORT],
          env: { ...shared.env, INBOX_TEST_TRANSPORT: 'dsql', INBOX_TEST_RUNS: OTHER_TRANSPORT_RUNS },
          globalSetup: ['test/support/wire-setup.ts'],
        },
      },
      // The core correctness suites on the DSQL profile again, with 10% of commits failing with DSQL's
      // conflict and retried: 0 double and 0 lost effects there too (test/support/dsql-conflicts.ts).
      {
        resolve: SOURCE_ENTRIES,
        test: {
          ...shared,
          maxWorkers: MAX_WORKERS,
          name: 'dsql-conflicts',
          include: Object.keys(DSQL_CONFLICT_FILES),
          env: { ...shared.env, INBOX_TEST_TRANSPORT: 'dsql', INBOX_TEST_DSQL_CONFLICT_RATE: String(DSQL_CONFLICT_RATE) },
          globalSetup: ['test/support/dsql-conflicts-setup.ts'],
        },
      },
    ],
  },
});
