import type { SqlParams } from '../transport/values.js';
import type { Row } from '../transport/results.js';
import { DatabaseCallError, InboxConfigError } from '../errors.js';
import { scanSql } from '../transport/sql-scanner.js';
import type { InboxTables } from './schema.js';

/**
 * The claim: insert (consumer, key) and learn whether this call inserted it. ON CONFLICT DO NOTHING
 * makes a racing second claim wait for the first transaction, then insert nothing.
 *
 * `existing_sha256` is read in the same statement so that a duplicate costs no extra call. Under READ
 * COMMITTED the statement's snapshot can predate a racing claim that committed while this one waited;
 * then it reads NULL and {@link STORED_HASH_SQL} asks again.
 */
export function claimSql(tables: InboxTables): string {
  return `WITH claim AS (
      INSERT INTO ${tables.consumed} (consumer_name, message_id, payload_sha256)
      VALUES (:inbox_consumer, :inbox_key, :inbox_sha256)
      ON CONFLICT DO NOTHING
      RETURNING true AS claimed
    )
    SELECT coalesce((SELECT claimed FROM claim), false) AS claimed,
           (SELECT payload_sha256 FROM ${tables.consumed}
             WHERE consumer_name = :inbox_consumer AND message_id = :inbox_key) AS existing_sha256${BOUND_LATER_STATEMENTS}`;
}

/**
 * The claim, the first statement of an inbox transaction, also bounds every later one (the effect, the
 * outbox rows): `statement_timeout` for the rest of the transaction (`set_config(..., true)` is
 * `SET LOCAL`), with no call of its own. A statement held on the server (a row lock, a slow plan) is then
 * cancelled by PostgreSQL and answered as a statement error before the client's call timeout: the record
 * fails unambiguously and its transaction rolls back at once, instead of holding the claim's row lock until
 * the Data API's idle expiry. A select-list item runs once for the statement's single row (per row of a batch claim).
 */
const BOUND_LATER_STATEMENTS = `,
           set_config('statement_timeout', :inbox_statement_timeout, true) AS inbox_statement_timeout`;

/**
 * How long PostgreSQL may run one statement of an inbox transaction: four fifths of the client's call
 * timeout, which leaves the server time to cancel the statement and answer before the client gives up.
 */
export function serverStatementTimeoutMs(callTimeoutMs: number): number {
  return Math.max(1, Math.floor((callTimeoutMs * 4) / 5));
}

/** The parameter of {@link claimSql} and {@link batchClaimSql} that bounds the transaction's later statements. */
export function statementBound(callTimeoutMs: number): SqlParams {
  return { inbox_statement_timeout: String(serverStatementTimeoutMs(callTimeoutMs)) };
}

/**
 * The claim riding on the effect's first statement: a plain INSERT (no ON CONFLICT) in a data-modifying
 * CTE, which PostgreSQL runs whether or not the statement reads it. A key claimed already makes the whole
 * statement fail with a unique violation on the inbox's primary key ({@link isClaimTaken}), so a duplicate
 * applies nothing; a concurrent claim makes it wait for that transaction, as `ON CONFLICT` does. Returns
 * undefined for a statement that cannot carry a CTE (not SELECT, INSERT, UPDATE, DELETE, MERGE, VALUES,
 * TABLE or WITH ...): the claim then goes alone, before it.
 */
