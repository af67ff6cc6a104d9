import { mkdtemp, rm } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The CommonJS copy in dist/cjs/ (`npm test` builds dist/ first), as jest and other CommonJS loaders get it
 * through the "require" condition of package.json "exports". test/package/outside-in.test.ts runs it in a
 * `cdk init` app's own jest; these tests hold it to the ES modules it is a copy of.
 */

const ROOT = join(import.meta.dirname, '../..');
/** Node's own require, as jest's runtime resolves it: vitest does not step in. */
const requireCommonJs = createRequire(join(ROOT, 'package.json'));

interface Target {
  readonly import: { readonly types: string; readonly default: string };
  readonly require: { readonly types: string; readonly default: string };
}
const EXPORTS = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { exports: Record<string, Target | string> }).exports;
const ENTRIES = Object.entries(EXPORTS).flatMap(([subpath, target]) => (typeof target === 'object' ? [{ subpath, target }] : []));

describe('the CommonJS build', () => {
  it('is the "require" target of every entry, beside the ES modules of its "import" target', () => {
    expect(ENTRIES.map(({ subpath }) => subpath)).toEqual([
      '.',
      './producer',
      './outbox',
      './operations',
      './postgres',
      './orm',
      './dsql',
      './cdk',
      './local',
      './local/streams',
    ]);
    for (const { target } of ENTRIES) {
      // `import 'sqs-inbox/cdk'` goes through lib/cdk.ts, which names a missing peer with top-level await
      // (which require cannot load); `require` goes to the constructs themselves.
      expect(target.require.default).toBe(target.import.default.replace('./dist/', './dist/cjs/').replace('/lib/cdk.js', '/lib/index.js'));
      expect(target.require.types).toBe(target.import.types.replace('./dist/', './dist/cjs/'));
    }
    expect(JSON.parse(readFileSync(join(ROOT, 'dist/cjs/package.json'), 'utf8'))).toEqual({ type: 'commonjs' });
  });

  it.each(ENTRIES)('$subpath exports with require() every name it exports with import', async ({ target }) => {
    const commonJs = requireCommonJs(join(ROOT, target.require.default)) as Record<string, unknown>;
    const esm = (await import(join(ROOT, target.import.default))) as Record<string, unknown>;

    expect(Object.keys(commonJs).sort()).toEqual(Object.keys(esm).sort());
    for (const [name, value] of Object.entries(esm)) expect(typeof commonJs[name], name).toBe(typeof value);
  });

  it('deploys the same prebuilt function assets from the constructs loaded with require(): the same template, asset for asset', async () => {
    const cdk = requireCommonJs('aws-cdk-lib') as typeof import('aws-cdk-lib');
    const outdir = await mkdtemp(join(tmpdir(), 'sqs-inbox-cjs-synth-'));
    try {
      const synth = (constructs: typeof import('../../lib/index.js'), id: string) => {
        const app = new cdk.App({ outdir: join(outdir, id), context: { 'aws:cdk:bundling-stacks': ['**'] } });
        new constructs.InboxDatabase(new cdk.Stack(app, 'Db'), 'Db');
        return app.synth().getStackByName('Db').template as unknown;
      };
      const fromRequire = synth(requireCommonJs(join(ROOT, 'dist/cjs/lib/index.js')) as typeof import('../../lib/index.js'), 'cjs');
      const fromImport = synth((await import(join(ROOT, 'dist/lib/index.js'))) as typeof import('../../lib/index.js'), 'esm');

      expect(JSON.stringify(fromRequire)).toContain('.zip');
      expect(fromRequire).toEqual(fromImport);
    } finally {
      await rm(outdir, { recursive: true, force: true });
    }
  }, 120_000);
});
