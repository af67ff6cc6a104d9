import { InboxConfigError } from '../../inbox/index.js';
import type { Migration, InboxMigrationSet } from '../../inbox/sql/schema.js';

/**
 * Reads the app's own migration sets from the `Sets` property of `Custom::InboxMigration`, where
 * InboxDatabase put them at synth: `[{ name, migrations: [{ version, name, statements }] }]`.
 * CloudFormation hands every scalar of a custom resource's properties over as a string, so a version
 * arrives as `"1"`; anything else that is not the shape InboxDatabase writes is refused, naming the entry.
 */
export function deployedMigrationSets(property: unknown): InboxMigrationSet<Migration>[] {
  if (property === undefined) return [];
  if (!Array.isArray(property)) throw refused('Sets', 'must be a list of migration sets', property);
  return property.map((set: unknown, index) => {
    const at = `Sets.${index}`;
    if (!isRecord(set) || typeof set.name !== 'string' || set.name === '' || !Array.isArray(set.migrations)) {
      throw refused(at, 'must be { name, migrations: [...] }', set);
    }
    return { name: set.name, migrations: set.migrations.map((migration: unknown, i) => deployedMigration(`${at}.migrations.${i}`, migration)) };
  });
}

function deployedMigration(at: string, migration: unknown): Migration {
  if (!isRecord(migration)) throw refused(at, 'must be { version, name, statements }', migration);
  const version = typeof migration.version === 'string' && /^\d+$/.test(migration.version) ? Number(migration.version) : migration.version;
  if (typeof version !== 'number' || !Number.isInteger(version) || version < 1) throw refused(`${at}.version`, 'must be a positive integer', migration.version);
  if (typeof migration.name !== 'string') throw refused(`${at}.name`, 'must be a string', migration.name);
  const statements = migration.statements;
  if (!Array.isArray(statements) || !statements.every((statement) => typeof statement === 'string')) {
    throw refused(`${at}.statements`, 'must be a list of SQL strings', statements);
  }
  return { version, name: migration.name, statements };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function refused(at: string, rule: string, value: unknown): InboxConfigError {
  return new InboxConfigError(
    at,
    `${rule}, got ${JSON.stringify(value)?.slice(0, 200)}. Fix: pass the migration sets to InboxDatabase (or InboxDsqlDatabase) \`migrations\` ` +
      'rather than writing the custom resource by hand.',
  );
}

/**
 * Resolves `inbox,credits` to migration sets, in that order: one of `builtIns` by its name (the
 * function's own: the migration function's Aurora sets, the DSQL schema function's DSQL sets), or one of the app's
 * own `sets` (carried in the `Sets` property). Names any unknown one.
 */
export function resolveMigrationSets(
  names: string,
  sets: readonly InboxMigrationSet<Migration>[],
  builtIns: Readonly<Record<string, InboxMigrationSet<Migration>>>,
): InboxMigrationSet<Migration>[] {
  const own = new Map(sets.map((set) => [set.name, set]));
  const listed = names
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean);
  const twice = sets.find((set, index) => sets.findIndex((other) => other.name === set.name) !== index);
  if (twice) throw new InboxConfigError('Sets', `defines "${twice.name}" twice; give each set its own name`);
  const taken = [...own.keys()].filter((name) => Object.hasOwn(builtIns, name));
  if (taken.length > 0) throw new InboxConfigError('Sets', `defines "${taken[0]}", the name of a built-in set; give the app's set another name`);
  const unlisted = [...own.keys()].filter((name) => !listed.includes(name));
  if (unlisted.length > 0) {
    throw new InboxConfigError('Sets', `defines ${unlisted.map((name) => `"${name}"`).join(', ')}, which \`Migrations\` does not list`);
  }
  return listed.map((name) => {
    const set = Object.hasOwn(builtIns, name) ? builtIns[name] : own.get(name);
    if (!set) {
      throw new InboxConfigError('Migrations', `unknown migration set "${name}"; known sets: ${[...Object.keys(builtIns), ...own.keys()].join(', ')}`);
    }
    return set;
  });
}
