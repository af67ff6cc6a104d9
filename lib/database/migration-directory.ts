// Your own migration sets as files, and the rules a set must keep: what InboxDatabase checks at synth and
// `sqs-inbox migrate --dir` checks before it applies a folder. Apart from migration-sets.ts, and free of
// aws-cdk-lib, so that the CLI applies a folder by the constructs' rules without the CDK installed.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import type { InvariantViolation } from '../invariants.js';
import { scanSql, transactionControlIn } from '../../lambda/inbox/transport/sql-scanner.js';
import type { LeadingWord } from '../../lambda/inbox/transport/sql-scanner.js';
import { MIGRATION_SET_NAME_PATTERN, MIGRATION_SET_NAME_RULE } from '../../lambda/inbox/contract.js';
import type { InboxMigrationSet, MigrationDirectoryOptions } from './migration-sets.js';

/**
 * The migration sets the bundled migration handler holds (lambda/functions/migration/migrate.ts), which
 * InboxDatabase `migrations` may name: the inbox's own, always applied first.
 */
export const BUILT_IN_MIGRATION_SETS: readonly string[] = ['inbox'];

const MIGRATION_FILE = /^(\d+)_(.+)\.sql$/;

/**
 * Reads a migration set from a folder of `<version>_<name>.sql` files (what `MigrationSet.fromDirectory` does);
 * `label` begins each error: who was given the folder.
 */
export function readMigrationDirectory(directory: string, options: MigrationDirectoryOptions, label: string): InboxMigrationSet {
  const folder = resolve(directory);
  const fail = (problem: string, fix: string) => new Error(`${label}: ${problem} Fix: ${fix}`);
  let entries: string[];
  try {
    entries = readdirSync(folder).filter((entry) => entry.toLowerCase().endsWith('.sql') && statSync(join(folder, entry)).isFile());
  } catch (error) {
    throw fail(`cannot read ${folder} (${(error as Error).message}).`, 'pass the folder that holds the migration files.');
  }
  const misnamed = entries.filter((entry) => !MIGRATION_FILE.test(entry));
  if (misnamed.length > 0) {
    throw fail(`${misnamed.join(', ')} ${misnamed.length === 1 ? 'is' : 'are'} not named <version>_<name>.sql.`, 'rename it, e.g. 001_create_credits.sql.');
  }
  if (entries.length === 0) throw fail(`${folder} holds no .sql file.`, 'add e.g. 001_create_credits.sql.');
  const migrations = entries
    .map((entry) => {
      const [, version, name] = MIGRATION_FILE.exec(entry)!;
      // Line endings as git checks the file out on Windows must not count as a change of the migration.
      const sql = readFileSync(join(folder, entry), 'utf8').replace(/\r\n/g, '\n');
      const statements = scanSql(sql).statements.map((statement) => statement.text);
      if (statements.length === 0) throw fail(`${entry} holds no SQL statement.`, 'write the migration in it, or remove the file.');
      return { version: Number(version), name: name!, statements, file: entry };
    })
    .sort((a, b) => a.version - b.version);
  const twice = migrations.find((migration, index) => index > 0 && migrations[index - 1]!.version === migration.version);
  if (twice !== undefined) {
    const first = migrations.find((migration) => migration.version === twice.version)!;
    throw fail(`${first.file} and ${twice.file} both have version ${twice.version}.`, 'give each file its own version.');
  }
  return { name: options.name ?? basename(folder), migrations: migrations.map(({ version, name, statements }) => ({ version, name, statements })) };
}

/**
 * What is wrong with one set of your own, each problem begun with `label` (which names the set and who was
 * given it). `unresolved` tells a CDK token, whose SQL is not known until deploy.
 */
export function setProblems(set: InboxMigrationSet, label: string, unresolved: (sql: string) => boolean = () => false): InvariantViolation[] {
  const problems: InvariantViolation[] = [];
  if (typeof set?.name !== 'string' || !MIGRATION_SET_NAME_PATTERN.test(set.name)) {
    problems.push({
      problem: `${label} has a name that is not ${MIGRATION_SET_NAME_RULE}.`,
      fix: "name it e.g. 'credits'.",
    });
  } else if (BUILT_IN_MIGRATION_SETS.includes(set.name)) {
    problems.push({ problem: `${label} has the name of a built-in set, whose versions it would be recorded under.`, fix: 'give it a name of its own.' });
  }
  if (!Array.isArray(set?.migrations) || set.migrations.length === 0) {
    problems.push({ problem: `${label} has no migrations.`, fix: 'add `migrations: [{ version: 1, name, statements: [...] }]`, or remove the set.' });
    return problems;
  }
  let previous = 0;
  for (const migration of set.migrations) {
    const version = migration?.version;
    if (!Number.isInteger(version) || version <= previous) {
      problems.push({
        problem: `${label} has version ${version} ("${migration?.name}") after version ${previous}: versions must be positive integers in increasing order.`,
        fix: `give it a version above ${previous}, after the versions already deployed.`,
      });
    } else {
      previous = version;
    }
    const statements = migration?.statements;
    if (!Array.isArray(statements) || statements.length === 0 || !statements.every((statement) => typeof statement === 'string' && statement.trim() !== '')) {
      problems.push({
        problem: `${label}, version ${version}: \`statements\` must be a non-empty list of SQL strings.`,
        fix: "write one statement per string, e.g. ['CREATE TABLE public.credits (id bigserial PRIMARY KEY)'].",
      });
      continue;
    }
    const outside = statements.find((statement) => !unresolved(statement) && cannotRunInATransaction(statement));
    if (outside !== undefined) {
      problems.push({
        problem: `${label}, version ${version}: '${outside.slice(0, 60)}' cannot run inside the transaction each migration runs in.`,
        fix: 'remove transaction control (each migration commits with its version row, or not at all); build an index without CONCURRENTLY.',
      });
    }
  }
  return problems;
}

/**
 * A statement that ends the migration's transaction (transaction control, read as the runtime reads it:
 * a `BEGIN ATOMIC` function body is none), or that PostgreSQL refuses inside one.
 */
function cannotRunInATransaction(sql: string): boolean {
  return transactionControlIn(sql) !== undefined || scanSql(sql).statements.some(({ parts }) => NOT_IN_A_TRANSACTION.test(phrase(parts[0]!.words)));
}

const phrase = (words: readonly LeadingWord[]) => words.map(({ word }) => word).join(' ');
const NOT_IN_A_TRANSACTION = /^(vacuum|create (unique )?index concurrently|(drop|reindex) index concurrently)\b/;
