import { checkDsqlSql, DSQL_SOURCES } from '../../lambda/inbox/transport/dsql/supported-sql.js';
import type { DsqlSqlViolation } from '../../lambda/inbox/transport/dsql/supported-sql.js';
import { loadPg } from '../peer-loaders.js';
import { startWireProxy } from '../wire/proxy.js';
import { dsql } from '../../lambda/inbox/transport/dsql/index.js';
import type { DsqlOptions, DsqlTarget } from '../../lambda/inbox/transport/dsql/index.js';
import type { WireProxy, WireRefusal } from '../wire/proxy.js';

/**
 * DSQL's answer to an optimistic-concurrency conflict on a row (SQLSTATE 40001, OC000), as the user guide
 * gives it (Concurrency control in Aurora DSQL, and Troubleshooting).
 */
export const DSQL_ROW_CONFLICT: WireRefusal = { sqlState: '40001', message: 'change conflicts with another transaction, please retry: (OC000)' };

/** DSQL modifies at most 3,000 rows in one transaction (the quotas page and AWS's batch-operation samples). */
export const DSQL_MAX_ROWS_PER_TRANSACTION = 3000;

/**
 * The node-postgres `options` of a connection of the test's own beside the runtime (setup, assertions):
 * the row limit does not count its rows, since it stands outside what is being held to DSQL's rules.
 */
export const DSQL_PROFILE_EXEMPT = '-c dsql_profile.exempt=on';

const DDL = /^\s*(?:CREATE|ALTER|DROP|GRANT|REVOKE|COMMENT)\b/i;
const DML = /^\s*(?:INSERT|UPDATE|DELETE|MERGE)\b|^\s*WITH\b[\s\S]*\b(?:INSERT|UPDATE|DELETE)\b/i;

/** Options of {@link startDsqlProfile}. */
export interface DsqlProfileOptions {
  /** The share of COMMITs that fail with {@link DSQL_ROW_CONFLICT}, 0 to 1. @default 0 */
  readonly conflictRate?: number | undefined;
  /** The conflicts' dice, for a seeded run. @default Math.random */
  readonly random?: (() => number) | undefined;
  /** Refuse the statements DSQL's guide does not list as well as those it says it does not support. @default false */
  readonly strict?: boolean | undefined;
  /** Schemas whose tables get the row limit. @default ['inbox', 'public'] */
  readonly rowLimitSchemas?: readonly string[] | undefined;
}

