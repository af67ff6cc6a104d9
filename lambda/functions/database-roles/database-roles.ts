import type { InboxSession } from '../../inbox/transport/session.js';
import type { InboxTables } from '../../inbox/sql/schema.js';
import type { Transaction } from '../../inbox/transport/transaction.js';
import { inboxTables } from '../../inbox/sql/schema.js';
import { OUTBOX_ORDER_FUNCTION } from '../../inbox/contract.js';
import { scramSha256Verifier } from './scram.js';

/** What a role is for: it decides the role's privileges on the inbox tables. */
export type RolePurpose = 'consumer' | 'purge' | 'outbox';

/** A privilege the user grants a consumer's role for its own effect: `{ on: 'public.orders', privileges: ['SELECT'] }`. */
export interface RoleGrant {
  /** `schema.name` of a table, view or sequence that exists when the role is provisioned. */
  readonly on: string;
  /** Table: SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER. Sequence: USAGE, SELECT, UPDATE. */
  readonly privileges: readonly string[];
}

/** The role to provision. */
export interface RoleSpec {
  /** The PostgreSQL role name: `^[a-z_][a-z0-9_]*$`, at most 63 characters, not `pg_*` or `rds*`. */
  readonly role: string;
  readonly purpose: RolePurpose;
  /** What the role serves, recorded in its comment (`sqs-inbox: consumer order-worker`). */
  readonly label: string;
  /** The user's grants for the consumer's own effect; none for the purge. */
  readonly grants: readonly RoleGrant[];
  /**
   * The consumer name the role acts for (`INBOX_CONSUMER`): a consumer role then sees and writes only that
   * consumer's claims and parked messages, and writes outbox rows only under it (row-level security, inbox
   * migration 5). Unset, the role is not scoped.
   * @default - not scoped
   */
  readonly consumer?: string | undefined;
  /**
   * PostgreSQL's `statement_timeout` for every session of the role (`ALTER ROLE ... SET`), in milliseconds:
   * the only server-side bound the Data API leaves for an autocommit statement (the single-statement
   * modes), which it has no per-call setting for. Keep it below the consumer's `callTimeoutMs`, so a
   * statement held on the server is cancelled before the client gives up on it and cannot commit later.
   * Sessions opened before a change keep the value they started with.
   * @default none: the role has no setting of its own (PostgreSQL's default, no limit; the Data API's own 45 s)
   */
  readonly statementTimeoutMs?: number | undefined;
}

/** What provisioning did, for the log: names and privileges only, never a password or its verifier. */
export interface RoleReport {
  readonly role: string;
  readonly created: boolean;
  readonly passwordSet: boolean;
  /** The role's own statement_timeout in milliseconds, or null when it has none. */
  readonly statementTimeoutMs: number | null;
  /** Every privilege the role holds now: `SELECT ON TABLE "inbox"."consumed_message"`. */
  readonly privileges: readonly string[];
  readonly granted: readonly string[];
  readonly revoked: readonly string[];
  /** What PUBLIC (every role) held and was revoked, on this database and its `public` schema. */
  readonly revokedFromPublic: readonly string[];
  /** The consumers whose claims the role is scoped to; empty: not scoped. */
  readonly scope: readonly string[];
}

/** A role cannot be provisioned as asked; the message names the role, the cause and the fix. */
export class DatabaseRoleError extends Error {
  override readonly name = 'DatabaseRoleError';
}

const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;
/** Marks the roles sqs-inbox created, so it never adopts, changes or drops a role someone else made. */
export const ROLE_COMMENT_PREFIX = 'sqs-inbox: ';
const TABLE_PRIVILEGES = new Set(['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER']);
const SEQUENCE_PRIVILEGES = new Set(['USAGE', 'SELECT', 'UPDATE']);
/** pg_class.relkind of what a user grant may name: tables (plain, partitioned, foreign), views, materialized views. */
const TABLE_KINDS = new Set(['r', 'p', 'f', 'v', 'm']);

type ObjectKind = 'database' | 'schema' | 'table' | 'sequence' | 'column' | 'function';

