import type { CloudFormationCustomResourceEvent } from 'aws-lambda';
import { DataApiSession } from '../../inbox/transport/data-api/session.js';
import { INBOX_MIGRATIONS, applyMigrations } from '../../inbox/sql/schema.js';
import { resolveTarget } from '../../inbox/transport/data-api/transport.js';
import type { InboxMigrationSet, Migration } from '../../inbox/sql/schema.js';
import { deployedMigrationSets, resolveMigrationSets } from './deployed-migrations.js';
import { ROLE_RESOURCE_TYPE, roleResourceHandler } from '../database-roles/role-resource.js';
import { readSecretWithRuntimeSdk } from '../database-roles/secret-values.js';

/** The migration sets a deployment can name in its `Migrations` property: the inbox's own; an app passes its sets in `Sets`. */
export const MIGRATION_SETS: Readonly<Record<string, InboxMigrationSet<Migration>>> = {
  [INBOX_MIGRATIONS.name]: INBOX_MIGRATIONS,
};

/**
 * Resolves `inbox,credits` to migration sets, in that order: a built-in set by its name, or
 * one of the app's own `sets` (InboxDatabase carries them in the `Sets` property). Names any unknown one.
 */
export function migrationSets(names: string, sets: readonly InboxMigrationSet<Migration>[] = []): InboxMigrationSet<Migration>[] {
  return resolveMigrationSets(names, sets, MIGRATION_SETS);
}

// Aurora resuming from auto-pause takes about 15 s; a deploy should wait it out, not fail.
const RESUME_DELAYS_MS = [1000, 2000, 4000, 8000, 10_000, 10_000, 10_000, 10_000];

interface MigrateProperties {
  readonly ResourceArn: string;
  readonly SecretArn: string;
  readonly Database?: string;
  readonly Migrations?: string;
  /** The app's own migration sets, with their statements: see {@link deployedMigrationSets}. */
  readonly Sets?: unknown;
  readonly Schema?: string;
}

/**
 * CloudFormation custom resource (Provider framework onEvent): applies the schema migrations through the
 * Data API on Create and Update (the `Fingerprint` property changes with the built-in migrations, `Sets`
 * with the app's own), in the order `Migrations` lists them; keeps the data on Delete.
 */
export async function migrationHandler(event: CloudFormationCustomResourceEvent) {
  const properties = event.ResourceProperties as unknown as MigrateProperties;
  const physicalResourceId = `sqs-inbox-schema:${properties.Database ?? 'default'}:${properties.Schema ?? 'inbox'}`;
  if (event.RequestType === 'Delete') {
    return { PhysicalResourceId: event.PhysicalResourceId };
  }
  const target = resolveTarget(
    { resourceArn: properties.ResourceArn, secretArn: properties.SecretArn, ...(properties.Database ? { database: properties.Database } : {}) },
    process.env,
    'ResourceProperties',
  );
  const session = new DataApiSession(target, { callTimeoutMs: 60_000, resumeDelaysMs: RESUME_DELAYS_MS });
  const sets = migrationSets(properties.Migrations ?? 'inbox', deployedMigrationSets(properties.Sets));
  const report = await applyMigrations(session, sets, properties.Schema ?? 'inbox');
  console.log(JSON.stringify({ message: 'migrations applied', applied: report.applied, versions: report.versions }));
  return {
    PhysicalResourceId: physicalResourceId,
    Data: { Versions: JSON.stringify(report.versions), Applied: report.applied.length },
  };
}

const roles = roleResourceHandler({ readSecret: readSecretWithRuntimeSdk, resumeDelaysMs: RESUME_DELAYS_MS });

/**
 * The Lambda entry point of the migration function, the only one that signs in as the master user:
 * `Custom::InboxMigration` applies the schema, `Custom::InboxDatabaseRole` provisions a function's own role.
 */
export async function handler(event: CloudFormationCustomResourceEvent) {
  return event.ResourceType === ROLE_RESOURCE_TYPE ? roles(event) : migrationHandler(event);
}
