#!/usr/bin/env node
// The adversarial suite (test/inbox/adversarial), run long: every property many times from a random seed,
// on the Data API, the PostgreSQL wire protocol and the DSQL profile. `npm test` runs the same properties a
// few times from a fixed seed; this run looks further. The seed is printed first, and a failure reproduces
// with it (fast-check also prints the seed and the path of the shrunk counterexample).
//
//   npm run fuzz                              50 runs per property, a random seed, all three transports
//   npm run fuzz -- --seed 1234 --runs 200    that seed, 200 runs per property
//   npm run fuzz -- --project wire            one transport (default, wire, dsql)
//   npm run fuzz -- --with-known              also the cases of the known defects (known-defects.ts), to watch them fail
//   npm run fuzz -- records                   only the suite's files whose name starts so (an argument with a dash goes to vitest)
//
// Plain JavaScript, like build.mjs: it runs on a fresh clone with nothing compiled yet.
import { spawnSync } from 'node:child_process';
import { randomInt } from 'node:crypto';

const args = process.argv.slice(2);
const options = { seed: undefined, runs: 50, projects: [], known: false, rest: [] };
for (let index = 0; index < args.length; index++) {
  const arg = args[index];
  const value = () => {
    const next = args[++index];
    if (next === undefined) throw new Error(`${arg} needs a value`);
    return next;
  };
  if (arg === '--seed') options.seed = Number(value());
  else if (arg === '--runs') options.runs = Number(value());
  else if (arg === '--project') options.projects.push(value());
  else if (arg === '--with-known') options.known = true;
  else options.rest.push(arg);
}
if (options.seed !== undefined && !Number.isSafeInteger(options.seed)) throw new Error('--seed takes a whole number');
if (!Number.isSafeInteger(options.runs) || options.runs < 1) throw new Error('--runs takes a whole number of runs per property, 1 or more');

const seed = options.seed ?? randomInt(2 ** 31);
const projects = options.projects.length > 0 ? options.projects : ['default', 'wire', 'dsql'];
const again = [
  'npm run fuzz --',
  '--seed',
  seed,
  '--runs',
  options.runs,
  ...options.projects.flatMap((p) => ['--project', p]),
  ...(options.known ? ['--with-known'] : []),
];
console.log(`adversarial suite: seed ${seed}, ${options.runs} runs per property, on ${projects.join(', ')}${options.known ? ', known defects included' : ''}`);
console.log(`to run it again: ${again.join(' ')}`);

const names = options.rest.filter((arg) => !arg.startsWith('-'));
const files = names.length > 0 ? names.map((name) => `test/inbox/adversarial/${name}`) : ['test/inbox/adversarial'];
const flags = options.rest.filter((arg) => arg.startsWith('-'));
const result = spawnSync('npx', ['vitest', 'run', ...projects.flatMap((project) => ['--project', project]), ...files, ...flags], {
  stdio: 'inherit',
  env: {
    ...process.env,
    INBOX_FUZZ_SEED: String(seed),
    INBOX_FUZZ_RUNS: String(options.runs),
    ...(options.known ? { INBOX_FUZZ_KNOWN: 'include' } : {}),
  },
});
console.log(`adversarial suite: seed ${seed} (${again.join(' ')})`);
process.exit(result.status ?? 1);
