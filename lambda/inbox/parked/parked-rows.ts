import type { SqlParams } from '../data-api/parameters.js';
import { fittingRuns } from '../data-api/request-size.js';
import type { StatementResult } from '../data-api/results.js';
import { bytesText } from '../sources/text-bytes.js';
import type { InboxTables } from '../sql/schema.js';
import type { ParkedMessage } from './store.js';

/** Runs one statement: a session's autocommit call, or one inside a transaction. */
export type ReadStatement = (sql: string, params: SqlParams) => Promise<StatementResult>;

/**
 * Every column a parked message is read from but its payload, which {@link readParked} reads apart: for
 * `SELECT ${PARKED_COLUMNS} FROM parked_message ...`.
 */
export const PARKED_COLUMNS =
  'id, sqs_message_id, message_key, attributes, error_class, error_message, attempt, parked_at, replayed_at, redriven_at, redriven_to, discarded_at, owns_claim, ' +
  `octet_length(${payloadSql('')}) AS payload_bytes`;

/**
 * The payload a parked row holds: its bytes, or, for a row parked before the inbox's migration 6, its
 * body's text as UTF-8. `alias` qualifies the columns.
 */
function payloadSql(alias: string): string {
  return `coalesce(${alias}payload, convert_to(${alias}body, 'UTF8'))`;
}

/**
 * The most payload bytes one read brings back: the Data API answers at most 1 MiB, and carries bytes as
 * base64 (a third more), so a 1 MiB payload takes three reads.
 */
export const PAYLOAD_PIECE_BYTES = 512 * 1024;

/**
 * The parked messages `sql` selects (it names {@link PARKED_COLUMNS}), in its order, each with its payload:
 * read apart, several small ones to a call, a large one in pieces of {@link PAYLOAD_PIECE_BYTES}, so that no
 * answer outgrows what the Data API returns. Inside a transaction, `read` runs in it, and the payloads are
 * those of the rows it locked.
 */
export async function readParked(read: ReadStatement, tables: InboxTables, sql: string, params: SqlParams): Promise<ParkedMessage[]> {
  const { rows } = await read(sql, params);
  const pieces = new Map<number, Uint8Array[]>(rows.map((row) => [Number(row.id), []]));
  const bytes = (row: Record<string, unknown>) => Number(row.payload_bytes);
  const small = rows.filter((row) => bytes(row) <= PAYLOAD_PIECE_BYTES);
  for (const run of fittingRuns(small, (run) => run.reduce((total, row) => total + bytes(row), 0) <= PAYLOAD_PIECE_BYTES)) {
    const { rows: found } = await read(`SELECT p.id, ${payloadSql('p.')} AS piece FROM ${tables.parked} p WHERE p.id = ANY(:ids::bigint[])`, {
      ids: `{${run.map((row) => Number(row.id)).join(',')}}`,
    });
    for (const piece of found) pieces.get(Number(piece.id))!.push(piece.piece as Uint8Array);
  }
  for (const row of rows.filter((row) => bytes(row) > PAYLOAD_PIECE_BYTES)) {
    for (let from = 0; from < bytes(row); from += PAYLOAD_PIECE_BYTES) {
      const { rows: found } = await read(`SELECT substring(${payloadSql('')} FROM :from::int FOR :count::int) AS piece FROM ${tables.parked} WHERE id = :id`, {
        id: Number(row.id),
        from: from + 1,
        count: PAYLOAD_PIECE_BYTES,
      });
      pieces.get(Number(row.id))!.push(found[0]!.piece as Uint8Array);
    }
  }
  // A plain Uint8Array, never a Buffer, which would write itself into JSON as an object.
  return rows.map((row) => toParked(row, new Uint8Array(Buffer.concat(pieces.get(Number(row.id))!))));
}

/** A parked row as read with {@link PARKED_COLUMNS}, and its payload. */
function toParked(row: Record<string, unknown>, payload: Uint8Array): ParkedMessage {
  const date = (value: unknown) => (value as Date | null | undefined) ?? null;
  const replayedAt = date(row.replayed_at);
  const redrivenAt = date(row.redriven_at);
  const discardedAt = date(row.discarded_at);
  return {
    id: Number(row.id),
    sqsMessageId: String(row.sqs_message_id),
    key: (row.message_key as string | null) ?? null,
    body: bytesText(payload),
    payload,
    attributes: row.attributes as ParkedMessage['attributes'],
    errorClass: String(row.error_class),
    errorMessage: String(row.error_message),
    attempt: Number(row.attempt),
    parkedAt: row.parked_at as Date,
    replayedAt,
    redrivenAt,
    redrivenTo: (row.redriven_to as string | null | undefined) ?? null,
    discardedAt,
    status: replayedAt ? 'replayed' : redrivenAt ? 'redriven' : discardedAt ? 'discarded' : 'parked',
    ownsClaim: row.owns_claim === true,
  };
}
