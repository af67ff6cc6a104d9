import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * The public surface, reviewed: every entry's API report (etc/*.api.md) is what API Extractor writes from
 * the declarations in dist/ (which `npm test` builds before vitest runs), so a change to the surface fails
 * here until its report is regenerated (`npm run api`) and committed with it; every export has JSDoc; and
 * docs/api.md is exactly what scripts/api-docs.mjs renders from API Extractor's model.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

interface ApiMember {
  readonly name: string;
  readonly signature: string;
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
interface Extracted {
  readonly entries: ApiEntry[];
  readonly changedReports: string[];
  readonly problems: string[];
}
interface ApiDocs {
  readonly API_DOCS_PATH: string;
  extract(options: { root?: string; check?: boolean }): Extracted;
  renderApi(entries: readonly ApiEntry[]): string;
  undocumented(entries: readonly ApiEntry[]): string[];
  counts(entries: readonly ApiEntry[]): { specifier: string; exports: number; values: number; types: number }[];
}

/** The generator is plain JavaScript (it runs before anything is compiled); imported by URL, typed here. */
async function loadGenerator(): Promise<ApiDocs> {
  return (await import(pathToFileURL(join(ROOT, 'scripts/api-docs.mjs')).href)) as ApiDocs;
}

/** Each entry and its source, in package.json's order. */
const SOURCES: Readonly<Record<string, string>> = {
  'sqs-inbox': 'lambda/inbox/index.ts',
  'sqs-inbox/producer': 'lambda/inbox/producer/producer.ts',
  'sqs-inbox/outbox': 'lambda/inbox/outbox/index.ts',
  'sqs-inbox/operations': 'lambda/inbox/operations.ts',
  'sqs-inbox/postgres': 'lambda/inbox/transport/postgres/index.ts',
  'sqs-inbox/orm': 'lambda/inbox/orm/index.ts',
  'sqs-inbox/dsql': 'lambda/inbox/transport/dsql/index.ts',
  'sqs-inbox/cdk': 'lib/index.ts',
  'sqs-inbox/local': 'local/index.ts',
  'sqs-inbox/local/streams': 'local/streams/index.ts',
};

/**
 * The most names an entry may export (`npm run api:count`): the handler's entry and the testkit's 40 each
 * (Powertools idempotency's main entry has 14), the constructs 45, every other entry 30.
 */
const BUDGETS: Readonly<Record<string, number>> = { 'sqs-inbox': 40, 'sqs-inbox/local': 40, 'sqs-inbox/cdk': 45 };
const OTHER_ENTRY_BUDGET = 30;

/**
 * The whole package's budget (issue 34): 220 names, each counted once per entry that exports it. It was 351
 * by the old count, 270 when the entries first met their own budgets; 208 when it was met (4 Dec 2026).
 */
const TOTAL_BUDGET = 220;

/** API Extractor compiles every entry's declarations once: a minute on a busy two-core machine. */
const EXTRACT_TIMEOUT_MS = 300_000;

describe('the public surface', () => {
  let api: ApiDocs;
  let extracted: Extracted;

  beforeAll(async () => {
    if (!existsSync(join(ROOT, 'dist/lambda/inbox/index.d.ts'))) {
      throw new Error('dist/ has no declarations: run `npm run build` (npm test does) before this test.');
    }
    api = await loadGenerator();
    extracted = api.extract({ root: ROOT, check: true });
  }, EXTRACT_TIMEOUT_MS);

  it('covers every public entry', () => {
    expect(extracted.entries.map((entry) => entry.specifier)).toEqual(Object.keys(SOURCES));
  });

  it('keeps every entry within its budget of names, and the package within its total', () => {
    const sizes = api.counts(extracted.entries);
    for (const { specifier, exports } of sizes) {
      const budget = BUDGETS[specifier] ?? OTHER_ENTRY_BUDGET;
      expect(
        exports,
        `${specifier}: ${exports} names, budget ${budget}: move what its audience does not need elsewhere, or make it internal (npm run api:count)`,
      ).toBeLessThanOrEqual(budget);
    }
    const total = sizes.reduce((sum, size) => sum + size.exports, 0);
    expect(total, `the package exports ${total} names, budget ${TOTAL_BUDGET} (npm run api:count)`).toBeLessThanOrEqual(TOTAL_BUDGET);
  });

  it("keeps every entry's API report as API Extractor writes it: the surface changes only with its report", () => {
    expect(extracted.changedReports, 'The public surface changed: run `npm run api` and commit etc/*.api.md with the change').toEqual([]);
    // API Extractor's errors: a link that resolves nowhere, a type a signature shows that its entry does not
    // export (export it, write it out in the signature, or keep it out of the signature).
    expect(extracted.problems).toEqual([]);
  });

  it('finds every runtime export of each entry', async () => {
    for (const entry of extracted.entries) {
      const module = (await import(pathToFileURL(join(ROOT, SOURCES[entry.specifier]!)).href)) as Record<string, unknown>;
      const values = entry.exports.filter((item) => ['function', 'class', 'const', 'enum'].includes(item.kind)).map((item) => item.name);
      expect(values.sort(), `${entry.specifier} (is dist/ older than the sources? run npm run build)`).toEqual(Object.keys(module).sort());
    }
  });

  it('has JSDoc on every export, and a description on every member of an options or props interface', () => {
    const problems = api.undocumented(extracted.entries);
    expect(problems, `Document these in their source files:\n${problems.join('\n')}`).toEqual([]);
  });

  it('keeps docs/api.md exactly as the generator renders it', () => {
    const path = join(ROOT, api.API_DOCS_PATH);
    const written = existsSync(path) ? readFileSync(path, 'utf8') : '';
    expect(written === api.renderApi(extracted.entries), `${api.API_DOCS_PATH} is out of date: run \`npm run docs\``).toBe(true);
  });
});

describe('the surface check', () => {
  let root: string;
  let api: ApiDocs;

  /** A throwaway package whose declarations re-export in the forms the entries use. */
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
        '/** The throwaway entry. */',
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
        '    readonly size?: number | undefined;',
        '    readonly name?: string;',
        '}',
      ].join('\n'),
      'dist/b/index.d.ts': "export { Thing } from './thing.js';\n",
      'dist/b/thing.d.ts': 'export declare class Thing {\n    run(): void;\n}\n',
      'dist/c.d.ts': [
        '/** A documented type. */',
        'export type Shape = { readonly sides: number };',
        '/** A documented interface, merged with a namespace of its types: one name. */',
        'export interface Figure { readonly kind: Figure.Kind }',
        '/** The types of the interface of the same name. */',
        'export declare namespace Figure { type Kind = string }',
      ].join('\n'),
    });
  });

  afterAll(() => {
    rmSync(root, { recursive: true, force: true });
  });

  it(
    'names each export and each undocumented one, renders defaults and links, and fails a surface changed without its report or a link that resolves nowhere',
    () => {
      // Arrange: the report written once, as `npm run api` does.
      const written = api.extract({ root });
      expect(written.changedReports).toEqual(['etc/pkg.api.md']);
      const report = readFileSync(join(root, 'etc/pkg.api.md'), 'utf8');
      expect(report).toContain('export function documented(): void;');

      // Assess: the exports, their kinds and where they are declared; what lacks documentation.
      const [entry] = written.entries;
      expect(entry!.exports.map((item) => `${item.kind} ${item.name}`).sort()).toEqual([
        'class Thing',
        'function documented',
        'function renamed',
        'interface Figure',
        'interface Options',
        'namespace Figure',
        'type Shape',
      ]);
      expect(api.undocumented(written.entries).sort()).toEqual([
        'pkg: Options.name (dist/a.d.ts) has no description',
        'pkg: class Thing (dist/b/thing.d.ts) has no JSDoc',
        'pkg: function renamed (dist/a.d.ts) has no JSDoc',
      ]);
      expect(api.counts(written.entries)).toEqual([{ specifier: 'pkg', exports: 6, values: 3, types: 3 }]);
      const markdown = api.renderApi(written.entries);
      expect(markdown).toContain('- `readonly size?: number`: The size. Default: `10`.');
      expect(markdown).toContain('Options of [`documented`](#documented).');
      // A merged name: a section per declaration.
      expect(markdown).toContain('| [`Figure`](#figure) | interface |');
      expect(markdown).toContain('| [`Figure`](#figure-1) | namespace |');

      // Act: the surface grows by one export, the report stays as it was.
      writeFileSync(
        join(root, 'dist/c.d.ts'),
        '/** A documented type. */\nexport type Shape = { readonly sides: number };\n/** New. */\nexport declare const added: 1;\n',
      );
      const checked = api.extract({ root, check: true });

      // Assess: the check names the report, and writes nothing.
      expect(checked.changedReports).toEqual(['etc/pkg.api.md']);
      expect(readFileSync(join(root, 'etc/pkg.api.md'), 'utf8')).toBe(report);
      expect(api.extract({ root }).changedReports).toEqual(['etc/pkg.api.md']);
      expect(api.extract({ root, check: true }).changedReports).toEqual([]);
      expect(written.problems).toEqual([]);

      // Act: a comment links to a name the entry does not export.
      writeFileSync(
        join(root, 'dist/c.d.ts'),
        '/** A documented type, like {@link Missing}. */\nexport type Shape = { readonly sides: number };\n/** New. */\nexport declare const added: 1;\n',
      );
      const linked = api.extract({ root, check: true });

      // Assess: the link is a problem (the api-docs test fails on it), not a line in the report.
      expect(linked.problems).toEqual([expect.stringMatching(/^pkg: The @link reference could not be resolved: .*"Missing"/)]);
      expect(linked.changedReports).toEqual([]);
    },
    EXTRACT_TIMEOUT_MS,
  );
});
