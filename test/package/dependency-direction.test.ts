import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The one-way rule of docs/architecture.md, checked over every import in the shipped sources (static, type-only,
 * re-exports and literal `import()`): the runtime imports nothing of the constructs, the testkit, the CLI or the
 * demo; the constructs import of the runtime only what they share with it; nothing shipped imports the demo.
 */
const RULES: readonly { readonly from: string; readonly forbidden: readonly string[]; readonly allowed?: readonly string[] }[] = [
  // What the constructs and the testkit share with the runtime imports nothing, so a CDK app that loads it loads no runtime code.
  { from: 'lambda/inbox/contract.ts', forbidden: [''] },
  { from: 'lambda/inbox/transport/sql-scanner.ts', forbidden: [''] },
  // DSQL's rules read SQL through the one scanner, so that they match what PostgreSQL reads as code; it imports nothing.
  { from: 'lambda/inbox/transport/dsql/supported-sql.ts', forbidden: [''], allowed: ['lambda/inbox/transport/sql-scanner.ts'] },
  { from: 'lambda/inbox/', forbidden: ['lib/', 'local/', 'bin/', 'demo/', 'bench/', 'examples/', 'lambda/functions/'] },
  { from: 'lambda/functions/', forbidden: ['lib/', 'local/', 'bin/', 'demo/', 'bench/', 'examples/'] },
  // The constructs know the runtime's functions by path only; of its code they import only the shared contract, and
  // the one SQL scanner (which imports nothing), so that a migration file is split and judged as the runtime reads SQL,
  // and DSQL's supported-SQL rules (data with sources, importing only the scanner), so that synth holds migrations to the same list.
  {
    from: 'lib/',
    forbidden: ['lambda/', 'local/', 'bin/', 'demo/', 'bench/', 'examples/'],
    allowed: ['lambda/inbox/peers.ts', 'lambda/inbox/contract.ts', 'lambda/inbox/transport/sql-scanner.ts', 'lambda/inbox/transport/dsql/supported-sql.ts'],
  },
  { from: 'local/', forbidden: ['lib/', 'bin/', 'demo/', 'bench/', 'examples/'] },
  { from: 'bin/cli/', forbidden: ['demo/', 'bench/', 'examples/'] },
  { from: 'bin/sqs-inbox.ts', forbidden: ['demo/', 'bench/', 'examples/'] },
];