export function claimRidingSql(tables: InboxTables, userSql: string): string | undefined {
  const [first] = scanSql(userSql).statements;
  // A text of comments alone is no statement to carry it.
  if (first === undefined) return undefined;
  const leading = first.parts[0]!.words;
  const [keyword, second] = leading.map(({ word }) => word);
  // The source row also bounds the transaction's later statements, as the claim alone does (set_config
  // runs once, for the one row; the carrying statement itself started under the old timeout).
  const claim = `inbox_claim AS (
      INSERT INTO ${tables.consumed} (consumer_name, message_id, payload_sha256)
      SELECT :inbox_consumer, :inbox_key, :inbox_sha256
        FROM (SELECT set_config('statement_timeout', :inbox_statement_timeout, true)) AS inbox_bound
      RETURNING message_id
    )`;
  if (keyword === 'with') {
    // The claim goes first in the statement's own WITH list (after RECURSIVE, which applies to the whole list).
    const { end } = leading[second === 'recursive' ? 1 : 0]!;
    return `${userSql.slice(0, end)} ${claim}, ${userSql.slice(end)}`;
  }
  // Comments before the statement stay where they are: between WITH's list and the statement, as anywhere.
  return CTE_STATEMENTS.has(keyword) ? `WITH ${claim} ${userSql}` : undefined;
}

const CTE_STATEMENTS = new Set<string | undefined>(['select', 'insert', 'update', 'delete', 'merge', 'values', 'table']);

/**
 * True when a statement failed because its riding claim found the key claimed: PostgreSQL's unique
 * violation (SQLSTATE 23505) on the inbox table's primary key, which the Data API words as
 * (`ERROR: duplicate key value violates unique constraint "consumed_message_pkey"; ...; SQLState: 23505`).
 */
export function isClaimTaken(error: unknown): boolean {
  // PostgreSQL reports a SQLSTATE only for an error of the statement itself, so 23505 implies a `statement` failure.
  return error instanceof DatabaseCallError && error.sqlState === '23505' && error.message.includes('"consumed_message_pkey"');
}

/** Reads the hash stored with a claim, for a duplicate whose claim statement could not see it. */
export function storedHashSql(tables: InboxTables): string {
  return `SELECT payload_sha256 AS existing_sha256 FROM ${tables.consumed}
           WHERE consumer_name = :inbox_consumer AND message_id = :inbox_key`;
}

/**
 * Single-statement mode: the user's data-modifying statement runs as a CTE beside the claim, in one
 * autocommit statement. It sees the claim as the CTE `claimed` and must gate its effect on it
 * (`... AND EXISTS (SELECT 1 FROM claimed)`), since all sub-statements run whatever the claim did.
 */
export function gatedSql(tables: InboxTables, userSql: string): string {
  return `WITH claimed AS (
      INSERT INTO ${tables.consumed} (consumer_name, message_id, payload_sha256)
      VALUES (:inbox_consumer, :inbox_key, :inbox_sha256)
      ON CONFLICT DO NOTHING
      RETURNING message_id
    ), effect AS (
      ${userSql}
    )
    SELECT EXISTS (SELECT 1 FROM claimed) AS claimed,
           (SELECT payload_sha256 FROM ${tables.consumed}
             WHERE consumer_name = :inbox_consumer AND message_id = :inbox_key) AS existing_sha256`;
}

/**
 * Replaying a parked message in single-statement mode: its claim is already made in the replay's
 * transaction, so `claimed` is simply the key, and the user's statement runs exactly as it would have.
 */
export function replayGatedSql(userSql: string): string {
  return `WITH claimed AS (
      SELECT :inbox_key::text AS message_id
    ), effect AS (
      ${userSql}
    )
    SELECT true AS claimed`;
}

/**
 * Parking: claim the key and store the record in one statement, so a parked record and its claim commit
 * together, and the parked row that made the claim is the only one whose replay may apply the key's effect.
 * A record is its id and its payload's hash: one stored already (a redelivery of a record parked without a
 * claim) is not stored again, and claims nothing. A record without an id (`:inbox_message_id` empty: Lambda
 * sends none, a hand-built event can) cannot be told from another with the same payload, so each of its
 * parkings is stored, its hash left NULL, which the unique index never matches. When `:inbox_claim` is true and the key was already
 * claimed, nothing is parked: the caller reads the stored hash and decides between a duplicate and a
 * collision. With `:inbox_claim` false (no usable key, or a collision) the record is parked without a claim.
 * `stored` says whether the record is in the table now: a concurrent parking of the same record, committed
 * after this statement began, can make the insert store nothing. A claim made without its row would keep
 * the key's effect from ever applying, so the guard then fails the statement, claim and all.
 */
