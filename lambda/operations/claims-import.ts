import { InboxConfigError, KeyError } from '../inbox/errors.js';
import { described } from '../inbox/handler/option-checks.js';
import { checkKey } from '../inbox/prepare/keys.js';
import { inboxTables } from '../inbox/sql/schema.js';
import type { InboxSession } from '../inbox/transport/session.js';
import { sessionOf } from '../inbox/transport/transport.js';
import type { InboxTransport } from '../inbox/transport/transport.js';

/** Options of {@link importClaims}. */
export interface ClaimsImportOptions {
  /** The transport to run on (`dataApi({...})`, `postgres(pool)`, `dsql({...})`). */
  readonly session: InboxTransport;
  /** The hand-rolled table, as `schema.table` in lower case: `public.processed_messages`. */
  readonly from: string;
  /**
   * The column holding each processed message's key: `message_id`. Read as text, so it must be of a type whose
   * text is the key the consumer computes: text, varchar, uuid or an integer type (a numeric keeps its scale,
   * `417.0`, and a char(n) its padding: cast it in a view of your own, and import from that).
   */
  readonly keyColumn: string;
  /**
   * Only the rows whose `column` (as text) equals `equals`: for a table several consumers share, such as
   * `processed_messages(consumer, message_id)`. Another consumer's keys, imported, would make this consumer's
   * messages with those keys duplicates, acknowledged and never applied.
   * @default every row
   */
  readonly where?: { readonly column: string; readonly equals: string } | undefined;
  /** The consumer the claims are for: the `consumer` given to `inbox()`. */
  readonly consumer: string;
  /**
   * How an old key becomes the key the new consumer claims under: `{key}` stands for the old one, e.g.
   * `order:{key}` when the new key function returns `order:` and the order id.
   * @default '{key}' (the same key)
   */
  readonly keyTemplate?: string | undefined;
  /** The inbox's schema. @default 'inbox' */
  readonly schema?: string | undefined;
  /** Keys read and inserted per statement. @default 1000 */
  readonly batchSize?: number | undefined;
  /** Count what would be imported; insert nothing. @default false */
  readonly dryRun?: boolean | undefined;
}

/** What an import did (or, on a dry run, would do). */
export interface ClaimsImportReport {
  /** Rows read from the old table. */
  readonly read: number;
  /** Claims inserted (on a dry run: that would be). */
  readonly imported: number;
  /** Keys the consumer had claimed already: imported before, or processed by the new consumer. */
  readonly alreadyClaimed: number;
  /** Keys no consumer could claim under (empty, over 512 bytes, a control character): not imported. */
  readonly refused: number;
  /** The first refused keys, with why (at most 10). */
  readonly refusals: readonly { readonly key: string; readonly reason: string }[];
}

const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;
const MAX_REFUSALS_SHOWN = 10;

// Keyset pagination on the key's text form: the same expression orders and bounds the batches, so every row
// is read once whatever the column's type; on a text column it is the column itself, and its index serves.
const READ_BATCH_SQL = (table: string, column: string, where: string | undefined) =>
  `SELECT "${column}"::text AS key FROM ${table}
    WHERE "${column}" IS NOT NULL AND (:after::text IS NULL OR "${column}"::text > :after::text)${where === undefined ? '' : ` AND "${where}"::text = :only`}
    ORDER BY "${column}"::text LIMIT :limit`;

// The key column's type, from the information schema (which DSQL has too).
const COLUMN_TYPE_SQL = `SELECT data_type FROM information_schema.columns
  WHERE table_schema = :schema AND table_name = :table AND column_name = :column`;

/** The types whose text form is the key a consumer computes from the same value. */
const KEY_TYPES = new Set(['text', 'character varying', 'uuid', 'smallint', 'integer', 'bigint']);

// ON CONFLICT DO NOTHING: a key the consumer claimed already (an earlier import, or the new consumer's own
// claim) stays as it is, so an import can run again at any time. The hash stays NULL: the old table knows no
// body, and a claim without a hash is a duplicate for any body.
const INSERT_CLAIMS_SQL = (table: string) =>
  `INSERT INTO ${table} (consumer_name, message_id)
   SELECT :consumer, key FROM jsonb_array_elements_text(:keys::jsonb) AS key
   ON CONFLICT (consumer_name, message_id) DO NOTHING RETURNING message_id`;

const COUNT_NEW_SQL = (table: string) =>
  `SELECT count(*)::int AS new FROM jsonb_array_elements_text(:keys::jsonb) AS key
    WHERE NOT EXISTS (SELECT 1 FROM ${table} c WHERE c.consumer_name = :consumer AND c.message_id = key)`;

/**
 * Seeds the inbox from a hand-rolled dedup table (`processed_messages(message_id text primary key, ...)`), so
 * that a message the old consumer processed is a duplicate for the new one: each row's key, through
 * `keyTemplate`, becomes a claim of `consumer`. In batches of `batchSize`, each one statement that inserts
 * with ON CONFLICT DO NOTHING: idempotent, so run it again after the old consumer stopped, to take the
 * messages it processed during the switch (docs/cut-over.md).
 *
 * Throws InboxConfigError for bad options, and the session's error when a statement fails (the batches
 * before it stay imported; run it again).
 *
 * @example
 * import { importClaims } from 'sqs-inbox/operations';
 * await importClaims({ session, from: 'public.processed_messages', keyColumn: 'message_id', consumer: 'order-worker' });
 * // { read: 120000, imported: 120000, alreadyClaimed: 0, refused: 0, refusals: [] }
 */
