import type { CloudFormationCustomResourceEvent } from 'aws-lambda';
import { InboxConfigError } from '../../inbox/index.js';
import { DataApiSession } from '../../inbox/transport/data-api/session.js';
import { resolveTarget } from '../../inbox/transport/data-api/transport.js';
import { DatabaseRoleError, dropRole, provisionRole } from './database-roles.js';
import type { RoleGrant, RolePurpose } from './database-roles.js';
import type { ReadSecret } from './secret-values.js';

/** The custom resource type InboxDatabase gives every role it provisions. */
export const ROLE_RESOURCE_TYPE = 'Custom::InboxDatabaseRole';

/** The properties of a `Custom::InboxDatabaseRole`. */
export interface RoleResourceProperties {
  /** The cluster. */
  readonly ResourceArn: string;
  /** The migration user's secret: the schema's owner, which creates the role. */
  readonly SecretArn: string;
  readonly Database?: string;
  readonly Schema?: string;
  /** The role's name. */
  readonly Role: string;
  /** The role's own secret, whose password the role is created with. */
  readonly RoleSecretArn: string;
  readonly Purpose: RolePurpose;
  /** What the role serves, e.g. `consumer order-worker`. */
  readonly Label?: string;
  /** JSON of {@link RoleGrant}[]: the consumer's own grants. */
  readonly Grants?: string;
  /**
   * `revoke`: the database is the inbox's own, so PUBLIC's CONNECT and TEMPORARY on it (and CREATE on its `public`
   * schema) are revoked and each role gets its own CONNECT; `keep`: PUBLIC's privileges are left as they are.
   * @default 'keep'
   */
  readonly PublicDefaults?: 'revoke' | 'keep';
  /** The consumer name a consumer role acts for: its claims and parked messages are scoped to it. */
  readonly Consumer?: string;
  /** The role's statement_timeout in milliseconds (CloudFormation passes it as a string); none when absent. */
  readonly StatementTimeoutMs?: string;
}

/** What the role custom resource needs besides the event. */
export interface RoleResourceDependencies {
  /** Reads the role's secret (the Lambda runtime's Secrets Manager client in AWS). */
  readonly readSecret: ReadSecret;
  /** Where the structured log lines go. @default console.log */
  readonly log?: ((line: string) => void) | undefined;
  /** The environment (INBOX_DATA_API_ENDPOINT for the local Data API). @default process.env */
  readonly env?: NodeJS.ProcessEnv | undefined;
  /** Data API retries while Aurora resumes from auto-pause. */
  readonly resumeDelaysMs?: readonly number[] | undefined;
}

/**
 * The Provider-framework onEvent handler of `Custom::InboxDatabaseRole`: provisions a consumer's or the
 * purge's own login role through the Data API as the migration user. Create sets the role's password from
 * its secret; Update sets it again only when the role or its secret changed (after that, rotation owns it)
 * and always brings the privileges to what the properties say; Delete revokes and drops the role, and only
 * logs a failure, so a database that is already gone never blocks deleting the stack. The role's comment records
 * its `Label`: a Create (or an Update that changes `Role`) refuses a role created for another label, which is
 * another deploy's, and a Delete leaves it.
 *
 * Logs names and privileges, never the password or its verifier.
 */
export function roleResourceHandler(dependencies: RoleResourceDependencies) {
  const log = dependencies.log ?? ((line: string) => console.log(line));
  return async (event: CloudFormationCustomResourceEvent) => {
    const properties = event.ResourceProperties as unknown as RoleResourceProperties;
    const physicalResourceId = `sqs-inbox-role:${properties.Database ?? 'default'}:${properties.Role}`;
    const target = resolveTarget(
      { resourceArn: properties.ResourceArn, secretArn: properties.SecretArn, ...(properties.Database ? { database: properties.Database } : {}) },
      dependencies.env ?? process.env,
      'ResourceProperties',
    );
    const session = new DataApiSession(target, {
      callTimeoutMs: 60_000,
      resumeDelaysMs: dependencies.resumeDelaysMs ?? [1000, 2000, 4000, 8000, 10_000, 10_000, 10_000],
    });
    const label = properties.Label ?? properties.Purpose;
    if (event.RequestType === 'Delete') {
      try {
        const { dropped, createdFor } = await dropRole(session, properties.Role, { ...(properties.Schema ? { schema: properties.Schema } : {}), label });
        log(
          JSON.stringify(
            createdFor === undefined
              ? { message: 'database role dropped', role: properties.Role, dropped }
              : { message: 'database role left: it was created for another deploy', role: properties.Role, dropped, createdFor, label },
          ),
        );
      } catch (error) {
        log(JSON.stringify({ message: 'database role not dropped; drop it by hand if it is unused', role: properties.Role, error: (error as Error).message }));
      }
      return { PhysicalResourceId: event.PhysicalResourceId };
    }
    const old = event.RequestType === 'Update' ? (event.OldResourceProperties as unknown as Partial<RoleResourceProperties>) : undefined;
    // The same resource, keeping its role on the same cluster and database: what it served before may be renamed.
    const same = old !== undefined && old.Role === properties.Role && old.ResourceArn === properties.ResourceArn && old.Database === properties.Database;
    const report = await provisionRole(
      session,
      {
        role: properties.Role,
        purpose: properties.Purpose,
        label,
        grants: parseGrants(properties.Grants),
        ...(properties.Consumer ? { consumer: properties.Consumer } : {}),
        statementTimeoutMs: parseMilliseconds(properties.StatementTimeoutMs),
      },
      {
        ...(properties.Schema ? { schema: properties.Schema } : {}),
        resetPassword: old === undefined || old.Role !== properties.Role || old.RoleSecretArn !== properties.RoleSecretArn,
        ...(same ? { previousLabel: old.Label ?? old.Purpose } : {}),
        revokePublic: properties.PublicDefaults === 'revoke',
        password: async () => {
          const credentials = await dependencies.readSecret(properties.RoleSecretArn);
          if (credentials.username !== properties.Role) {
            throw new DatabaseRoleError(
              `secret ${properties.RoleSecretArn} signs in as "${credentials.username}", not as role "${properties.Role}": ` +
                'the Data API would sign in as another user. Fix: use a secret whose username is the role.',
            );
          }
          return credentials.password;
        },
      },
    );
    log(JSON.stringify({ message: 'database role provisioned', purpose: properties.Purpose, ...report }));
    return { PhysicalResourceId: physicalResourceId, Data: undefined };
  };
}

function parseGrants(text: string | undefined): RoleGrant[] {
  if (text === undefined || text === '') return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new InboxConfigError('Grants', 'must be a JSON array of { on, privileges }');
  }
  if (!Array.isArray(parsed)) throw new InboxConfigError('Grants', 'must be a JSON array of { on, privileges }');
  return parsed as RoleGrant[];
}

function parseMilliseconds(text: string | number | undefined): number | undefined {
  if (text === undefined || text === '') return undefined;
  const ms = Number(text);
  if (!Number.isSafeInteger(ms) || ms < 1)
    throw new InboxConfigError('StatementTimeoutMs', `must be a whole number of milliseconds >= 1, e.g. "8000"; got ${JSON.stringify(text)}`);
  return ms;
}
