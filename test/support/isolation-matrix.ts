import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import type { InboxSession } from '../../lambda/inbox/transport/session.js';

/**
 * The isolation matrices of docs/stack.md, read from the doc itself so that the doc and the tests cannot drift:
 * each table follows an `<!-- isolation-matrix:<name> -->` marker; its first two columns are the table (or function)
 * and the operation, every further column a role.
 */

/** What a role may do to the rows of one table: every consumer's, its own consumer's, or nothing. */
export type Access = 'allowed' | 'own consumer' | 'denied';

/** One cell: the access, and for an UPDATE the only columns it reaches (undefined: every column). */
export interface Cell {
  readonly access: Access;
  readonly columns?: readonly string[] | undefined;
}

export interface MatrixRow {
  /** `consumed_message`, ..., or a function's name. */
  readonly object: string;
  /** SELECT, INSERT, UPDATE, DELETE, or EXECUTE for a function. */
  readonly operation: string;
  /** By role, as the column headers name them. */
  readonly cells: Readonly<Record<string, Cell>>;
}

export interface Matrix {
  readonly roles: readonly string[];
  readonly rows: readonly MatrixRow[];
}

const ROOT = join(import.meta.dirname, '../..');
const CELL = /^(allowed|own consumer|denied)(?: \(([a-z_, ]+)\))?$/;

