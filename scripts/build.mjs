#!/usr/bin/env node
// Builds the package into dist/: one JavaScript module per TypeScript source (esbuild, with source maps),
// then the declarations (tsc). dist/ mirrors the source folders, so relative paths between lib/ and
// lambda/ (the constructs find their handlers' entry files that way) hold in the package too.
// Beside it, dist/cjs/ holds a CommonJS copy of what the entries' "require" targets reach, with a
// declaration per entry, for jest and other CommonJS loaders that cannot load ES modules (as Powertools).
// The functions the constructs deploy for the package itself (migration, purge, outbox sweeper) are bundled here too,
// once, into dist/lib/assets/<name>/index.mjs: a CDK app deploys them as ready assets and bundles only its own handlers.
// Plain JavaScript on purpose: it runs on a fresh clone with nothing compiled yet.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, posix, relative } from 'node:path';
import { build } from 'esbuild';

/** What the package ships: the runtime library and functions, the constructs, the local runtime, the CLI. */
const SOURCES = ['lambda', 'lib', 'local', 'demo', 'bin/sqs-inbox.ts', 'bin/cli'];
const OUT = 'dist';
/** The CommonJS build: a folder of its own whose package.json says "commonjs", as Node scopes formats by folder. */
const CJS_OUT = join(OUT, 'cjs');

const declarationsOnly = process.argv.includes('--types-only');
const jsOnly = process.argv.includes('--js-only');

function typescriptFiles(path) {
  if (!existsSync(path)) return [];
  if (statSync(path).isFile()) return path.endsWith('.ts') && !path.endsWith('.d.ts') ? [path] : [];
  return readdirSync(path).flatMap((name) => typescriptFiles(join(path, name)));
}

/**
 * The sources of the package.json entries' "require" targets (`./dist/cjs/lib/index.js` -> `lib/index.ts`).
 * An entry without one is ES modules only; one whose target has no source fails the build.
 */
function commonJsEntries() {
  const { exports } = JSON.parse(readFileSync('package.json', 'utf8'));
  return Object.values(exports)
    .map((target) => target?.require?.default)
    .filter((target) => target !== undefined)
    .map((target) => {
      const source = relative(CJS_OUT, target).replace(/\.js$/, '.ts');
      if (source.startsWith('..') || !existsSync(source)) {
        throw new Error(`build: package.json "exports" requires ${target}: a "require" target is ./dist/cjs/<source path>.js, of a source that exists.`);
      }
      return source;
    });
}

/** Every source file the entries import, statically or by a literal `import()`: the CommonJS build's files. */
async function importedSources(entries) {
  const { metafile } = await build({
    entryPoints: entries,
    bundle: true,
    packages: 'external',
    platform: 'node',
    format: 'esm',
    write: false,
    metafile: true,
    logLevel: 'silent',
    outdir: OUT,
  });
  return Object.keys(metafile.inputs).filter((file) => file.endsWith('.ts'));
}

const COMMON = {
  outbase: '.',
  bundle: false,
  platform: 'node',
  // Node 20 is the oldest runtime the package supports (engines); Lambda runs 22 or 24.
  target: 'node20',
  logLevel: 'warning',
};

/**
 * CommonJS has no `import.meta`. In the CommonJS copy `import.meta.url` names the file's ES module twin
 * in dist/: the constructs find their prebuilt function assets (lib/function-assets.ts) and fingerprint the migration
 * sources by path, and Lambda must get the ES module with its named `handler` export, the same bytes, and
 * so the same asset hashes, whichever format loaded the constructs. A file that uses it is built alone,
 * with its own twin's path (after "use strict", which esbuild writes first for the others).
 */
async function buildCommonJs(files) {
  // import.meta.dirname and the like would be empty in CommonJS: the build fails, naming the file.
  const options = { ...COMMON, outdir: CJS_OUT, format: 'cjs', logOverride: { 'empty-import-meta': 'error' } };
  const meta = files.filter((file) => readFileSync(file, 'utf8').includes('import.meta'));
  await build({ ...options, entryPoints: files.filter((file) => !meta.includes(file)) });
  for (const file of meta) {
    const out = join(CJS_OUT, file.replace(/\.ts$/, '.js'));
    const twin = posix.relative(dirname(out), join(OUT, file.replace(/\.ts$/, '.js')));
    await build({
      ...options,
      entryPoints: [file],
      define: { 'import.meta.url': '__esmTwinUrl' },
      banner: {
        js: `"use strict";\nconst __esmTwinUrl = require("node:url").pathToFileURL(require("node:path").join(__dirname, ${JSON.stringify(twin)})).href;`,
      },
    });
  }
  mkdirSync(CJS_OUT, { recursive: true });
  writeFileSync(join(CJS_OUT, 'package.json'), '{ "type": "commonjs" }\n');
}