export function parkSql(tables: InboxTables): string {
  return `WITH earlier AS (
      SELECT id FROM ${tables.parked}
       WHERE consumer_name = :inbox_consumer AND sqs_message_id = :inbox_message_id AND payload_sha256 = :inbox_sha256 AND :inbox_message_id <> ''
    ), claimed AS (
      INSERT INTO ${tables.consumed} (consumer_name, message_id, payload_sha256)
      SELECT :inbox_consumer, :inbox_key, :inbox_sha256 WHERE :inbox_claim AND NOT EXISTS (SELECT 1 FROM earlier)
      ON CONFLICT DO NOTHING
      RETURNING message_id
    ), parked AS (
      INSERT INTO ${tables.parked}
        (consumer_name, sqs_message_id, message_key, payload, payload_sha256, attributes, error_class, error_message, attempt, owns_claim)
      SELECT :inbox_consumer, :inbox_message_id, :inbox_key, :inbox_payload, CASE WHEN :inbox_message_id <> '' THEN :inbox_sha256 END,
             :inbox_attributes, :inbox_error_class,
             :inbox_error_message, :inbox_attempt, EXISTS (SELECT 1 FROM claimed)
      WHERE NOT EXISTS (SELECT 1 FROM earlier) AND (EXISTS (SELECT 1 FROM claimed) OR NOT :inbox_claim)
      ON CONFLICT DO NOTHING
      RETURNING id
    )
    SELECT EXISTS (SELECT 1 FROM claimed) AS claimed,
           EXISTS (SELECT 1 FROM earlier) OR EXISTS (SELECT 1 FROM parked) AS stored,
           (SELECT payload_sha256 FROM ${tables.consumed}
             WHERE consumer_name = :inbox_consumer AND message_id = :inbox_key::text) AS existing_sha256,
           -- A scalar subquery is not folded at plan time, so the failing cast runs only when the claim lost its row.
           CASE WHEN EXISTS (SELECT 1 FROM claimed) AND NOT EXISTS (SELECT 1 FROM parked)
                THEN (SELECT 'sqs-inbox: a parking claim without its parked row')::int END AS inbox_guard`;
}

/** The claim's parameters. */
export function claimParams(consumer: string, key: string | null, sha256: Uint8Array): SqlParams {
  return { inbox_consumer: consumer, inbox_key: key, inbox_sha256: sha256 };
}

/** How a claim came out. */
export interface ClaimOutcome {
  /** This statement inserted the row: apply the effect. */
  readonly claimed: boolean;
  /** The hash stored by the earlier claim, when this one found the row there (null if not visible yet). */
  readonly existingSha256: Uint8Array | null;
}

/** Reads the claim's single row. */
export function readClaim(rows: readonly Row[]): ClaimOutcome {
  const row = rows[0];
  if (!row) throw new Error('the claim statement returned no row');
  return {
    claimed: row.claimed === true,
    existingSha256: (row.existing_sha256 as Uint8Array | null | undefined) ?? null,
  };
}

/** True when two hashes hold the same bytes. */
export function sameHash(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.from(a).equals(Buffer.from(b));
}

const RESERVED_PARAM = /^inbox_/;

/**
 * Checks a single-statement mode statement: it must mention `claimed` (or it could apply its effect on
 * every duplicate), hold one statement, and leave the `inbox_` parameter names to the claim.
 */
