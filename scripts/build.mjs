#!/usr/bin/env node
// Builds the package into dist/: one JavaScript module per TypeScript source (esbuild, with source maps),
// then the declarations (tsc). dist/ mirrors the source folders, so relative paths between lib/ and
// lambda/ (the constructs find their handlers' entry files that way) hold in the package too.
// Plain JavaScript on purpose: it runs on a fresh clone with nothing compiled yet.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';

/** What the package ships: the runtime library and functions, the constructs, the local runtime, the CLI. */
const SOURCES = ['lambda', 'lib', 'local', 'bin/sqs-inbox.ts', 'bin/cli'];
const OUT = 'dist';

const declarationsOnly = process.argv.includes('--types-only');
const jsOnly = process.argv.includes('--js-only');

function typescriptFiles(path) {
  if (!existsSync(path)) return [];
  if (statSync(path).isFile()) return path.endsWith('.ts') && !path.endsWith('.d.ts') ? [path] : [];
  return readdirSync(path).flatMap((name) => typescriptFiles(join(path, name)));
}

if (!declarationsOnly) {
  // A full build starts clean, so no file of a deleted source lingers in the package.
  if (!jsOnly) rmSync(OUT, { recursive: true, force: true });
  await build({
    entryPoints: SOURCES.flatMap(typescriptFiles),
    outdir: OUT,
    outbase: '.',
    bundle: false,
    platform: 'node',
    format: 'esm',
    // Node 20 is the oldest runtime the package supports (engines); Lambda runs 22 or 24.
    target: 'node20',
    // Maps give stack traces their TypeScript file and line; without the sources' text, which would
    // double the package's size (the Lambda project installing it is measured against Powertools').
    sourcemap: true,
    sourcesContent: false,
    logLevel: 'warning',
  });
}

if (!jsOnly) {
  const tsc = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
  if (tsc.status !== 0) {
    process.stderr.write('build: the declarations did not compile (tsc -p tsconfig.build.json).\n');
    process.exit(tsc.status ?? 1);
  }
}
