import { Token } from 'aws-cdk-lib';

/**
 * A privilege a consumer's own database role needs for its effect, besides claiming rows in the inbox.
 *
 * @example
 * { table: 'public.orders', privileges: ['SELECT', 'INSERT', 'UPDATE'] }
 */
export interface InboxTableGrant {
  /**
   * `schema.name` of a table, view or sequence, in lower case. It must exist when the role is provisioned
   * (after the InboxDatabase migrations): create it in a migration set or in a custom resource the
   * consumer's `databaseRole` depends on.
   */
  readonly table: string;
  /**
   * For a table or view: SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER.
   * For a sequence: USAGE, SELECT, UPDATE. `INSERT ... ON CONFLICT DO UPDATE` needs INSERT, UPDATE and SELECT.
   * INSERT on a table also grants USAGE on the sequences its column defaults draw from (its serial and bigserial
   * columns), found at deploy, which the INSERT needs; identity columns need none.
   */
  readonly privileges: readonly ('SELECT' | 'INSERT' | 'UPDATE' | 'DELETE' | 'TRUNCATE' | 'REFERENCES' | 'TRIGGER' | 'USAGE')[];
  /**
   * The table is made where synth cannot read it (a custom resource the role depends on, a DO block, a
   * search_path other than public, a RENAME, a serial column's own sequence), not by a plain CREATE of one of the
   * database's migration sets: skip the synth check that refuses a grant on a table no migration set creates.
   * @default false: a grant names a table one of the database's migration sets creates (when it has any)
   */
  readonly createdElsewhere?: boolean | undefined;
}

/** A PostgreSQL privilege on a table, view or sequence (named for the package's own code; the grant spells them out). */
export type InboxTablePrivilege = InboxTableGrant['privileges'][number];

const PRIVILEGES: readonly string[] = ['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER', 'USAGE'];
const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;

/** The names PostgreSQL or Aurora reserve, and lengths it would truncate. */
export function roleNameProblem(name: string): string | undefined {
  if (Token.isUnresolved(name)) return undefined;
  if (!IDENTIFIER.test(name) || name.length > 63) {
    return `'${name}' is not a role name sqs-inbox accepts: lower-case letters, digits and '_', starting with a letter or '_', at most 63 characters`;
  }
  if (/^(pg_|rds)/.test(name)) return `'${name}' starts with 'pg_' or 'rds', which PostgreSQL and Aurora reserve for their own roles`;
  return undefined;
}

/** The role a consumer gets unless `databaseRole` says otherwise: `inbox_consumer_` + its name in lower case. */
export function defaultConsumerRole(consumerName: string): string {
  const slug = consumerName
    .toLowerCase()
    .replace(/[^a-z0-9_]+/g, '_')
    .replace(/^_+|_+$/g, '');
  return `inbox_consumer_${slug.slice(0, 48) || 'consumer'}`;
}

/** Every problem with a list of grants, each naming the entry and the fix. */
export function grantProblems(grants: readonly InboxTableGrant[]): string[] {
  const problems: string[] = [];
  grants.forEach((grant, index) => {
    const where = `\`databaseGrants[${index}]\``;
    const table = grant?.table;
    if (typeof table !== 'string' || Token.isUnresolved(table)) {
      if (typeof table !== 'string') problems.push(`${where}.table must be a string such as 'public.orders'.`);
    } else {
      const parts = table.split('.');
      if (parts.length !== 2 || !parts.every((part) => IDENTIFIER.test(part) && part.length <= 63)) {
        problems.push(`${where}.table '${table}' must be 'schema.name' in lower case, e.g. 'public.orders'.`);
      } else if (parts[0] === 'pg_catalog' || parts[0] === 'information_schema') {
        problems.push(`${where}.table '${table}' is in a system schema; grant your own tables only.`);
      }
    }
    const privileges: readonly unknown[] = Array.isArray(grant?.privileges) ? grant.privileges : [];
    if (privileges.length === 0) problems.push(`${where}.privileges must list at least one privilege, e.g. ['SELECT', 'INSERT'].`);
    for (const privilege of privileges) {
      if (typeof privilege !== 'string' || !PRIVILEGES.includes(privilege)) {
        problems.push(`${where}.privileges has ${JSON.stringify(privilege)}; use ${PRIVILEGES.join(', ')}.`);
      }
    }
  });
  return problems;
}

/** The grants as the role custom resource takes them (`on` is the runtime's name for `table`). */
export function grantsProperty(grants: readonly InboxTableGrant[]): string {
  return JSON.stringify(grants.map((grant) => ({ on: grant.table, privileges: [...grant.privileges] })));
}