export function checkGatedStatement(sql: unknown, params: SqlParams | undefined, option: string): string {
  if (typeof sql !== 'string' || sql.trim().length === 0) {
    throw new InboxConfigError(option, 'must give a non-empty `sql` string');
  }
  // `claimed` as a word, outside string literals, quoted identifiers and comments: `status = 'claimed'` gates nothing.
  const scanned = scanSql(sql);
  if (!scanned.words.has('claimed')) {
    throw new InboxConfigError(
      option,
      'the statement never mentions `claimed`, so it would apply its effect to duplicates too. Gate it on the claim, ' +
        "e.g. `UPDATE orders SET status = 'shipped' WHERE order_id = :orderId AND EXISTS (SELECT 1 FROM claimed)` " +
        'or `INSERT INTO shipments (order_id) SELECT :orderId FROM claimed`',
    );
  }
  if (scanned.multipleStatements) {
    throw new InboxConfigError(option, 'holds more than one statement; the Data API runs one statement per call');
  }
  for (const name of Object.keys(params ?? {})) {
    if (RESERVED_PARAM.test(name)) {
      throw new InboxConfigError(option, `parameter ":${name}" uses the prefix inbox_, which the claim reserves; rename it`);
    }
  }
  // Without the `;` that may end it, and what follows that: the statement goes inside a CTE.
  return scanned.statements[0]!.text;
}

/**
 * The batch's records as the claim's input: one JSON parameter `:inbox_batch` (the Data API has no array
 * parameters), one object per record. `sha256` is hex; the statement decodes it.
 */
function batchInput(tables: InboxTables, columns: string): string {
  return `inbox_input AS (
      SELECT * FROM jsonb_to_recordset(:inbox_batch::jsonb) AS i(${columns})
    ), inbox_claim AS (
      INSERT INTO ${tables.consumed} (consumer_name, message_id, payload_sha256)
      SELECT :inbox_consumer, message_key, decode(sha256, 'hex') FROM inbox_input
      -- One order for every writer: two batches claiming overlapping keys wait for each other, never in a cycle.
      ORDER BY message_key
      ON CONFLICT DO NOTHING
      RETURNING message_id
    )`;
}

/**
 * Per record of the batch, in batch order: its position, whether this statement claimed it, and the hash
 * stored by an earlier claim (NULL for a claim this statement made, or one it waited for, as in {@link claimSql}).
 */
function batchVerdicts(tables: InboxTables, extra: string): string {
  return `SELECT i.position, c.message_id IS NOT NULL AS claimed, e.payload_sha256 AS existing_sha256${extra}
      FROM inbox_input i
      LEFT JOIN inbox_claim c ON c.message_id = i.message_key
      LEFT JOIN ${tables.consumed} e ON e.consumer_name = :inbox_consumer AND e.message_id = i.message_key
     ORDER BY i.position`;
}

/** Batch transaction mode: claims every record of the batch in one statement, inside the batch's transaction. */
export function batchClaimSql(tables: InboxTables): string {
  return `WITH ${batchInput(tables, 'position int, message_key text, sha256 text')}
    ${batchVerdicts(tables, BOUND_LATER_STATEMENTS)}`;
}

/**
 * What the batch input carries, in place of the base64 of its JSON, for a body JSON.stringify refuses
 * (nested deeper than its stack, a BigInt, a cycle): it fails only a statement that reads `body`, whose
 * refusal quotes it, so a statement that never does applies the message all the same.
 */
export const UNWRITABLE_BODY = 'sqs-inbox: the body parse returned cannot be written as JSON';

/** The columns the CTE `claimed` offers a batch statement. */
export const BATCH_CLAIMED_COLUMNS = 'message_key, body, group_id, sqs_message_id, attempt, position';

/**
 * The batch statement's input: one row per record. The record's own text (its parsed body as JSON, its
 * group and its id) travels as base64 of its UTF-8, and `claimed` decodes it: a text PostgreSQL cannot
 * store (U+0000, a lone surrogate escaped in JSON) then fails only the statement that reads it, where a
 * `jsonb` input would refuse the whole batch, and base64 keeps a body's size the same whatever it holds.
 * A body JSON.stringify refuses comes as {@link UNWRITABLE_BODY} instead.
 */