const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(['"])(\.{1,2}\/[^'"]+)\1/g;

function sources(path: string): string[] {
  if (statSync(path).isFile()) return path.endsWith('.ts') ? [path] : [];
  return readdirSync(path).flatMap((name) => sources(join(path, name)));
}

/** Every relative import of the file, as the path of the source it names. */
function importsOf(file: string, text: string): string[] {
  return [...text.matchAll(SPECIFIER)].map((match) => normalize(join(dirname(file), match[2]!)).replace(/\.js$/, '.ts'));
}

function violations(files: readonly string[], read: (file: string) => string): string[] {
  return files.flatMap((file) => {
    const rule = RULES.find((candidate) => file.startsWith(candidate.from));
    if (rule === undefined) return [];
    return importsOf(file, read(file))
      .filter((target) => rule.forbidden.some((prefix) => target.startsWith(prefix)) && !rule.allowed?.includes(target))
      .map((target) => `${file} -> ${target}`);
  });
}

/**
 * The transport seam (docs/architecture.md, "The transport seam"): `lambda/inbox/transport/*.ts` is the
 * abstraction, and each folder under it one transport that implements it. The seam imports no transport; the
 * runtime outside `transport/` imports a transport only where a package entry exposes it, and where the
 * handler takes the Data API as its default.
 */
const TRANSPORT = 'lambda/inbox/transport/';
const IMPLEMENTATION = /^lambda\/inbox\/transport\/[^/]+\//;
const EXPOSES_A_TRANSPORT: readonly string[] = [
  // The package entries: `sqs-inbox` (dataApi), `sqs-inbox/operations`.
  'lambda/inbox/index.ts',
  'lambda/inbox/operations.ts',
  // `inbox()` without `database`: dataApi(), from the INBOX_* environment.
  'lambda/inbox/handler/options.ts',
];

function seamViolations(files: readonly string[], read: (file: string) => string): string[] {
  return files.flatMap((file) => {
    const seam = file.startsWith(TRANSPORT) && !IMPLEMENTATION.test(file);
    const runtime = file.startsWith('lambda/inbox/') && !file.startsWith(TRANSPORT) && !EXPOSES_A_TRANSPORT.includes(file);
    if (!seam && !runtime) return [];
    return importsOf(file, read(file))
      .filter((target) => IMPLEMENTATION.test(target))
      .map((target) => `${file} -> ${target}`);
  });
}

/** What an import statement brings at run time: nothing for `import type`, `export type` or braces of `type` names only. */
const STATEMENT =
  /\b(import|export)(\s+type)?\s*(\{[^}]*\}|\*(?:\s+as\s+\w+)?|\w+(?:\s*,\s*\{[^}]*\})?)\s*from\s*(['"])(\.{1,2}\/[^'"]+)\4|\bimport\s*\(\s*(['"])(\.{1,2}\/[^'"]+)\6/g;

function valueImportsOf(file: string, text: string): string[] {
  return [...text.matchAll(STATEMENT)]
    .filter((match) => {
      if (match[7] !== undefined) return true;
      if (match[2] !== undefined) return false;
      const names = match[3]!;
      if (!names.startsWith('{')) return true;
      const list = names
        .slice(1, -1)
        .split(',')
        .map((name) => name.trim())
        .filter(Boolean);
      return list.length === 0 || list.some((name) => !name.startsWith('type '));
    })
    .map((match) => normalize(join(dirname(file), (match[5] ?? match[7])!)).replace(/\.js$/, '.ts'));
}

/** Every cycle of value imports among `files`, each as its path from a file back to it. */
function valueCycles(files: readonly string[], read: (file: string) => string): string[] {
  const edges = new Map(files.map((file) => [file, valueImportsOf(file, read(file)).filter((target) => files.includes(target))]));
  const cycles: string[] = [];
  const done = new Set<string>();
  const visit = (file: string, path: string[]) => {
    const at = path.indexOf(file);
    if (at >= 0) {
      cycles.push([...path.slice(at), file].join(' -> '));
      return;
    }
    if (done.has(file)) return;
    for (const target of edges.get(file) ?? []) visit(target, [...path, file]);
    done.add(file);
  };
  for (const file of files) visit(file, []);
  return cycles;
}

const read = (file: string) => readFileSync(file, 'utf8');

describe('the dependency direction', () => {
  const files = ['lambda', 'lib', 'local', 'bin'].flatMap(sources);

  it('holds for every import of the shipped sources, without exceptions', () => {
    expect(violations(files, read)).toEqual([]);
  });

  it('fails an import against the direction, static, type-only or dynamic', () => {
    const wrong = [
      "import { InboxConsumer } from '../../../lib/index.js';",
      "import type { LocalStack } from '../../../local/stack.js';",
      "const { startLocal } = await import('../../../local/stack.js');",
      "export { runDemo } from '../../../demo/sqs/demo.js';",
    ];
    for (const line of wrong) {
      expect(violations(['lambda/inbox/handler/consumer.ts'], () => line)).toHaveLength(1);
    }
    expect(
      violations(['lambda/functions/migration/migrate.ts'], () => "import { EXAMPLE_ORDER_MIGRATIONS } from '../../../demo/functions/example-migrations.js';"),
    ).toEqual(['lambda/functions/migration/migrate.ts -> demo/functions/example-migrations.ts']);
    expect(violations(['lib/consumer/inbox-consumer.ts'], () => "import { claimSql } from '../../lambda/inbox/sql/claim.js';")).toEqual([
      'lib/consumer/inbox-consumer.ts -> lambda/inbox/sql/claim.ts',
    ]);
    expect(violations(['lib/cdk.ts'], () => "import { PeerDependencyError } from '../lambda/inbox/peers.js';")).toEqual([]);
    expect(violations(['lib/database/migration-sets.ts'], () => "import { scanSql } from '../../lambda/inbox/transport/sql-scanner.js';")).toEqual([]);
    expect(
      violations(['lib/database/migration-sets.ts'], () => "import { refuseTransactionControl } from '../../lambda/inbox/transport/transaction-control.js';"),
    ).toEqual(['lib/database/migration-sets.ts -> lambda/inbox/transport/transaction-control.ts']);
    expect(violations(['lib/alarms/inbox-alarms.ts'], () => "import { METRIC_NAMESPACE } from '../../lambda/inbox/contract.js';")).toEqual([]);
    expect(violations(['lambda/inbox/contract.ts'], () => "import type { SourceName } from './sources/source.js';")).toEqual([
      'lambda/inbox/contract.ts -> lambda/inbox/sources/source.ts',
    ]);
  });

  describe('the transport seam', () => {
    const runtime = sources('lambda');

    it('holds: the seam imports no transport, and the runtime reaches one only through its entries', () => {
      expect(seamViolations(runtime, read)).toEqual([]);
    });

    it('fails the seam importing a transport, and a mode importing one', () => {
      expect(seamViolations(['lambda/inbox/transport/session.ts'], () => "import type { DataApiSession } from './data-api/session.js';")).toEqual([
        'lambda/inbox/transport/session.ts -> lambda/inbox/transport/data-api/session.ts',
      ]);
      expect(seamViolations(['lambda/inbox/modes/statement-set.ts'], () => "import { fitsOneCall } from '../transport/data-api/request-size.js';")).toEqual([
        'lambda/inbox/modes/statement-set.ts -> lambda/inbox/transport/data-api/request-size.ts',
      ]);
      // A transport may import the seam and its own files; an entry may expose a transport.
      expect(seamViolations(['lambda/inbox/transport/dsql/index.ts'], () => "import { PostgresSession } from '../postgres/postgres-session.js';")).toEqual([]);
      expect(seamViolations(['lambda/inbox/index.ts'], () => "export { dataApi } from './transport/data-api/transport.js';")).toEqual([]);
    });

    it('has no cycle of value imports in lambda/ (type-only imports may cycle)', () => {
      expect(valueCycles(runtime, read)).toEqual([]);
    });

    it('finds a value cycle made on purpose, and lets a type-only one pass', () => {
      const files = ['lambda/inbox/a.ts', 'lambda/inbox/b.ts', 'lambda/inbox/c.ts'];
      const cycle: Record<string, string> = {
        'lambda/inbox/a.ts': "import { b } from './b.js';",
        'lambda/inbox/b.ts': "import { type C, c } from './c.js';",
        'lambda/inbox/c.ts': "export { a } from './a.js';",
      };
      expect(valueCycles(files, (file) => cycle[file]!)).toEqual(['lambda/inbox/a.ts -> lambda/inbox/b.ts -> lambda/inbox/c.ts -> lambda/inbox/a.ts']);
      const typeOnly: Record<string, string> = { ...cycle, 'lambda/inbox/c.ts': "export type { A } from './a.js';" };
      expect(valueCycles(files, (file) => typeOnly[file]!)).toEqual([]);
      const bracesOfTypes: Record<string, string> = { ...cycle, 'lambda/inbox/b.ts': "import { type C, type D } from './c.js';" };
      expect(valueCycles(files, (file) => bracesOfTypes[file]!)).toEqual([]);
      const dynamic: Record<string, string> = { ...cycle, 'lambda/inbox/c.ts': "const { a } = await import('./a.js');" };
      expect(valueCycles(files, (file) => dynamic[file]!)).toHaveLength(1);
    });

    it('finds a cycle through the real files when one is added on purpose', () => {
      const withCycle = (file: string) =>
        file === 'lambda/inbox/transport/transaction.ts' ? `${read(file)}\nimport { DataApiSession } from './data-api/session.js';\n` : read(file);
      expect(valueCycles(runtime, withCycle).some((cycle) => cycle.includes('lambda/inbox/transport/transaction.ts'))).toBe(true);
    });
  });
});