/** One privilege on one object, as granted or found in the catalog. */
interface Privilege {
  readonly kind: ObjectKind;
  /** The schema; for a database privilege, the database's name. */
  readonly schema: string;
  readonly name: string | null;
  /** The column; for a function, its argument types as the catalog formats them (`text, bigint[]`). */
  readonly column: string | null;
  readonly privilege: string;
}

/**
 * Creates (or brings up to date) a login role with exactly the privileges its purpose needs on the inbox
 * tables plus the user's grants, and revokes any other privilege it holds on a schema, table, column or
 * sequence of this database. Runs in one transaction under an advisory lock, as the migration user (the
 * schema's owner), so two deploys never interleave. Idempotent.
 *
 * Every purpose: CONNECT on this database when PUBLIC no longer grants it (see `revokePublic`), never TEMPORARY.
 * A consumer with `spec.consumer` is listed in role_scope, so row-level security limits it to that consumer's
 * claims and parked messages.
 *
 * Privileges by purpose:
 * - consumer: USAGE on the inbox schema; SELECT, INSERT on consumed_message, parked_message and
 *   outbox_message; USAGE on the id sequences of parked_message and outbox_message; UPDATE (replayed_at) on
 *   parked_message, which `parked.replay()` sets and which its `SELECT ... FOR UPDATE` needs; UPDATE
 *   (sent_at, attempts, last_error) on outbox_message, which the relay sets after the commit; EXECUTE on
 *   outbox_older_unsent (inbox migration 7), the relay's FIFO check across consumers; plus
 *   `spec.grants` and USAGE on their schemas, and with an INSERT grant USAGE on the sequences the table's column
 *   defaults draw from (serial, bigserial), without which the INSERT is refused.
 * - purge: USAGE on the inbox schema; SELECT, DELETE on consumed_message; UPDATE (processed_at) on it, because
 *   the purge's `FOR UPDATE SKIP LOCKED` needs UPDATE on some column (it adds nothing DELETE does not allow).
 * - outbox (the sweeper): USAGE on the inbox schema; SELECT, DELETE and UPDATE (sent_at, attempts,
 *   last_error) on outbox_message; nothing on the claims.
 *
 * The password is set only when the role is created or `resetPassword` is true; it is read through
 * `password()` only then, and only its SCRAM-SHA-256 verifier reaches the database.
 *
 * @example
 * await provisionRole(session, { role: 'inbox_consumer_orders', purpose: 'consumer', label: 'consumer orders',
 *   grants: [{ on: 'public.orders', privileges: ['SELECT', 'INSERT', 'UPDATE'] }] }, { password: async () => pw });
 */