const BATCH_INPUT_COLUMNS = 'position int, message_key text, sha256 text, body text, group_id text, sqs_message_id text, attempt int';

/**
 * `claimed` over the input rows `from`: NOT MATERIALIZED, so that PostgreSQL decodes a column only for the
 * rows and columns the user's statement reads (a statement that never reads `body` never decodes one).
 */
function claimedFrom(from: string): string {
  const text = (column: string) => `convert_from(decode(i.${column}, 'base64'), 'UTF8')`;
  // Cast to int, UNWRITABLE_BODY fails the statement that reads it with a refusal that quotes it.
  const body = `CASE WHEN i.body = '${UNWRITABLE_BODY}' THEN i.body::int::text ELSE ${text('body')} END`;
  return `claimed AS NOT MATERIALIZED (
      SELECT i.message_key, (${body})::jsonb AS body, ${text('group_id')} AS group_id, ${text('sqs_message_id')} AS sqs_message_id,
             i.attempt, i.position
        FROM ${from}
    )`;
}

/**
 * Batch single-statement mode: the claim of every record and the user's set-based statement, in ONE
 * autocommit statement. The statement reads `claimed` (the records this statement claimed). With
 * `:inbox_strict`, a record whose key an earlier claim holds with another body (a collision) makes the
 * whole statement fail, its effect with it: the caller then runs each record alone, so that the
 * collision fails alone and, on a FIFO queue, nothing after it in its group is applied.
 */
export function batchGatedSql(tables: InboxTables, userSql: string): string {
  return `WITH ${batchInput(tables, BATCH_INPUT_COLUMNS)},
    ${claimedFrom('inbox_input i JOIN inbox_claim c ON c.message_id = i.message_key')}, effect AS (
      ${userSql}
    ), inbox_collision AS (
      SELECT i.message_key FROM inbox_input i
        JOIN ${tables.consumed} e ON e.consumer_name = :inbox_consumer AND e.message_id = i.message_key
       WHERE e.payload_sha256 IS NOT NULL AND e.payload_sha256 <> decode(i.sha256, 'hex')
    )
    ${batchVerdicts(
      tables,
      // A scalar subquery is not folded at plan time, so the failing cast runs only when a collision exists.
      `,
           CASE WHEN :inbox_strict AND EXISTS (SELECT 1 FROM inbox_collision)
                THEN (SELECT 'sqs-inbox: key collision on ' || message_key FROM inbox_collision LIMIT 1)::int END AS inbox_guard`,
    )}`;
}

/** Replaying a parked message in batch single-statement mode: `claimed` is that one message. */
export function replayBatchGatedSql(userSql: string): string {
  return `WITH ${claimedFrom(`jsonb_to_recordset(:inbox_batch::jsonb) AS i(${BATCH_INPUT_COLUMNS})`)}, effect AS (
      ${userSql}
    )
    SELECT true AS claimed`;
}

/** The batch-level duplicate filter: which of these keys (`:inbox_keys`, a JSON array) are claimed, with their hashes. */
export function knownClaimsSql(tables: InboxTables): string {
  return `SELECT message_id AS message_key, payload_sha256 AS existing_sha256 FROM ${tables.consumed}
           WHERE consumer_name = :inbox_consumer
             AND message_id IN (SELECT jsonb_array_elements_text(:inbox_keys::jsonb))`;
}

/** How one record of a batch claim came out. */
export interface BatchClaimOutcome extends ClaimOutcome {
  /** The record's position in the input. */
  readonly position: number;
}

/** Reads the rows of {@link batchClaimSql} or {@link batchGatedSql}: one per record, in input order. */
export function readBatchClaims(rows: readonly Row[]): BatchClaimOutcome[] {
  return rows.map((row) => ({
    position: Number(row.position),
    claimed: row.claimed === true,
    existingSha256: (row.existing_sha256 as Uint8Array | null | undefined) ?? null,
  }));
}
