import type { CloudFormationCustomResourceEvent } from 'aws-lambda';
import type { DsqlStatement } from '../../inbox/contract.js';
import { DatabaseCallError } from '../../inbox/errors.js';
import type { InboxMigrationSet, Migration } from '../../inbox/sql/schema.js';
import { retryConflicts } from '../../inbox/transport/conflicts.js';
import type { InboxSession } from '../../inbox/transport/session.js';
import { inboxTables } from '../../inbox/sql/schema.js';
import { dsql } from '../../inbox/transport/dsql/index.js';
import { DSQL_INBOX_MIGRATIONS } from '../../inbox/transport/dsql/migrations.js';
import { migrateDsqlSession } from '../../inbox/transport/dsql/migrations.js';
import type { DsqlTarget } from '../../inbox/transport/dsql/index.js';
import { deployedMigrationSets, resolveMigrationSets } from '../migration/deployed-migrations.js';
import { driverOf } from '../../inbox/transport/transport.js';

/** The custom resource that applies the DSQL schema: the inbox's tables in their DSQL form, then the app's own sets. */
export const DSQL_SCHEMA_RESOURCE_TYPE = 'Custom::InboxDsqlSchema';
/** The custom resource that maps one function's database role to its IAM role. */
export const DSQL_ROLE_RESOURCE_TYPE = 'Custom::InboxDsqlRole';

/** The migration sets a `Custom::InboxDsqlSchema` can name in `Migrations`, in their DSQL form. */
export const DSQL_MIGRATION_SETS: Readonly<Record<string, InboxMigrationSet<Migration>>> = {
  [DSQL_INBOX_MIGRATIONS.name]: DSQL_INBOX_MIGRATIONS,
};

/** Where the function signs in: the properties both resources carry. */
export interface DsqlClusterProperties {
  /** `<clusterId>.dsql.<region>.on.aws`. */
  readonly Endpoint: string;
  readonly Region: string;
}

/** The properties of `Custom::InboxDsqlSchema`. */
export interface DsqlSchemaProperties extends DsqlClusterProperties {
  /** The inbox schema. */
  readonly Schema: string;
  /** `inbox,credits`: the sets to apply, in order. */
  readonly Migrations: string;
  /** The app's own sets, with their statements (see `deployedMigrationSets`). */
  readonly Sets?: unknown;
}

/** The properties of `Custom::InboxDsqlRole`. */
export interface DsqlRoleProperties extends DsqlClusterProperties {
  readonly Role: string;
  readonly IamRoleArn: string;
  /** JSON of {@link DsqlStatement}[]. */
  readonly Statements: string;
  /**
   * The consumer a consumer's role is mapped for, recorded in the inbox schema's `role_scope`: a role recorded there
   * for another consumer is refused (two consumer names that map to one role name would share it). None for the
   * purge's and the sweeper's roles.
   */
  readonly Consumer?: string;
  /** The inbox schema, whose `role_scope` records the consumer. @default 'inbox' */
  readonly Schema?: string;
}

/** A role cannot be mapped as asked; the message names the role, the cause and the fix. */
export class DsqlRoleError extends Error {
  override readonly name = 'DsqlRoleError';
}

const IAM_ROLE_ARN = /^arn:aws[a-z-]*:iam::\d{12}:role\/[\w+=,.@/-]+$/;

/** One deploy's calls may each take this long: DDL on DSQL commits in seconds, and a deploy has minutes. */
const CALL_TIMEOUT_MS = 60_000;

/**
 * Runs the statements one at a time, each in its own transaction (autocommit): Aurora DSQL takes one DDL or
 * DCL statement per transaction. Stops at the first failure, naming the statement; "already exists" counts as
 * done where the statement allows it, so a rerun (an Update) is harmless. A catalog conflict (OC001, with a
 * concurrent deploy's DDL) is run again.
 */
export async function applyDsqlStatements(session: InboxSession, statements: readonly DsqlStatement[]): Promise<{ ran: number; alreadyDone: number }> {
  let ran = 0;
  let alreadyDone = 0;
  for (const [index, statement] of statements.entries()) {
    try {
      await retryConflicts(session, () => session.execute(statement.sql));
      ran++;
    } catch (error) {
      if (statement.ignoreDuplicate === true && error instanceof DatabaseCallError && error.sqlState === '42710') {
        alreadyDone++;
        continue;
      }
      throw new Error(`role mapping statement ${index + 1} of ${statements.length} failed: ${statement.sql}: ${(error as Error).message}`, { cause: error });
    }
  }
  return { ran, alreadyDone };
}

/**
 * The handler of both custom resources (Provider framework onEvent), with the way it signs in as `admin` passed
 * in. `Custom::InboxDsqlSchema` applies the migrations with `migrateDsql` (one DDL per transaction; a changed
 * migration fails the deploy, naming its version); `Custom::InboxDsqlRole` maps a role, after the schema (the role
 * resources depend on the schema's). On Delete both keep what they made: the tables hold data, and a role may own
 * some, and removing a consumer must not break a redeploy of it.
 */