export async function provisionRole(
  session: InboxSession,
  spec: RoleSpec,
  options: {
    readonly schema?: string;
    readonly resetPassword?: boolean;
    readonly password: () => Promise<string>;
    /**
     * The label this same resource provisioned the role under before (an Update that keeps the role's name): a role
     * created for it may take `spec.label`. Without it, a role that exists must have been created for `spec.label`.
     * @default none: a role created for another label is refused
     */
    readonly previousLabel?: string | undefined;
    /**
     * Revoke PUBLIC's CONNECT and TEMPORARY on this database, and its CREATE on the `public` schema (PostgreSQL
     * 14 and older), when the migration user owns the database: then every role needs its own CONNECT, and the
     * roles sqs-inbox provisions get exactly that. For a database that is the inbox's own; other roles that
     * connected through PUBLIC need `GRANT CONNECT ON DATABASE ... TO them`.
     * @default false
     */
    readonly revokePublic?: boolean;
  },
): Promise<RoleReport> {
  checkSpec(spec);
  const tables = inboxTables(options.schema ?? 'inbox');
  const schema = options.schema ?? 'inbox';
  // Checked, and the password read, before the transaction opens: Secrets Manager may be slow, and the
  // transaction holds a lock. Checked again inside it, in case another deploy got there in between.
  const before = await roleState(session, spec.role);
  refuseOthers(spec, before, options.previousLabel);
  const password = before.state === 'missing' || options.resetPassword === true ? await options.password() : undefined;
  const tx = await session.transaction();
  try {
    await tx.execute('SELECT pg_advisory_xact_lock(hashtext(:lock))', { lock: 'sqs-inbox-roles' });
    const found = await roleState(tx, spec.role);
    refuseOthers(spec, found, options.previousLabel);
    const created = found.state === 'missing';
    if (created) {
      if (password === undefined) throw new DatabaseRoleError(`role "${spec.role}" appeared while its password was not read; deploy again.`);
      await roleCommand(tx, spec.role, scramSha256Verifier(password), 'CREATE');
    } else if (password !== undefined) {
      await roleCommand(tx, spec.role, scramSha256Verifier(password), 'ALTER');
    }
    // The comment records what the role is for: the next deploy that asks for the role compares its own label with it.
    if (found.label !== spec.label) await roleCommand(tx, spec.role, `${ROLE_COMMENT_PREFIX}${spec.label}`, 'COMMENT');
    await roleCommand(tx, spec.role, String(spec.statementTimeoutMs ?? ''), spec.statementTimeoutMs === undefined ? 'RESET_TIMEOUT' : 'SET_TIMEOUT');
    const sequences = [...(await defaultSequences(tx, schema, tableName(tables.parked))), ...(await defaultSequences(tx, schema, tableName(tables.outbox)))];
    const functions = await inboxFunctions(tx, schema);
    const access = await databaseAccess(tx, options.revokePublic === true);
    const desired = [...access.privileges, ...inboxPrivileges(spec.purpose, { schema, tables, sequences, functions }), ...(await userPrivileges(tx, spec))];
    const { granted, revoked } = await reconcile(tx, spec.role, schema, desired);
    const scope = await setScope(tx, tables, spec.role, spec.purpose === 'consumer' && spec.consumer !== undefined ? [spec.consumer] : []);
    await tx.commit();
    return {
      role: spec.role,
      created,
      passwordSet: password !== undefined,
      statementTimeoutMs: spec.statementTimeoutMs ?? null,
      privileges: uniqueStatements(desired),
      granted,
      revoked,
      revokedFromPublic: access.revokedFromPublic,
      scope,
    };
  } catch (error) {
    await tx.rollback().catch(() => {});
    throw error;
  }
}

/**
 * Revokes every privilege of a role sqs-inbox created and drops it; does nothing when the role is gone, or when
 * `label` is given and the role is now another's (its comment records another label: a role that two deploys
 * shared before that was refused is left to the one it was created for). Refuses a role it did not create.
 */
export async function dropRole(
  session: InboxSession,
  role: string,
  options: { readonly schema?: string; readonly label?: string | undefined } = {},
): Promise<{ readonly dropped: boolean; readonly createdFor?: string }> {
  checkRoleName(role);
  const tables = inboxTables(options.schema ?? 'inbox');
  const tx = await session.transaction();
  try {
    await tx.execute('SELECT pg_advisory_xact_lock(hashtext(:lock))', { lock: 'sqs-inbox-roles' });
    const { state, label } = await roleState(tx, role);
    if (state === 'missing') {
      await tx.rollback();
      return { dropped: false };
    }
    if (state !== 'managed') {
      throw new DatabaseRoleError(`role "${role}" was not created by sqs-inbox (or is the master user); it is left as it is.`);
    }
    if (options.label !== undefined && label !== options.label) {
      await tx.rollback();
      return { dropped: false, createdFor: label };
    }
    await reconcile(tx, role, options.schema ?? 'inbox', []);
    await setScope(tx, tables, role, []);
    await tx.execute(`DROP ROLE ${quote(role)}`);
    await tx.commit();
    return { dropped: true };
  } catch (error) {
    await tx.rollback().catch(() => {});
    throw error;
  }
}