/** A PostgreSQL database that behaves as Aurora DSQL in the ways the inbox depends on; see docs/dsql.md. */
export interface DsqlProfile {
  /** The wire proxy the runtime connects through: its `conflicts.rate` and `conflicts.injected` are the profile's. */
  readonly proxy: WireProxy;
  /** The host and port to hand `dsql({ endpoint, port })`. */
  readonly host: string;
  readonly port: number;
  /** The statements refused so far, with the rules they broke. */
  readonly violations: readonly DsqlSqlViolation[];
  /**
   * Outside strict mode: the statements let through that use what DSQL's guide does not list either way
   * (the `not-listed` rules), the open questions only a real cluster settles.
   */
  readonly unverified: readonly DsqlSqlViolation[];
  /** Adds the row limit to every table now in the profile's schemas (run it after the migrations). */
  enforceRowLimit(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Makes the database at `databaseUrl` a DSQL profile, and starts the proxy the runtime talks to it through:
 *
 * - every transaction runs at REPEATABLE READ, DSQL's only isolation level (the database's default);
 * - COMMITs fail at `conflictRate` with DSQL's 40001 / OC000 answer, after the proxy rolled them back;
 * - every statement is checked against DSQL's supported SQL (lambda/inbox/transport/dsql/supported-sql.ts) and
 *   refused with SQLSTATE 0A000 without running when it breaks a rule, and so is a second DDL statement in a
 *   transaction, or DDL beside DML; `CREATE INDEX ASYNC` reaches PostgreSQL as CREATE INDEX;
 * - a transaction that modifies more than 3,000 rows of the profile's tables fails with SQLSTATE 54000.
 */
export async function startDsqlProfile(databaseUrl: string, options: DsqlProfileOptions = {}): Promise<DsqlProfile> {
  const pg = await loadPg();
  const admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
  const database = new URL(databaseUrl).pathname.slice(1);
  try {
    await admin.query(`ALTER DATABASE "${database.replace(/"/g, '""')}" SET default_transaction_isolation = 'repeatable read'`);
  } finally {
    await admin.end();
  }
  const proxy = await startWireProxy(databaseUrl);
  proxy.conflicts.rate = options.conflictRate ?? 0;
  proxy.conflicts.error = DSQL_ROW_CONFLICT;
  if (options.random) proxy.conflicts.random = options.random;
  const violations: DsqlSqlViolation[] = [];
  const unverified: DsqlSqlViolation[] = [];
  // What each connection's open transaction has run: DSQL takes one DDL statement per transaction, and never DDL beside DML.
  const transactions = new Map<number, { ddl: number; dml: number }>();
  proxy.refuseWhen((sql, { connection, inTransaction }) => {
    const found = checkDsqlSql(sql, options.strict ?? false);
    if (!options.strict) unverified.push(...checkDsqlSql(sql, true).filter((violation) => violation.rule.status === 'not-listed'));
    if (found.length > 0) {
      violations.push(...found);
      const first = found[0]!;
      return { sqlState: '0A000', message: `Aurora DSQL does not support this statement (${first.rule.id}): ${first.rule.says}. See ${first.rule.source}` };
    }
    if (!inTransaction) transactions.delete(connection);
    const kind = DDL.test(sql) ? 'ddl' : DML.test(sql) ? 'dml' : undefined;
    if (!inTransaction || !kind) return undefined;
    const seen = transactions.get(connection) ?? { ddl: 0, dml: 0 };
    transactions.set(connection, seen);
    const refusal =
      kind === 'ddl' && seen.ddl > 0
        ? 'one DDL statement per transaction'
        : (kind === 'ddl' ? seen.dml : seen.ddl) > 0
          ? 'no DDL and DML in one transaction'
          : undefined;
    if (refusal) return { sqlState: '0A000', message: `Aurora DSQL takes ${refusal}. See ${DSQL_SOURCES.ddl}` };
    seen[kind]++;
    return undefined;
  });
  // PostgreSQL builds DSQL's asynchronous index at once.
  proxy.rewriteWith((sql) => sql.replace(/^(\s*CREATE\s+(?:UNIQUE\s+)?INDEX)\s+ASYNC\b/i, '$1'));
  const { port, hostname } = new URL(proxy.url);
  return {
    proxy,
    host: hostname,
    port: Number(port),
    violations,
    unverified,
    enforceRowLimit: () => enforceRowLimit(databaseUrl, options.rowLimitSchemas ?? ['inbox', 'public']),
    close: () => proxy.close(),
  };
}

/**
 * A row trigger on every table of `schemas` counts the rows a transaction inserts, updates or deletes (in a
 * transaction-local setting) and fails the statement that goes past {@link DSQL_MAX_ROWS_PER_TRANSACTION}.
 * The trigger is the profile's own, installed beside the runtime's connection: DSQL itself has no
 * triggers, and counts index rows too (see docs/dsql.md), which this does not.
 */
async function enforceRowLimit(databaseUrl: string, schemas: readonly string[]): Promise<void> {
  const pg = await loadPg();
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query('CREATE SCHEMA IF NOT EXISTS dsql_profile');
    await client.query(`CREATE OR REPLACE FUNCTION dsql_profile.count_row() RETURNS trigger LANGUAGE plpgsql AS $fn$
      DECLARE
        modified int := coalesce(nullif(current_setting('dsql_profile.rows', true), ''), '0')::int + 1;
      BEGIN
        IF current_setting('dsql_profile.exempt', true) = 'on' THEN
          RETURN NULL;
        END IF;
        PERFORM set_config('dsql_profile.rows', modified::text, true);
        IF modified > ${DSQL_MAX_ROWS_PER_TRANSACTION} THEN
          RAISE EXCEPTION 'transaction exceeds the limit of ${DSQL_MAX_ROWS_PER_TRANSACTION} modified rows (Aurora DSQL, ${DSQL_SOURCES.quotas})' USING ERRCODE = '54000';
        END IF;
        RETURN NULL;
      END $fn$`);
    const { rows } = await client.query<{ schema: string; name: string }>(
      `SELECT n.nspname AS schema, c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relkind = 'r' AND n.nspname = ANY ($1::text[])
          AND NOT EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgrelid = c.oid AND t.tgname = 'dsql_row_limit')`,
      [schemas],
    );
    for (const { schema, name } of rows) {
      await client.query(
        `CREATE TRIGGER dsql_row_limit AFTER INSERT OR UPDATE OR DELETE ON "${schema}"."${name}" FOR EACH ROW EXECUTE FUNCTION dsql_profile.count_row()`,
      );
    }
  } finally {
    await client.end();
  }
}

/**
 * A `dsql()` target that reaches the profile as it would reach a cluster: the profile's host and port for the
 * endpoint, no TLS, the local server's password in place of a signed token, `database` as the one database.
 */
export function dsqlOnProfile(
  profile: Pick<DsqlProfile, 'host' | 'port'>,
  options: { readonly database: string; readonly password?: string | undefined } & Pick<DsqlOptions, 'conflictRetries' | 'onConflict'>,
): DsqlTarget {
  return dsql({
    endpoint: profile.host,
    port: profile.port,
    region: 'us-east-1',
    user: 'postgres',
    database: options.database,
    ssl: false,
    password: async () => options.password || 'postgres',
    maxConnections: 10,
    ...(options.conflictRetries === undefined ? {} : { conflictRetries: options.conflictRetries }),
    ...(options.onConflict === undefined ? {} : { onConflict: options.onConflict }),
  });
}
