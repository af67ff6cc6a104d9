import type { InboxTableGrant } from '../database/database-grants.js';
import type { InboxRolePurpose } from '../database/inbox-database-role.js';
import { OUTBOX_ORDER_FUNCTION } from '../../lambda/inbox/contract.js';
import type { DsqlStatement } from '../../lambda/inbox/contract.js';

/** What one database role on Aurora DSQL needs: the statements the DSQL migration function runs, in order. */
export interface DsqlRoleSpec {
  /** The PostgreSQL role: lower-case letters, digits and `_`. */
  readonly role: string;
  /** The IAM role that may sign in as it (`dsql:DbConnect` with a token for this role). */
  readonly iamRoleArn: string;
  /** What the role is for; decides its privileges on the inbox tables. */
  readonly purpose: InboxRolePurpose;
  /** A consumer's privileges on your own tables. */
  readonly grants: readonly InboxTableGrant[];
  /** The inbox schema. */
  readonly schema: string;
}

const quote = (identifier: string) => `"${identifier}"`;
const table = (schema: string, name: string) => `${quote(schema)}.${quote(name)}`;

/**
 * The role mapping on Aurora DSQL, as data: `CREATE ROLE ... WITH LOGIN`, `AWS IAM GRANT <role> TO '<iam role
 * arn>'` (which lets that IAM role sign in as it with `dsql:DbConnect`, never as admin), then the purpose's
 * privileges on the inbox tables and the user's grants. DSQL runs one DDL or DCL statement per transaction, so
 * the migration function sends each in its own; table privileges are whole-table (no column lists), and there is no
 * row-level security: a consumer's role reaches every row of its schema, so consumers that must not reach each other's
 * rows get a schema each. A consumer also gets EXECUTE on the relay's FIFO check, as on Aurora (DSQL migration 10 took
 * it from PUBLIC).
 *
 * @example
 * dsqlRoleStatements({ role: 'inbox_consumer_orders', iamRoleArn, purpose: 'consumer', grants: [], schema: 'inbox' })
 */
export function dsqlRoleStatements(spec: DsqlRoleSpec): DsqlStatement[] {
  const role = quote(spec.role);
  const consumed = table(spec.schema, 'consumed_message');
  const parked = table(spec.schema, 'parked_message');
  const outbox = table(spec.schema, 'outbox_message');
  const grant = (privileges: string, on: string): DsqlStatement => ({ sql: `GRANT ${privileges} ON ${on} TO ${role}` });
  const inbox: DsqlStatement[] =
    spec.purpose === 'purge'
      ? [grant('SELECT, DELETE', consumed)]
      : spec.purpose === 'outbox'
        ? [grant('SELECT, UPDATE, DELETE', outbox)]
        : [
            grant('SELECT, INSERT', consumed),
            grant('SELECT, INSERT, UPDATE', parked),
            grant('SELECT, INSERT, UPDATE', outbox),
            grant('EXECUTE', `FUNCTION ${table(spec.schema, OUTBOX_ORDER_FUNCTION.name)}(${OUTBOX_ORDER_FUNCTION.args})`),
          ];
  const own = spec.grants.flatMap((entry) => {
    const [schema, name] = entry.table.split('.') as [string, string];
    return [{ sql: `GRANT USAGE ON SCHEMA ${quote(schema)} TO ${role}` }, grant([...entry.privileges].join(', '), table(schema, name))];
  });
  return [
    { sql: `CREATE ROLE ${role} WITH LOGIN`, ignoreDuplicate: true },
    // The ARN is a CloudFormation token until deploy; the function checks it is an IAM role ARN before it runs.
    { sql: `AWS IAM GRANT ${role} TO '${spec.iamRoleArn}'`, ignoreDuplicate: true },
    { sql: `GRANT USAGE ON SCHEMA ${quote(spec.schema)} TO ${role}` },
    ...inbox,
    ...own,
  ];
}