/** Validates a role spec the way the CDK construct does, so a hand-written custom resource fails just as clearly. */
export function checkSpec(spec: RoleSpec): void {
  checkRoleName(spec.role);
  if (spec.purpose !== 'consumer' && spec.purpose !== 'purge' && spec.purpose !== 'outbox') {
    throw new DatabaseRoleError(`role "${spec.role}": purpose must be "consumer", "purge" or "outbox", got ${JSON.stringify(spec.purpose)}.`);
  }
  if (spec.consumer !== undefined && (spec.purpose !== 'consumer' || typeof spec.consumer !== 'string' || spec.consumer === '')) {
    throw new DatabaseRoleError(
      `role "${spec.role}": \`consumer\` names the consumer a consumer role acts for, a non-empty string; the ${spec.purpose} role takes none.`,
    );
  }
  const timeout = spec.statementTimeoutMs;
  if (timeout !== undefined && !(Number.isSafeInteger(timeout) && timeout >= 1)) {
    throw new DatabaseRoleError(
      `role "${spec.role}": statementTimeoutMs must be a whole number of milliseconds >= 1, below the consumer's callTimeoutMs (e.g. 8000); got ${JSON.stringify(timeout)}.`,
    );
  }
  if (spec.purpose !== 'consumer' && spec.grants.length > 0) {
    throw new DatabaseRoleError(`role "${spec.role}": the ${spec.purpose} role takes no grants beyond the inbox tables.`);
  }
  spec.grants.forEach((grant, index) => {
    const where = `role "${spec.role}" grant ${index} (${JSON.stringify(grant?.on)})`;
    const parts = typeof grant?.on === 'string' ? grant.on.split('.') : [];
    if (parts.length !== 2 || !parts.every((part) => IDENTIFIER.test(part) && part.length <= 63)) {
      throw new DatabaseRoleError(`${where}: \`on\` must be "schema.name" in lower case, e.g. "public.orders".`);
    }
    if (!Array.isArray(grant.privileges) || grant.privileges.length === 0) {
      throw new DatabaseRoleError(`${where}: \`privileges\` must list at least one privilege, e.g. ["SELECT", "INSERT"].`);
    }
    for (const privilege of grant.privileges) {
      if (!TABLE_PRIVILEGES.has(privilege) && !SEQUENCE_PRIVILEGES.has(privilege)) {
        throw new DatabaseRoleError(`${where}: unknown privilege ${JSON.stringify(privilege)}; use ${[...TABLE_PRIVILEGES, 'USAGE'].join(', ')}.`);
      }
    }
  });
}

function checkRoleName(role: string): void {
  if (typeof role !== 'string' || !IDENTIFIER.test(role) || role.length > 63 || /^(pg_|rds)/.test(role)) {
    throw new DatabaseRoleError(`role name ${JSON.stringify(role)} must match ${IDENTIFIER}, be at most 63 characters and not start with "pg_" or "rds".`);
  }
}

/**
 * Refuses the master user and a role someone else created: neither is ever adopted or changed. And a role sqs-inbox
 * created for another label: two consumer names that map to one role name (`order-worker` and `order_worker`), or
 * one role name given twice, deployed apart on one cluster. Provisioning it would reset the other's password and
 * scope, and the other's function could no longer sign in.
 */
function refuseOthers(spec: RoleSpec, found: RoleRecord, previousLabel: string | undefined): void {
  const role = spec.role;
  const state = found.state;
  if (state === 'managed' && found.label !== spec.label && found.label !== previousLabel) {
    throw new DatabaseRoleError(
      `role "${role}" was created by sqs-inbox for "${found.label}", not for "${spec.label}": provisioning it here would reset its ` +
        "password and scope, and that function could no longer sign in. Two consumer names that map to one role name (such as 'order-worker' " +
        "and 'order_worker') do this. Fix: give this one a `databaseRole` of its own; if the role is left over from a deploy that is " +
        `gone, drop it first; if it is this one's under an earlier label, record that: COMMENT ON ROLE "${role}" IS '${ROLE_COMMENT_PREFIX}${spec.label}'.`,
    );
  }
  if (state === 'current-user') {
    throw new DatabaseRoleError(
      `role "${role}" is the user the migration signs in as (the master user). Fix: give the consumer or ` +
        'purge another `databaseRole`: the master credentials must stay with the migration function alone.',
    );
  }
  if (state === 'foreign') {
    throw new DatabaseRoleError(
      `role "${role}" already exists and was not created by sqs-inbox, so it is neither adopted nor changed. ` +
        'Fix: choose another `databaseRole`, or drop that role first if it is unused.',
    );
  }
}

type RoleState = 'missing' | 'managed' | 'foreign' | 'current-user';

/** A role as found: whose it is, and for a role sqs-inbox created, the label its comment records. */
interface RoleRecord {
  readonly state: RoleState;
  readonly label?: string | undefined;
}