export function dsqlSchemaHandler(connect: (properties: DsqlClusterProperties) => DsqlTarget) {
  return async (event: CloudFormationCustomResourceEvent) => {
    if (event.RequestType === 'Delete') return { PhysicalResourceId: event.PhysicalResourceId };
    const properties = event.ResourceProperties as unknown as DsqlSchemaProperties & DsqlRoleProperties;
    const isRole = event.ResourceType === DSQL_ROLE_RESOURCE_TYPE;
    // Checked before signing in: nothing runs for a resource that cannot succeed.
    if (isRole && !IAM_ROLE_ARN.test(properties.IamRoleArn)) {
      throw new Error(`IamRoleArn "${properties.IamRoleArn}" is not an IAM role ARN; the role mapping grants a role to an IAM role only.`);
    }
    const sets = isRole ? [] : resolveMigrationSets(properties.Migrations ?? 'inbox', deployedMigrationSets(properties.Sets), DSQL_MIGRATION_SETS);
    const target = connect(properties);
    const session = driverOf(target).open({ callTimeoutMs: CALL_TIMEOUT_MS, resumeDelaysMs: [] });
    try {
      if (isRole) {
        const old = event.RequestType === 'Update' ? (event.OldResourceProperties as unknown as Partial<DsqlRoleProperties>) : undefined;
        // The same resource keeping its role on the same cluster may rename the consumer it serves.
        const previous = old?.Role === properties.Role && old.Endpoint === properties.Endpoint ? old.Consumer : undefined;
        if (properties.Consumer) await refuseOtherConsumer(session, properties, previous);
        const report = await applyDsqlStatements(session, JSON.parse(properties.Statements) as DsqlStatement[]);
        if (properties.Consumer) await recordConsumer(session, properties);
        console.log(JSON.stringify({ message: 'dsql role mapped', role: properties.Role, iamRoleArn: properties.IamRoleArn, ...report }));
        return {
          PhysicalResourceId: `sqs-inbox-dsql-role:${properties.Endpoint}:${properties.Role}`,
          Data: { Ran: report.ran, AlreadyDone: report.alreadyDone },
        };
      }
      const report = await migrateDsqlSession(session, sets, properties.Schema ?? 'inbox');
      console.log(JSON.stringify({ message: 'dsql migrations applied', applied: report.applied, versions: report.versions }));
      return {
        PhysicalResourceId: `sqs-inbox-dsql-schema:${properties.Endpoint}:${properties.Schema ?? 'inbox'}`,
        Data: { Versions: JSON.stringify(report.versions), Applied: report.applied.length },
      };
    } finally {
      await target.pool.end().catch(() => {});
    }
  };
}

/** `role_scope` of the resource's schema, whose rows say which consumer each consumer's role was mapped for. */
function scopeTable(properties: DsqlRoleProperties): string {
  return `${inboxTables(properties.Schema ?? 'inbox').schema}."role_scope"`;
}

/**
 * Refuses a role mapped before for another consumer: its function would sign in as this consumer's role, and this one's
 * as that consumer's, with both consumers' grants (DSQL's mapping only adds). Checked before any statement runs.
 */
async function refuseOtherConsumer(session: InboxSession, properties: DsqlRoleProperties, previous: string | undefined): Promise<void> {
  const { rows } = await session.execute(`SELECT consumer_name FROM ${scopeTable(properties)} WHERE role_name = :role`, { role: properties.Role });
  const others = rows.map((row) => String(row.consumer_name)).filter((consumer) => consumer !== properties.Consumer && consumer !== previous);
  if (others.length > 0) {
    throw new DsqlRoleError(
      `role "${properties.Role}" is mapped for consumer "${others.join('", "')}" on this cluster, not for "${properties.Consumer}": mapping it here ` +
        "would let each consumer's function sign in as the other's role. Two consumer names that map to one role name (such as 'order-worker' " +
        "and 'order_worker') do this. Fix: give this consumer a `databaseRole` of its own; if that consumer is gone, delete its row " +
        `(DELETE FROM ${scopeTable(properties)} WHERE role_name = '${properties.Role}') and revoke its IAM role (AWS IAM REVOKE).`,
    );
  }
}

/** Records the consumer the role is now mapped for, in one transaction (DML only: DSQL keeps DDL apart). */
async function recordConsumer(session: InboxSession, properties: DsqlRoleProperties): Promise<void> {
  await retryConflicts(session, async () => {
    const tx = await session.transaction();
    try {
      await tx.execute(`DELETE FROM ${scopeTable(properties)} WHERE role_name = :role`, { role: properties.Role });
      await tx.execute(`INSERT INTO ${scopeTable(properties)} (role_name, consumer_name) VALUES (:role, :consumer)`, {
        role: properties.Role,
        consumer: properties.Consumer!,
      });
      await tx.commit();
    } catch (error) {
      await tx.rollback().catch(() => {});
      throw error;
    }
  });
}

/**
 * Signs in as DSQL's `admin` (a fresh `DbConnectAdmin` token per connection) over TLS: DSQL's certificates chain to
 * Amazon's public roots. One connection: the statements run one after another.
 */
const connectAsAdmin = (properties: DsqlClusterProperties): DsqlTarget =>
  dsql({ endpoint: properties.Endpoint, region: properties.Region, user: 'admin', maxConnections: 1 });

/** The Lambda entry point of the DSQL schema function: the only function with `dsql:DbConnectAdmin`. */
export const handler = dsqlSchemaHandler(connectAsAdmin);