export async function importClaims(options: ClaimsImportOptions): Promise<ClaimsImportReport> {
  const { consumer } = options;
  const { from, column, template, batchSize } = checkOptions(options);
  const session = sessionOf(options.session, 'session');
  await checkColumns(session, options);
  const consumed = inboxTables(options.schema ?? 'inbox').consumed;
  const read = READ_BATCH_SQL(from, column, options.where?.column);
  const only = options.where === undefined ? {} : { only: options.where.equals };
  // A dry run counts the claims it would write; a run writes them.
  const write: ClaimsWrite = options.dryRun ? { sql: COUNT_NEW_SQL(consumed), dryRun: true } : { sql: INSERT_CLAIMS_SQL(consumed), dryRun: false };
  const report = { read: 0, imported: 0, alreadyClaimed: 0, refused: 0, refusals: [] as { key: string; reason: string }[] };
  let after: string | null = null;
  for (;;) {
    const rows: Record<string, unknown>[] = (await session.execute(read, { after, limit: batchSize, ...only })).rows;
    if (rows.length === 0) return report;
    after = String(rows.at(-1)!.key);
    const keys: string[] = [];
    for (const row of rows) {
      const key = keyFor(String(row.key), template);
      if (typeof key === 'string') keys.push(key);
      else {
        report.refused += 1;
        if (report.refusals.length < MAX_REFUSALS_SHOWN) report.refusals.push({ key: String(row.key), reason: key.refused });
      }
    }
    report.read += rows.length;
    const fresh = keys.length === 0 ? 0 : await countWritten(session, write, consumer, keys);
    report.imported += fresh;
    report.alreadyClaimed += keys.length - fresh;
  }
}

/** The new key of an old one, or why no consumer could claim under it (the runtime's own key rules). */
function keyFor(old: string, template: string): string | { refused: string } {
  try {
    return checkKey(template.split('{key}').join(old), 'the key template');
  } catch (error) {
    if (error instanceof KeyError) return { refused: error.message };
    throw error;
  }
}

/** The statement that writes a batch's claims, or that counts the claims it would write (a dry run). */
interface ClaimsWrite {
  readonly sql: string;
  readonly dryRun: boolean;
}

async function countWritten(session: InboxSession, { sql, dryRun }: ClaimsWrite, consumer: string, keys: string[]): Promise<number> {
  // One key twice in a batch (two old keys the template maps together) is one claim.
  const unique = [...new Set(keys)];
  const result = await session.execute(sql, { consumer, keys: JSON.stringify(unique) });
  return dryRun ? Number(result.rows[0]!.new) : result.rows.length;
}

/** Refuses a key column whose text is not the key a consumer computes, and a column the table lacks. */
async function checkColumns(session: InboxSession, options: ClaimsImportOptions): Promise<void> {
  const [schema, table] = options.from.split('.');
  const columns: [option: string, column: string][] = [['keyColumn', options.keyColumn]];
  if (options.where !== undefined) columns.push(['where', options.where.column]);
  for (const [option, column] of columns) {
    const [row] = (await session.execute(COLUMN_TYPE_SQL, { schema, table, column })).rows;
    if (row === undefined) throw new InboxConfigError(option, `names no column of ${options.from}: "${column}"`);
    const type = String(row.data_type);
    if (option === 'keyColumn' && !KEY_TYPES.has(type)) {
      throw new InboxConfigError(
        option,
        `is of type ${type}, whose text is not the key a consumer computes (a numeric keeps its scale, a char(n) its padding): import from a view that casts "${column}" to the text your key function returns`,
      );
    }
  }
}

function checkOptions(options: ClaimsImportOptions) {
  if (typeof options.consumer !== 'string' || options.consumer.length === 0) {
    throw new InboxConfigError('consumer', `must be the consumer's name, as given to inbox({ consumer }); got ${described(options.consumer)}`);
  }
  const [schema, table, ...more] = typeof options.from === 'string' ? options.from.split('.') : [];
  if (!schema || !table || more.length > 0 || !IDENTIFIER.test(schema) || !IDENTIFIER.test(table)) {
    throw new InboxConfigError(
      'from',
      `must be the old table as schema.table, each a lower-case identifier (letters, digits, _), e.g. public.processed_messages; got ${described(options.from)}`,
    );
  }
  if (typeof options.keyColumn !== 'string' || !IDENTIFIER.test(options.keyColumn)) {
    throw new InboxConfigError('keyColumn', `must be a lower-case column name (letters, digits, _), e.g. message_id; got ${described(options.keyColumn)}`);
  }
  const { where } = options;
  if (where !== undefined && (typeof where.column !== 'string' || !IDENTIFIER.test(where.column) || typeof where.equals !== 'string')) {
    throw new InboxConfigError(
      'where',
      `must be { column, equals }: a lower-case column name and the text its rows must hold, e.g. { column: 'consumer', equals: 'order-worker' }; got ${described(where)}`,
    );
  }
  const template = options.keyTemplate ?? '{key}';
  if (typeof template !== 'string' || !template.includes('{key}')) {
    throw new InboxConfigError('keyTemplate', `must hold {key}, where the old key goes, e.g. "order:{key}"; got ${described(options.keyTemplate)}`);
  }
  const batchSize = options.batchSize ?? 1000;
  if (!Number.isSafeInteger(batchSize) || batchSize < 1 || batchSize > 10_000) {
    throw new InboxConfigError('batchSize', `must be a whole number from 1 to 10000; got ${described(options.batchSize)}`);
  }
  return { from: `"${schema}"."${table}"`, column: options.keyColumn, template, batchSize };
}