/** The matrix after `<!-- isolation-matrix:<name> -->` in docs/stack.md. */
export function readMatrix(name: string): Matrix {
  const doc = readFileSync(join(ROOT, 'docs/stack.md'), 'utf8');
  const marker = `<!-- isolation-matrix:${name} -->`;
  const start = doc.indexOf(marker);
  if (start < 0) throw new Error(`docs/stack.md has no ${marker}`);
  const lines = doc
    .slice(start + marker.length)
    .trimStart()
    .split('\n');
  const table = lines.slice(
    0,
    lines.findIndex((line) => !line.startsWith('|')),
  );
  const split = (line: string) =>
    line
      .slice(1, -1)
      .split('|')
      .map((cell) => cell.trim().replace(/`/g, ''));
  const [header, , ...body] = table.map(split);
  const roles = header!.slice(2);
  const rows = body.map((cells) => {
    const [object, operation, ...rest] = cells as [string, string, ...string[]];
    const parsed = rest.map((text, index) => {
      const match = CELL.exec(text);
      if (match === null) throw new Error(`docs/stack.md ${name} matrix, ${object} ${operation}, ${roles[index]}: "${text}" is not a cell`);
      return [roles[index]!, { access: match[1] as Access, columns: match[2]?.split(',').map((column) => column.trim()) }] as const;
    });
    return { object, operation, cells: Object.fromEntries(parsed) };
  });
  return { roles, rows };
}

/** How a statement fared: it reached rows, it reached none (or an INSERT was refused by a policy), or it was refused. */
export type Outcome = 'reached' | 'none' | 'denied';

/**
 * Runs `sql` in a transaction that is rolled back, whatever happens, so that no probe changes what the next one sees.
 * Refusals are told apart by PostgreSQL's own messages: a privilege check (`permission denied`) or a row-level
 * security policy's check on a new row. Anything else is a fault of the probe, and fails the test.
 */
export async function attempt(session: InboxSession, sql: string, params: Record<string, string | number> = {}): Promise<Outcome> {
  const named = Object.fromEntries(Object.entries(params).filter(([name]) => new RegExp(`(?<!:):${name}\\b`).test(sql)));
  const tx = await session.transaction();
  try {
    const { rows, updated } = await tx.execute(sql, named);
    return rows.length > 0 || updated > 0 ? 'reached' : 'none';
  } catch (error) {
    const message = (error as Error).message;
    if (/permission denied/.test(message)) return 'denied';
    if (/new row violates row-level security policy/.test(message)) return 'none';
    throw new Error(`${sql}: ${message}`, { cause: error });
  } finally {
    await tx.rollback().catch(() => {});
  }
}

/** How a role reaches the rows of one consumer (`rowsOf`), given its cell. */
export function expected(cell: Cell, rowsOf: string | undefined, actsFor: string | undefined): Outcome {
  if (cell.access === 'denied') return 'denied';
  if (cell.access === 'allowed') return 'reached';
  if (actsFor === undefined || rowsOf === undefined) throw new Error('an "own consumer" cell for a role, or a table, of no consumer');
  return rowsOf === actsFor ? 'reached' : 'none';
}

/** The statements that probe one table: the consumer column its rows carry (if any), and an INSERT of a fresh row. */
export interface TableProbe {
  /** The column naming the consumer a row belongs to; undefined for a table of no consumer. */
  readonly consumerColumn?: string | undefined;
  /** `INSERT INTO <table> ...` of a fresh row for `:consumer`, unique by `:key`. */
  readonly insert: (table: string) => string;
}

/** Every table of the inbox schema, as the matrices name them. */
export const TABLE_PROBES: Readonly<Record<string, TableProbe>> = {
  consumed_message: { consumerColumn: 'consumer_name', insert: (t) => `INSERT INTO ${t} (consumer_name, message_id) VALUES (:consumer, :key)` },
  parked_message: {
    consumerColumn: 'consumer_name',
    insert: (t) =>
      `INSERT INTO ${t} (consumer_name, sqs_message_id, body, attributes, error_class, error_message, attempt)
       VALUES (:consumer, :key, 'probe', '{}', 'PermanentError', 'probe', 1)`,
  },
  outbox_message: {
    consumerColumn: 'consumer_name',
    insert: (t) =>
      `INSERT INTO ${t} (consumer_name, message_key, position, idempotency_key, destination, body)
       VALUES (:consumer, 'probe', 0, :key, 'https://sqs.us-east-1.amazonaws.com/123456789012/probe', 'probe')`,
  },
  role_scope: { consumerColumn: 'consumer_name', insert: (t) => `INSERT INTO ${t} (role_name, consumer_name) VALUES (:key, :consumer)` },
  schema_migration: { insert: (t) => `INSERT INTO ${t} (set_name, version, name) VALUES (:key, 1, 'probe')` },
};

/** A role as the matrix's column names it, signed in. */
export interface Actor {
  readonly session: InboxSession;
  /** The consumer the role acts for, whose rows "own consumer" means. */
  readonly consumer?: string | undefined;
}

/** What {@link checkCell} needs of the database under test. */
export interface MatrixDatabase {
  /** The inbox schema, unquoted. */
  readonly schema: string;
  /** The consumers with rows in every table that carries a consumer (the rows a cell is checked against). */
  readonly consumers: readonly string[];
  /** Each table's columns, for the UPDATE probes. */
  readonly columns: Readonly<Record<string, readonly string[]>>;
  /** A call of a function the matrix names, as a SELECT. */
  readonly call: (fn: string) => string;
}

let probes = 0;

/**
 * Checks one cell: the statement of its operation, as the role, against the rows of each consumer (or once, for a table
 * of no consumer), and for an UPDATE against every column of the table. Returns the probes' outcomes as
 * `[what, expected, got]`, so that one assertion shows every disagreement of the cell.
 */
export async function checkCell(db: MatrixDatabase, row: MatrixRow, cell: Cell, actor: Actor): Promise<[string, Outcome, Outcome][]> {
  const results: [string, Outcome, Outcome][] = [];
  const table = `"${db.schema}"."${row.object}"`;
  if (row.operation === 'EXECUTE') {
    results.push([row.object, expected(cell, undefined, undefined), await attempt(actor.session, db.call(row.object))]);
    return results;
  }
  const probe = TABLE_PROBES[row.object];
  expect(probe, `no probe for table ${row.object}`).toBeDefined();
  const owners: (string | undefined)[] = probe!.consumerColumn === undefined ? [undefined] : [...db.consumers];
  for (const owner of owners) {
    const where = probe!.consumerColumn === undefined ? 'true' : `${probe!.consumerColumn} = :consumer`;
    const params = { consumer: owner ?? '', key: `probe-${process.pid}-${probes++}` };
    const want = expected(cell, owner, actor.consumer);
    const label = (what: string) => `${what} of ${owner ?? 'the table'}'s rows`;
    switch (row.operation) {
      case 'SELECT':
        results.push([label('SELECT *'), want, await attempt(actor.session, `SELECT * FROM ${table} WHERE ${where}`, params)]);
        break;
      case 'INSERT':
        results.push([label('INSERT'), want, await attempt(actor.session, probe!.insert(table), params)]);
        break;
      case 'DELETE':
        results.push([label('DELETE'), want, await attempt(actor.session, `DELETE FROM ${table} WHERE ${where}`, params)]);
        break;
      case 'UPDATE':
        for (const column of db.columns[row.object]!) {
          const reaches = cell.columns === undefined || cell.columns.includes(column);
          const wantColumn = reaches ? want : 'denied';
          results.push([
            label(`UPDATE ${column}`),
            wantColumn,
            await attempt(actor.session, `UPDATE ${table} SET "${column}" = "${column}" WHERE ${where}`, params),
          ]);
        }
        break;
      default:
        throw new Error(`unknown operation ${row.operation} in the matrix`);
    }
  }
  return results;
}

/** The disagreements of a cell's probes, as lines to read in a failure. */
export function disagreements(results: readonly [string, Outcome, Outcome][]): string[] {
  return results.filter(([, want, got]) => want !== got).map(([what, want, got]) => `${what}: expected ${want}, got ${got}`);
}

/** The FIFO queue the seeded outbox rows, and the function's probe, name. */
export const MATRIX_FIFO = 'https://sqs.us-east-1.amazonaws.com/123456789012/isolation.fifo';

/** Runs a statement as the superuser (or DSQL's stand-in for admin), outside every role under test. */
export type Query = (sql: string, params?: unknown[]) => Promise<{ rows: Record<string, unknown>[] }>;

/**
 * The rows the cells are checked against: for each consumer, one claim, one parked message and one unsent outbox row
 * of the FIFO group `seed`, each with a body naming the consumer.
 */
export async function seedConsumerRows(query: Query, consumers: readonly string[]): Promise<void> {
  for (const consumer of consumers) {
    await query('INSERT INTO inbox.consumed_message (consumer_name, message_id) VALUES ($1, $2)', [consumer, `m-${consumer}`]);
    await query(
      `INSERT INTO inbox.parked_message (consumer_name, sqs_message_id, body, attributes, error_class, error_message, attempt)
       VALUES ($1, $2, $3, '{}', 'PermanentError', 'no', 1)`,
      [consumer, `p-${consumer}`, `${consumer}'s parked body`],
    );
    await query(
      `INSERT INTO inbox.outbox_message (consumer_name, message_key, position, idempotency_key, destination, body, group_id)
       VALUES ($1, 'm', 0, $2, $3, $4, 'seed')`,
      [consumer, `o-${consumer}`, MATRIX_FIFO, `${consumer}'s outbox body`],
    );
  }
}

/**
 * The tests of one matrix, inside the caller's `describe`: that it names exactly the roles of `actors` and every table
 * and function of the inbox schema with each of its operations (so a new one cannot go unlisted), then one test per
 * cell. The consumers' rows must be seeded ({@link seedConsumerRows}).
 */
export function matrixTests(
  matrix: Matrix,
  options: { readonly actors: Readonly<Record<string, () => Actor>>; readonly query: () => Query; readonly consumers: readonly string[] },
): void {
  it('names every role, and every table and function of the inbox schema with each of its operations', async () => {
    expect(matrix.roles).toEqual(Object.keys(options.actors));
    const { rows } = await options.query()(
      `SELECT table_name AS object, 'table' AS kind FROM information_schema.tables WHERE table_schema = 'inbox'
       UNION ALL
       SELECT p.proname, 'function' FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'inbox'`,
    );
    const inCatalog = rows.flatMap((row) =>
      row.kind === 'function' ? [`${row.object} EXECUTE`] : ['SELECT', 'INSERT', 'UPDATE', 'DELETE'].map((op) => `${row.object} ${op}`),
    );
    expect(matrix.rows.map((row) => `${row.object} ${row.operation}`).sort()).toEqual(inCatalog.sort());
  });

  const cells = matrix.rows.flatMap((row) => matrix.roles.map((role) => [row.object, row.operation, role, row] as const));
  it.each(cells)('%s %s as %s', async (_object, _operation, role, row) => {
    const { rows } = await options.query()(
      "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'inbox' ORDER BY table_name, ordinal_position",
    );
    const columns: Record<string, string[]> = {};
    for (const column of rows) (columns[String(column.table_name)] ??= []).push(String(column.column_name));
    const db: MatrixDatabase = {
      schema: 'inbox',
      consumers: options.consumers,
      columns,
      call: (fn) => `SELECT "inbox"."${fn}"('${MATRIX_FIFO}', 'seed', 1, '{}'::bigint[]) AS held`,
    };
    const results = await checkCell(db, row, row.cells[role]!, options.actors[role]!());
    expect(results.length).toBeGreaterThan(0);
    expect(disagreements(results)).toEqual([]);
  });
}
