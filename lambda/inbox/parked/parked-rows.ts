import type { SqlParams } from '../transport/values.js';
import { readLargeValues } from '../sql/large-values.js';
import type { ReadStatement } from '../sql/large-values.js';
import { bytesText } from '../sources/text-bytes.js';
import type { InboxTables } from '../sql/schema.js';
import type { ParkedMessage } from './store.js';

/** The payload a parked row holds: its bytes, or, for a row parked before the inbox's migration 6, its body's text as UTF-8. */
const PAYLOAD = "coalesce(payload, convert_to(body, 'UTF8'))";

/**
 * Every column a parked message is read from but its payload, which {@link readParked} reads apart: for
 * `SELECT ${PARKED_COLUMNS} FROM parked_message ...`.
 */
export const PARKED_COLUMNS =
  'id, sqs_message_id, message_key, attributes, error_class, error_message, attempt, parked_at, replayed_at, redriven_at, redriven_to, discarded_at, owns_claim, ' +
  `octet_length(${PAYLOAD}) AS payload_bytes`;

/**
 * The parked messages `sql` selects (it names {@link PARKED_COLUMNS}), in its order, each with its payload,
 * read apart ({@link readLargeValues}), so that no answer outgrows what the Data API returns. Inside a
 * transaction, `read` runs in it, and the payloads are those of the rows it locked.
 */
export async function readParked(read: ReadStatement, tables: InboxTables, sql: string, params: SqlParams): Promise<ParkedMessage[]> {
  const { rows } = await read(sql, params);
  const sizes = new Map(rows.map((row) => [Number(row.id), Number(row.payload_bytes)]));
  const payloads = await readLargeValues(read, { table: tables.parked, bytes: PAYLOAD }, sizes);
  return rows.map((row) => toParked(row, payloads.get(Number(row.id))!));
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
