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
  { from: 'lambda/inbox/transport/dsql/supported-sql.ts', forbidden: [''] },
  { from: 'lambda/inbox/', forbidden: ['lib/', 'local/', 'bin/', 'demo/', 'bench/', 'examples/', 'lambda/functions/'] },
  { from: 'lambda/functions/', forbidden: ['lib/', 'local/', 'bin/', 'demo/', 'bench/', 'examples/'] },
  // The constructs know the runtime's functions by path only; of its code they import only the shared contract, and
  // the one SQL scanner (which imports nothing), so that a migration file is split and judged as the runtime reads SQL,
  // and DSQL's supported-SQL rules (data with sources, importing nothing), so that synth holds migrations to the same list.
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

describe('the dependency direction', () => {
  const files = ['lambda', 'lib', 'local', 'bin'].flatMap(sources);
  const read = (file: string) => readFileSync(file, 'utf8');

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
});