/**
 * The CommonJS entries' declarations: one line each that re-exports the ES modules' declarations. Inside
 * dist/cjs/ TypeScript reads an entry as CommonJS, as it must for a `require`, and follows the re-export
 * as Node's require(esm) would (TypeScript 5.8 or newer with module NodeNext; older ones only with
 * skipLibCheck, as `cdk init` sets it). One copy of the declarations keeps the install within its budget
 * (test/package/outside-in.test.ts), and the types one, whichever format an app loads.
 */
function writeCommonJsDeclarations(entries) {
  for (const entry of entries) {
    const declaration = join(CJS_OUT, entry.replace(/\.ts$/, '.d.ts'));
    const esm = posix.relative(dirname(declaration), join(OUT, entry.replace(/\.ts$/, '.js')));
    mkdirSync(dirname(declaration), { recursive: true });
    writeFileSync(declaration, `export * from '${esm}';\n`);
  }
}

/**
 * The package's own functions, read from lib/function-assets.ts (`name: '../lambda/functions/...ts'`), the one list
 * of them; the build fails when it finds none, or an entry that does not exist.
 */
function packageFunctions() {
  const listed = readFileSync('lib/function-assets.ts', 'utf8');
  const block = listed.slice(listed.indexOf('export const PACKAGE_FUNCTIONS'), listed.indexOf('} as const;'));
  const functions = [...block.matchAll(/^\s+'?([a-z][a-z-]*)'?: '\.\.\/([^']+\.ts)',$/gm)].map(([, name, entry]) => ({ name, entry }));
  const missing = functions.filter(({ entry }) => !existsSync(entry));
  if (functions.length === 0 || missing.length > 0) {
    throw new Error(
      `build: lib/function-assets.ts's PACKAGE_FUNCTIONS must name existing entries as name: '../lambda/functions/<path>.ts'; missing: ${missing.map(({ entry }) => entry).join(', ') || 'the list'}.`,
    );
  }
  return functions;
}

/**
 * Each function as Lambda runs it: one minified ES module for Node.js 22 (the constructs' runtime), the AWS SDK's
 * service clients left to Lambda's runtime, as InboxFunction bundles a user's `entry`.
 */
async function buildFunctionAssets() {
  for (const { name, entry } of packageFunctions()) {
    await build({
      entryPoints: [entry],
      outfile: join(OUT, 'lib', 'assets', name, 'index.mjs'),
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node22',
      mainFields: ['module', 'main'],
      minify: true,
      // No source map: its sources do not ship, and each map would double the function's share of the install.
      sourcemap: false,
      // The AWS SDK is Lambda's, but for the signers (@aws-sdk/dsql-signer for the DSQL role function), which are
      // not among what the runtime documents: they are bundled, their own SDK dependencies left to the runtime.
      plugins: [sdkFromRuntime],
      // A bundled CommonJS dependency may still call require(); ESM has none without this shim.
      banner: { js: "import { createRequire as __inboxCreateRequire } from 'module';const require = __inboxCreateRequire(import.meta.url);" },
      logLevel: 'warning',
    });
  }
}

/** Leaves `@aws-sdk/*` to Lambda's runtime, but for the signers, which it does not document: those are bundled. */
const sdkFromRuntime = {
  name: 'sdk-from-runtime',
  setup(build) {
    build.onResolve({ filter: /^@aws-sdk\// }, (args) =>
      /^@aws-sdk\/(dsql|rds)-signer(\/|$)/.test(args.path) ? undefined : { path: args.path, external: true },
    );
  },
};

const cjsEntries = commonJsEntries();

if (!declarationsOnly) {
  // A full build starts clean, so no file of a deleted source lingers in the package.
  if (!jsOnly) rmSync(OUT, { recursive: true, force: true });
  await build({
    ...COMMON,
    entryPoints: SOURCES.flatMap(typescriptFiles),
    outdir: OUT,
    format: 'esm',
    // Maps give stack traces their TypeScript file and line; without the sources' text, which would
    // double the package's size (the Lambda project installing it is measured against Powertools').
    // The CommonJS copy has none: it serves tests and synths, never Lambda, and keeps within that budget.
    sourcemap: true,
    sourcesContent: false,
  });
  await buildCommonJs(await importedSources(cjsEntries));
  await buildFunctionAssets();
}

if (!jsOnly) {
  const tsc = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
  if (tsc.status !== 0) {
    process.stderr.write('build: the declarations did not compile (tsc -p tsconfig.build.json).\n');
    process.exit(tsc.status ?? 1);
  }
  writeCommonJsDeclarations(cjsEntries);
}