async function roleState(tx: Pick<Transaction, 'execute'>, role: string): Promise<RoleRecord> {
  const { rows } = await tx.execute(
    `SELECT r.rolname = current_user AS is_current, coalesce(shobj_description(r.oid, 'pg_authid'), '') AS comment
       FROM pg_roles r WHERE r.rolname = :role`,
    { role },
  );
  const row = rows[0];
  if (!row) return { state: 'missing' };
  if (row.is_current === true) return { state: 'current-user' };
  const comment = String(row.comment);
  return comment.startsWith(ROLE_COMMENT_PREFIX) ? { state: 'managed', label: comment.slice(ROLE_COMMENT_PREFIX.length) } : { state: 'foreign' };
}

/**
 * CREATE ROLE, ALTER ROLE (PASSWORD, SET) and COMMENT ON ROLE take no bind parameters. The value travels as one,
 * into a transaction-local setting, and a constant DO block formats it in: statement logs (log_statement = ddl)
 * show the DO block, never the verifier.
 */
async function roleCommand(
  tx: Transaction,
  role: string,
  value: string,
  action: 'CREATE' | 'ALTER' | 'COMMENT' | 'SET_TIMEOUT' | 'RESET_TIMEOUT',
): Promise<void> {
  await tx.execute("SELECT set_config('sqs_inbox.role', :role, true), set_config('sqs_inbox.value', :value, true)", { role, value });
  const command = {
    CREATE: "'CREATE ROLE %I WITH LOGIN NOINHERIT NOCREATEDB NOCREATEROLE PASSWORD %L'",
    ALTER: "'ALTER ROLE %I WITH LOGIN PASSWORD %L'",
    COMMENT: "'COMMENT ON ROLE %I IS %L'",
    SET_TIMEOUT: "'ALTER ROLE %I SET statement_timeout = %L'",
    // format() leaves an argument without a placeholder unused.
    RESET_TIMEOUT: "'ALTER ROLE %I RESET statement_timeout'",
  }[action];
  await tx.execute(`DO $sqs_inbox$ BEGIN EXECUTE format(${command}, current_setting('sqs_inbox.role'), current_setting('sqs_inbox.value')); END $sqs_inbox$`);
  await tx.execute("SELECT set_config('sqs_inbox.value', '', true)");
}

/**
 * The role's privileges on the database itself. Every database grants CONNECT and TEMPORARY to PUBLIC (and
 * PostgreSQL 14 and older CREATE on its `public` schema); no inbox role creates temporary tables or objects. A
 * role cannot be excluded from PUBLIC, so the only way to take these from the inbox roles is to take them from
 * PUBLIC, which only the database's owner may do, and which every role in the database feels: done only when asked
 * (`revokePublic`, for a database that is the inbox's own) and only by the owner. Once PUBLIC has no CONNECT, the
 * role is given its own; TEMPORARY it never gets. Other databases of the cluster are left as they are: their
 * PUBLIC privileges belong to whoever owns them.
 */
async function databaseAccess(tx: Transaction, revokePublic: boolean): Promise<{ privileges: Privilege[]; revokedFromPublic: string[] }> {
  const { rows } = await tx.execute(
    `SELECT d.datname AS database, pg_has_role(current_user, d.datdba, 'USAGE') AS owner,
            coalesce((SELECT string_agg(a.privilege_type, ', ' ORDER BY a.privilege_type) FROM aclexplode(coalesce(d.datacl, acldefault('d', d.datdba))) a
                       WHERE a.grantee = 0 AND a.privilege_type IN ('CONNECT', 'TEMPORARY')), '') AS database_public,
            coalesce((SELECT pg_has_role(current_user, n.nspowner, 'USAGE') AND EXISTS (
                        SELECT 1 FROM aclexplode(coalesce(n.nspacl, acldefault('n', n.nspowner))) a WHERE a.grantee = 0 AND a.privilege_type = 'CREATE')
                        FROM pg_namespace n WHERE n.nspname = 'public'), false) AS schema_public_create
       FROM pg_database d WHERE d.datname = current_database()`,
  );
  const row = rows[0]!;
  const database = String(row.database);
  if (row.owner !== true) return { privileges: [], revokedFromPublic: [] };
  const revokedFromPublic: string[] = [];
  const held = String(row.database_public)
    .split(', ')
    .filter((privilege) => privilege !== '');
  if (revokePublic && held.length > 0) {
    const statement = `${held.join(', ')} ON DATABASE ${quote(database)}`;
    await tx.execute(`REVOKE ${statement} FROM PUBLIC`);
    revokedFromPublic.push(statement);
  }
  if (revokePublic && row.schema_public_create === true) {
    await tx.execute('REVOKE CREATE ON SCHEMA "public" FROM PUBLIC');
    revokedFromPublic.push('CREATE ON SCHEMA "public"');
  }
  const publicConnects = held.includes('CONNECT') && !revokePublic;
  return {
    privileges: publicConnects ? [] : [{ kind: 'database', schema: database, name: null, column: null, privilege: 'CONNECT' }],
    revokedFromPublic,
  };
}

