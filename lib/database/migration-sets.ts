import { Token } from 'aws-cdk-lib';
import type { InboxMigration, InboxMigrationSet } from '../../lambda/inbox/contract.js';
import type { InvariantViolation } from '../invariants.js';
import { BUILT_IN_MIGRATION_SETS, readMigrationDirectory, setProblems } from './migration-directory.js';

export { BUILT_IN_MIGRATION_SETS };
export type { InboxMigration, InboxMigrationSet };

/**
 * The most SQL (UTF-8 bytes of the sets as JSON) InboxDatabase carries to the deploy. The sets travel in the
 * migration custom resource's properties, and CloudFormation sends an update's old properties with the new
 * ones, in one asynchronous Lambda invocation: 2 x 100 KiB stays inside its 256 KB limit.
 */
export const MAX_MIGRATION_SET_BYTES = 100 * 1024;

/** Options of {@link MigrationSet.fromDirectory}. */
export interface MigrationDirectoryOptions {
  /**
   * The set's name.
   * @default - the directory's name
   */
  readonly name?: string | undefined;
}

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
    return readMigrationDirectory(directory, options, `MigrationSet.fromDirectory('${directory}')`);
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
      problems.push(...setProblems(entry, `${owner} \`migrations\`: the set '${entry?.name}'`, Token.isUnresolved));
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
