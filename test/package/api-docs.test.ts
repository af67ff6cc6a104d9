import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * The API reference: every export of the public entries (package.json "exports") has JSDoc, and
 * docs/api.md is exactly what scripts/api-docs.mjs generates from the declarations in dist/ (which
 * `npm test` builds before vitest runs).
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

interface ApiMember {
  readonly name: string;
}
interface ApiExport {
  readonly name: string;
  readonly kind: string;
  readonly source: string;
  readonly documented: boolean;
  readonly members: readonly ApiMember[];
}
interface ApiEntry {
  readonly specifier: string;
  readonly source: string;
  readonly exports: readonly ApiExport[];
}
interface ApiDocs {
  readonly API_DOCS_PATH: string;
  collectApi(options?: { root?: string; dist?: string }): ApiEntry[];
  renderApi(entries: readonly ApiEntry[]): string;
  undocumented(entries: readonly ApiEntry[]): string[];
  staleDeclarations(entries: readonly ApiEntry[], options?: { root?: string; dist?: string }): string[];
}

/** The generator is plain JavaScript (it runs before anything is compiled); imported by URL, typed here. */
async function loadGenerator(): Promise<ApiDocs> {
  return (await import(pathToFileURL(join(ROOT, 'scripts/api-docs.mjs')).href)) as ApiDocs;
}

/** What to do when the declarations are missing or older than the sources they document. */
function buildHint(api: ApiDocs, entries: readonly ApiEntry[]): string {
  const stale = api.staleDeclarations(entries, { root: ROOT });
  return stale.length ? ` (dist/ is older than ${stale.join(', ')}: run \`npm run build\` first)` : '';
}

describe('the API reference', () => {
  let api: ApiDocs;
  let entries: ApiEntry[];

  beforeAll(async () => {
    if (!existsSync(join(ROOT, 'dist/lambda/inbox/index.d.ts'))) {
      throw new Error('dist/ has no declarations: run `npm run build` (npm test does) before this test.');
    }
    api = await loadGenerator();
    entries = api.collectApi({ root: ROOT });
  });

  it('covers the eight public entries', () => {
    expect(entries.map((entry) => entry.specifier)).toEqual(['sqs-inbox', 'sqs-inbox/batch', 'sqs-inbox/producer', 'sqs-inbox/outbox', 'sqs-inbox/parked', 'sqs-inbox/postgres', 'sqs-inbox/cdk', 'sqs-inbox/local']);
  });

  it('finds every runtime export of each entry, following re-exports and export * to the declaring file', async () => {
    const sources: Record<string, string> = {
      'sqs-inbox': 'lambda/inbox/index.ts',
      'sqs-inbox/batch': 'lambda/inbox/handler/batch-handlers.ts',
      'sqs-inbox/producer': 'lambda/inbox/producer/producer.ts',
      'sqs-inbox/outbox': 'lambda/inbox/outbox/index.ts',
      'sqs-inbox/parked': 'lambda/inbox/parked/index.ts',
      'sqs-inbox/postgres': 'lambda/inbox/transport/postgres/index.ts',
      'sqs-inbox/cdk': 'lib/index.ts',
      'sqs-inbox/local': 'local/index.ts',
    };
    for (const entry of entries) {
      const module = (await import(pathToFileURL(join(ROOT, sources[entry.specifier]!)).href)) as Record<string, unknown>;
      const values = entry.exports.filter((item) => ['function', 'class', 'const', 'enum'].includes(item.kind)).map((item) => item.name);
      expect(values.sort(), `${entry.specifier}${buildHint(api, entries)}`).toEqual(Object.keys(module).sort());
    }
  });

  it('has JSDoc on every export, and a description on every member of an options or props interface', () => {
    const problems = api.undocumented(entries);
    expect(problems, `Document these in their source files${buildHint(api, entries)}:\n${problems.join('\n')}`).toEqual([]);
  });

  it(`keeps docs/api.md exactly as the generator writes it`, () => {
    const path = join(ROOT, api.API_DOCS_PATH);
    const written = existsSync(path) ? readFileSync(path, 'utf8') : '';
    const generated = api.renderApi(entries);
    expect(written === generated, `${api.API_DOCS_PATH} is out of date: run \`npm run docs\`${buildHint(api, entries)}`).toBe(true);
  });
});

describe('the undocumented-export check', () => {
  let root: string;
  let api: ApiDocs;

  /** A throwaway package whose declarations re-export in every form the generator follows. */
  function writePackage(files: Record<string, string>): void {
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      writeFileSync(join(root, path), text);
    }
  }

  beforeAll(async () => {
    api = await loadGenerator();
    root = mkdtempSync(join(tmpdir(), 'sqs-inbox-api-docs-'));
    writePackage({
      'package.json': JSON.stringify({ name: 'pkg', exports: { '.': { types: './dist/index.d.ts', default: './dist/index.js' } } }),
      'dist/index.d.ts': [
        "export { documented, undocumented as renamed } from './a.js';",
        "export type { Options } from './a.js';",
        "export * from './b/index.js';",
        "export type * from './c.js';",
      ].join('\n'),
      'dist/a.d.ts': [
        '/** Documented. */',
        'export declare function documented(): void;',
        'export declare function undocumented(): void;',
        '/** Options of {@link documented}. */',
        'export interface Options {',
        '    /** The size. @default 10 */',
        '    readonly size?: number;',
        '    readonly name?: string;',
        '}',
      ].join('\n'),
      'dist/b/index.d.ts': "export { Thing } from './thing.js';\n",
      'dist/b/thing.d.ts': 'export declare class Thing {\n    run(): void;\n}\n',
      'dist/c.d.ts': '/** A documented type. */\nexport type Shape = { readonly sides: number };\n',
    });
  });

  afterAll(() => {
    rmSync(root, { recursive: true, force: true });
  });

  it('names each undocumented export and member with its entry and its source file', () => {
    const entries = api.collectApi({ root });
    expect(entries[0]!.exports.map((item) => `${item.kind} ${item.name} ${item.source}`)).toEqual([
      'function documented a.ts',
      'function renamed a.ts',
      'interface Options a.ts',
      'class Thing b/thing.ts',
      'type Shape c.ts',
    ]);
    expect(api.undocumented(entries)).toEqual([
      'pkg: function renamed (a.ts) has no JSDoc',
      'pkg: Options.name (a.ts) has no description',
      'pkg: class Thing (b/thing.ts) has no JSDoc',
    ]);
  });

  it('renders defaults and links in the reference', () => {
    const markdown = api.renderApi(api.collectApi({ root }));
    expect(markdown).toContain('- `readonly size?: number`: The size. Default: `10`.');
    expect(markdown).toContain('Options of [`documented`](#documented).');
  });
});