/**
 * Records which consumers the role acts for in role_scope, which the row-level security policies of inbox
 * migration 5 read: a listed role sees and writes only those consumers' claims and parked messages. Nothing
 * to do before that migration ran (a schema that has no role_scope).
 */
async function setScope(tx: Transaction, tables: InboxTables, role: string, consumers: readonly string[]): Promise<string[]> {
  const scopeTable = `${tables.schema}."role_scope"`;
  const { rows } = await tx.execute('SELECT to_regclass(:table) IS NOT NULL AS present', { table: scopeTable });
  if (rows[0]?.present !== true) return [];
  await tx.execute(`DELETE FROM ${scopeTable} WHERE role_name = :role`, { role });
  for (const consumer of consumers) {
    await tx.execute(`INSERT INTO ${scopeTable} (role_name, consumer_name) VALUES (:role, :consumer)`, { role, consumer });
  }
  return [...consumers];
}

interface Sequence {
  readonly schema: string;
  readonly name: string;
}

/**
 * The sequences a table's column defaults draw from: those of its serial and bigserial columns, and any other
 * `DEFAULT nextval(...)`. An INSERT that leaves such a column to its default calls nextval(), which needs USAGE on
 * the sequence (INSERT on the table is not enough). Identity columns need nothing: PostgreSQL draws their values
 * without a privilege check. Empty before the table exists.
 */
async function defaultSequences(tx: Transaction, schema: string, table: string): Promise<Sequence[]> {
  const { rows } = await tx.execute(
    `SELECT DISTINCT sn.nspname AS schema, s.relname AS name
       FROM pg_class t JOIN pg_namespace tn ON tn.oid = t.relnamespace
       JOIN pg_attrdef ad ON ad.adrelid = t.oid
       JOIN pg_depend d ON d.classid = 'pg_attrdef'::regclass AND d.objid = ad.oid AND d.refclassid = 'pg_class'::regclass
       JOIN pg_class s ON s.oid = d.refobjid AND s.relkind = 'S'
       JOIN pg_namespace sn ON sn.oid = s.relnamespace
      WHERE tn.nspname = :schema AND t.relname = :table
      ORDER BY 1, 2`,
    { schema, table },
  );
  return rows.map((row) => ({ schema: String(row.schema), name: String(row.name) }));
}

/**
 * The inbox's functions a consumer calls, as the catalog names them: the relay's FIFO check (inbox migration 7), whose
 * EXECUTE the migration took from PUBLIC. Empty before that migration ran.
 */
async function inboxFunctions(tx: Transaction, schema: string): Promise<Privilege[]> {
  const { rows } = await tx.execute(
    `SELECT p.proname AS name, oidvectortypes(p.proargtypes) AS args
       FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
      WHERE n.nspname = :schema AND p.proname = :name`,
    { schema, name: OUTBOX_ORDER_FUNCTION.name },
  );
  return rows.map((row) => ({ kind: 'function', schema, name: String(row.name), column: String(row.args), privilege: 'EXECUTE' }));
}

function sequenceUsage(sequences: readonly Sequence[]): Privilege[] {
  return sequences.map((sequence) => ({ kind: 'sequence', schema: sequence.schema, name: sequence.name, column: null, privilege: 'USAGE' }));
}

/** The inbox's objects in the catalog: its schema and tables, the sequences of their defaults, and its functions' EXECUTE. */
interface InboxObjects {
  readonly schema: string;
  readonly tables: InboxTables;
  readonly sequences: readonly Sequence[];
  readonly functions: readonly Privilege[];
}

