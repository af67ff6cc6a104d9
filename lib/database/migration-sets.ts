import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { Token } from 'aws-cdk-lib';
import type { InvariantViolation } from '../invariants.js';
import { scanSql, transactionControlIn } from '../../lambda/inbox/transport/sql-scanner.js';
import type { LeadingWord } from '../../lambda/inbox/transport/sql-scanner.js';

/**
 * The migration sets the bundled migration handler holds (lambda/functions/migration/migrate.ts), which
 * InboxDatabase `migrations` may name: the inbox's own, always applied first.
 */
export const BUILT_IN_MIGRATION_SETS: readonly string[] = ['inbox'];

/**
 * The most SQL (UTF-8 bytes of the sets as JSON) InboxDatabase carries to the deploy. The sets travel in the
 * migration custom resource's properties, and CloudFormation sends an update's old properties with the new
 * ones, in one asynchronous Lambda invocation: 2 x 100 KiB stays inside its 256 KB limit.
 */
export const MAX_MIGRATION_SET_BYTES = 100 * 1024;

/**
 * One numbered migration of your own, as the SQL that runs at deploy. The same value is a `Migration` of
 * the runtime's `migrate()` (package `sqs-inbox`), so one definition serves the stack and your tests.
 *
 * @example
 * { version: 1, name: 'create_credits', statements: ['CREATE TABLE public.credits (id bigserial PRIMARY KEY, account_id text NOT NULL, cents bigint NOT NULL)'] }
 */
export interface InboxMigration {
  /** A positive integer, higher than the one before it in its set. Applied once, recorded with a checksum of its statements. */
  readonly version: number;
  /** A short name, recorded with the version. */
  readonly name: string;
  /**
   * One SQL statement per entry (the Data API runs one statement per call), in one transaction with the
   * version's row. Once applied, never changed: the deploy refuses a changed migration, naming its version.
   */
  readonly statements: readonly string[];
}

/**
 * Your own migration set: tables your consumers write, versioned apart from the inbox's under its `name`.
 *
 * @example
 * const credits: InboxMigrationSet = {
 *   name: 'credits',
 *   migrations: [{ version: 1, name: 'create_credits', statements: ['CREATE TABLE public.credits (id bigserial PRIMARY KEY, cents bigint NOT NULL)'] }],
 * };
 */
export interface InboxMigrationSet {
  /**
   * The name its versions are recorded under: lower-case letters, digits, `_` and `-`, not a built-in set's.
   * Never rename a set that has been deployed: under a new name every migration would run again.
   */
  readonly name: string;
  /** The migrations, in increasing version order. */
  readonly migrations: readonly InboxMigration[];
}

/** Options of {@link MigrationSet.fromDirectory}. */
export interface MigrationDirectoryOptions {
  /**
   * The set's name.
   * @default - the directory's name
   */
  readonly name?: string | undefined;
}

const SET_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const MIGRATION_FILE = /^(\d+)_(.+)\.sql$/;

/** Migration sets of your own, made from SQL files. */
export class MigrationSet {
  /**
   * Reads a migration set from a folder of SQL files named `<version>_<name>.sql` (`001_create_credits.sql`),
   * ordered by version. A file may hold several statements, each ended by `;`, split as psql splits a script:
   * a `;` in a string, a quoted identifier, a comment, a dollar-quoted body or a `BEGIN ATOMIC ... END`
   * function body ends no statement. Read at synth: the SQL
   * travels to the deploy in the template, and the same set serves `migrate()` in your tests.
   *
   * @param directory - the folder, relative to the current directory or absolute
   *
   * @example
   * new InboxDatabase(this, 'Db', { migrations: [MigrationSet.fromDirectory('migrations/credits')] });
   */
  public static fromDirectory(directory: string, options: MigrationDirectoryOptions = {}): InboxMigrationSet {
    const folder = resolve(directory);
    const fail = (problem: string, fix: string) => new Error(`MigrationSet.fromDirectory('${directory}'): ${problem} Fix: ${fix}`);
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

  private constructor() {}
}

/** The app's own sets among InboxDatabase `migrations`, as the `Sets` property carries them: nothing else of the values. */
export function ownMigrationSets(migrations: readonly (string | InboxMigrationSet)[]): InboxMigrationSet[] {
  return migrations
    .filter((entry): entry is InboxMigrationSet => typeof entry !== 'string')
    .map((set) => ({
      name: set?.name,
      migrations: Array.isArray(set?.migrations)
        ? set.migrations.map((migration) => ({ version: migration?.version, name: migration?.name, statements: migration?.statements }))
        : [],
    }));
}

/** Every problem of InboxDatabase `migrations`, found at synth, so the deploy never meets them. */
export function migrationProblems(migrations: readonly (string | InboxMigrationSet)[], owner = 'InboxDatabase'): InvariantViolation[] {
  const problems: InvariantViolation[] = [];
  const names = migrations.map((entry) => (typeof entry === 'string' ? entry : entry?.name));
  for (const entry of migrations) {
    if (typeof entry === 'string') {
      if (!BUILT_IN_MIGRATION_SETS.includes(entry) && !Token.isUnresolved(entry)) {
        problems.push({
          problem: `${owner} \`migrations\` names '${entry}', which is not a built-in migration set (those are: ${BUILT_IN_MIGRATION_SETS.join(', ')}).`,
          fix: "pass your own set as a value instead of its name: `{ name, migrations: [{ version, name, statements }] }` or MigrationSet.fromDirectory('migrations/...').",
        });
      }
    } else {
      problems.push(...setProblems(entry, owner));
    }
  }
  const twice = [...new Set(names.filter((name, index) => typeof name === 'string' && names.indexOf(name) !== index))];
  for (const name of twice) {
    if (name === 'inbox') continue; // listed or not, the inbox's set runs once, first
    problems.push({
      problem: `${owner} \`migrations\` lists the migration set '${name}' more than once.`,
      fix: 'list each set once; give two sets of your own distinct names.',
    });
  }
  const bytes = Buffer.byteLength(JSON.stringify(ownMigrationSets(migrations)), 'utf8');
  if (bytes > MAX_MIGRATION_SET_BYTES) {
    problems.push({
      problem:
        `${owner} \`migrations\` carries ${bytes} bytes of SQL to the deploy, more than ${MAX_MIGRATION_SET_BYTES} ` +
        "(a custom resource's update sends its old and new properties in one Lambda invocation of at most 256 KB).",
      fix: 'keep schema changes in the migrations and load data from your own code; a set may drop its oldest migrations once every database has applied them.',
    });
  }
  return problems;
}

function setProblems(set: InboxMigrationSet, owner: string): InvariantViolation[] {
  const problems: InvariantViolation[] = [];
  const label = `${owner} \`migrations\`: the set '${set?.name}'`;
  if (typeof set?.name !== 'string' || !SET_NAME.test(set.name)) {
    problems.push({
      problem: `${label} has a name that is not 1 to 63 lower-case letters, digits, '_' or '-', starting with a letter or digit.`,
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
    const outside = statements.find((statement) => !Token.isUnresolved(statement) && cannotRunInATransaction(statement));
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