function inboxPrivileges(purpose: RolePurpose, { schema, tables, sequences, functions }: InboxObjects): Privilege[] {
  const { consumed, parked, outbox } = tables;
  const table = tableName;
  const on = (name: string, privilege: string, column: string | null = null): Privilege => ({
    kind: column === null ? 'table' : 'column',
    schema,
    name,
    column,
    privilege,
  });
  const usage: Privilege = { kind: 'schema', schema, name: null, column: null, privilege: 'USAGE' };
  // Marking outbox rows sent (or a failed attempt) is the relay's, which the consumer and the sweeper both run.
  const relay = ['sent_at', 'attempts', 'last_error'].map((column) => on(table(outbox), 'UPDATE', column));
  if (purpose === 'purge') {
    return [usage, on(table(consumed), 'SELECT'), on(table(consumed), 'DELETE'), on(table(consumed), 'UPDATE', 'processed_at')];
  }
  if (purpose === 'outbox') {
    // The sweeper: reads and marks unsent rows, deletes old sent ones; never touches a claim.
    return [usage, on(table(outbox), 'SELECT'), on(table(outbox), 'DELETE'), ...relay];
  }
  return [
    usage,
    on(table(consumed), 'SELECT'),
    on(table(consumed), 'INSERT'),
    on(table(parked), 'SELECT'),
    on(table(parked), 'INSERT'),
    on(table(parked), 'UPDATE', 'replayed_at'),
    on(table(outbox), 'SELECT'),
    on(table(outbox), 'INSERT'),
    ...relay,
    ...sequenceUsage(sequences),
    ...functions,
  ];
}

/** `"inbox"."parked_message"` to `parked_message`. */
function tableName(quoted: string): string {
  return quoted.split('.')[1]!.replace(/"/g, '');
}

async function userPrivileges(tx: Transaction, spec: RoleSpec): Promise<Privilege[]> {
  const privileges: Privilege[] = [];
  for (const grant of spec.grants) {
    const [schema, name] = grant.on.split('.') as [string, string];
    const { rows } = await tx.execute(
      `SELECT c.relkind::text AS kind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = :schema AND c.relname = :name`,
      { schema, name },
    );
    const relkind = rows[0]?.kind as string | undefined;
    if (relkind === undefined) {
      throw new DatabaseRoleError(
        `role "${spec.role}": ${grant.on} does not exist, so it cannot be granted. Fix: create it in a migration that ` +
          'runs before the role is provisioned (InboxDatabase `migrations`, or your own custom resource with ' +
          '`consumer.databaseRole.resource.node.addDependency(yourMigration)`), or correct the name in `databaseGrants`.',
      );
    }
    const kind = relkind === 'S' ? 'sequence' : TABLE_KINDS.has(relkind) ? 'table' : undefined;
    const allowed = kind === 'sequence' ? SEQUENCE_PRIVILEGES : TABLE_PRIVILEGES;
    const wrong = grant.privileges.filter((privilege) => !allowed.has(privilege));
    if (kind === undefined || wrong.length > 0) {
      throw new DatabaseRoleError(
        `role "${spec.role}": ${grant.on} is ${kind === undefined ? `of relkind "${relkind}", which cannot be granted` : `a ${kind}`}` +
          (wrong.length > 0 ? ` and takes ${[...allowed].join(', ')}, not ${wrong.join(', ')}` : '') +
          '. Fix: correct `databaseGrants`.',
      );
    }
    privileges.push({ kind: 'schema', schema, name: null, column: null, privilege: 'USAGE' });
    for (const privilege of grant.privileges) privileges.push({ kind, schema, name, column: null, privilege });
    // An INSERT that fills a serial column calls nextval(): without USAGE on its sequence it is refused.
    if (kind === 'table' && grant.privileges.includes('INSERT')) privileges.push(...sequenceUsage(await defaultSequences(tx, schema, name)));
  }
  return privileges;
}

/**
 * Every privilege the role holds on this database, or on a schema, table, column or sequence of it, or on a function
 * of the inbox schema (functions elsewhere are the user's, which `databaseGrants` does not name).
 */
async function currentPrivileges(tx: Transaction, role: string, schema: string): Promise<Privilege[]> {
  const { rows } = await tx.execute(
    `WITH grantee AS (SELECT oid FROM pg_roles WHERE rolname = :role)
     SELECT 'database' AS kind, d.datname AS schema, NULL::text AS name, NULL::text AS column_name, a.privilege_type AS privilege
       FROM pg_database d, aclexplode(d.datacl) a WHERE d.datname = current_database() AND a.grantee = (SELECT oid FROM grantee)
     UNION ALL
     SELECT 'schema', n.nspname AS schema, NULL::text AS name, NULL::text AS column_name, a.privilege_type AS privilege
       FROM pg_namespace n, aclexplode(n.nspacl) a WHERE a.grantee = (SELECT oid FROM grantee)
     UNION ALL
     SELECT CASE WHEN c.relkind = 'S' THEN 'sequence' ELSE 'table' END, n.nspname, c.relname, NULL, a.privilege_type
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace, aclexplode(c.relacl) a
      WHERE a.grantee = (SELECT oid FROM grantee)
     UNION ALL
     SELECT 'column', n.nspname, c.relname, att.attname, a.privilege_type
       FROM pg_attribute att JOIN pg_class c ON c.oid = att.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace,
            aclexplode(att.attacl) a
      WHERE a.grantee = (SELECT oid FROM grantee) AND NOT att.attisdropped
     UNION ALL
     SELECT 'function', n.nspname, p.proname, oidvectortypes(p.proargtypes), a.privilege_type
       FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace, aclexplode(p.proacl) a
      WHERE a.grantee = (SELECT oid FROM grantee) AND n.nspname = :schema`,
    { role, schema },
  );
  return rows.map((row) => ({
    kind: row.kind as ObjectKind,
    schema: String(row.schema),
    name: (row.name as string | null) ?? null,
    column: (row.column_name as string | null) ?? null,
    privilege: String(row.privilege),
  }));
}

/** Revokes what the role holds beyond `desired`, then grants `desired` (GRANT is idempotent). */
async function reconcile(tx: Transaction, role: string, schema: string, desired: readonly Privilege[]): Promise<{ granted: string[]; revoked: string[] }> {
  const wanted = new Set(desired.map(statementOf));
  const held = await currentPrivileges(tx, role, schema);
  const heldSet = new Set(held.map(statementOf));
  const revoked: string[] = [];
  for (const privilege of held) {
    const statement = statementOf(privilege);
    if (wanted.has(statement)) continue;
    await tx.execute(`REVOKE ${statement} FROM ${quote(role)}`);
    revoked.push(statement);
  }
  const granted: string[] = [];
  for (const statement of uniqueStatements(desired)) {
    if (heldSet.has(statement)) continue;
    await tx.execute(`GRANT ${statement} TO ${quote(role)}`);
    granted.push(statement);
  }
  return { granted, revoked };
}

function uniqueStatements(privileges: readonly Privilege[]): string[] {
  return [...new Set(privileges.map(statementOf))];
}

/**
 * `SELECT ON TABLE "inbox"."consumed_message"`, `UPDATE ("replayed_at") ON TABLE ...`, `USAGE ON SCHEMA "inbox"`,
 * `EXECUTE ON FUNCTION "inbox"."outbox_older_unsent"(text, text, bigint, bigint[])`.
 */
function statementOf(p: Privilege): string {
  switch (p.kind) {
    case 'database':
      return `${p.privilege} ON DATABASE ${quote(p.schema)}`;
    case 'schema':
      return `${p.privilege} ON SCHEMA ${quote(p.schema)}`;
    case 'sequence':
      return `${p.privilege} ON SEQUENCE ${quote(p.schema)}.${quote(p.name!)}`;
    case 'column':
      return `${p.privilege} (${quote(p.column!)}) ON TABLE ${quote(p.schema)}.${quote(p.name!)}`;
    case 'function':
      return `${p.privilege} ON FUNCTION ${quote(p.schema)}.${quote(p.name!)}(${p.column})`;
    default:
      return `${p.privilege} ON TABLE ${quote(p.schema)}.${quote(p.name!)}`;
  }
}

/** Quotes an identifier read from the catalog or validated against {@link IDENTIFIER}. */
function quote(identifier: string): string {
  return `"${identifier.replace(/"/g, '""')}"`;
}
