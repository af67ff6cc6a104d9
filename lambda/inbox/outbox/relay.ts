import type { SqlParams } from '../transport/values.js';
import type { InboxSession } from '../transport/session.js';
import { PIECE_BYTES, readLargeValues } from '../sql/large-values.js';
import { retryConflicts } from '../transport/conflicts.js';
import type { InboxTables } from '../sql/schema.js';
import type { OutboxEnvelope } from './outbox-message.js';

/**
 * Sends outbox rows: SQS in `sqs-inbox/outbox` (`sqsOutbox`), or your own. It gets rows in id order and
 * must keep that order within each FIFO group: once a row of a group is not sent, no later row of that
 * group may be. Returns one result per row; it never throws (a throw counts every row as not sent).
 */
export interface OutboxTransport {
  /**
   * Sends the rows, in id order.
   * @returns how each row fared: its `id`, and an `error` when it was not sent (it stays unsent, for the sweeper)
   */
  send(
    rows: readonly {
      /** The row's id. */
      readonly id: number;
      /** The stable idempotency key: the FIFO MessageDeduplicationId and the `idempotency-key` attribute. */
      readonly key: string;
      /** A queue URL. */
      readonly destination: string;
      /** The message body. */
      readonly body: string;
      /** The MessageGroupId, for a FIFO queue. */
      readonly groupId: string | undefined;
      /** String message attributes. */
      readonly attributes: Readonly<Record<string, string>>;
      /** Per-message delay, standard queues only. */
      readonly delaySeconds: number | undefined;
    }[],
  ): Promise<readonly { readonly id: number; readonly error?: string | undefined }[]>;
}

/** How a row fared with the transport, as written out in {@link OutboxTransport.send}. */
export type SendResult = Awaited<ReturnType<OutboxTransport['send']>>[number];

/** The `outbox` option of a consumer: where sends go, and how. */
export interface OutboxOptions {
  /** Sends the rows: `sqsOutbox({ client })` from `sqs-inbox/outbox` holds one that sends them to SQS. */
  readonly transport: OutboxTransport;
  /**
   * Names `tx.send({ to })` may use for queue URLs.
   * @default JSON of process.env.INBOX_DESTINATIONS (set by the InboxConsumer construct), else none
   */
  readonly destinations?: Readonly<Record<string, string>> | undefined;
}

/** What a relay or a sweep did. */
export interface RelayReport {
  /** Rows sent and marked sent. */
  readonly sent: number;
  /** Rows left unsent for the sweeper: a failed send, or a FIFO group with an older unsent row. */
  readonly deferred: number;
}

/** The columns an outbox row is sent from: what {@link readOutboxRows} takes from the rows it is given. */
export const OUTBOX_COLUMNS = 'o.id, o.idempotency_key, o.destination, o.body, o.group_id, o.attributes, o.delay_seconds';

/** An outbox row's body and attributes as one value, the UTF-8 of JSON `[body, attributes]`. */
const MESSAGE = "convert_to(json_build_array(body, attributes)::text, 'UTF8')";

/**
 * The outbox rows `selection` gives (a query of {@link OUTBOX_COLUMNS}), in id order. Their bodies and
 * attributes come with them while the answer stays within {@link PIECE_BYTES}; the rest are read apart
 * ({@link readLargeValues}), so that no answer outgrows the 1 MiB a Data API call returns: a message of
 * nearly 1 MiB, or hundreds of smaller ones, is sent all the same.
 */
export async function readOutboxRows(session: InboxSession, tables: InboxTables, selection: string, params: SqlParams): Promise<OutboxEnvelope[]> {
  const { rows } = await session.execute(
    `SELECT id, idempotency_key, destination, group_id, delay_seconds, message_bytes,
            CASE WHEN sum(message_bytes) OVER (ORDER BY id) <= ${PIECE_BYTES} THEN ${MESSAGE} END AS message
       FROM (SELECT s.*, octet_length(${MESSAGE}) AS message_bytes FROM (${selection}) s) o
      ORDER BY id`,
    params,
  );
  const apart = new Map(rows.filter((row) => row.message === null).map((row) => [Number(row.id), Number(row.message_bytes)]));
  const messages = await readLargeValues((sql, values) => session.execute(sql, values), { table: tables.outbox, bytes: MESSAGE }, apart);
  return rows.map((row) => envelope(row, (row.message as Uint8Array | null) ?? messages.get(Number(row.id))!));
}

/**
 * Sends the rows `ids` (written by this invocation's committed transactions) and marks them sent: one
 * statement to read them, the transport's calls, one statement to record the results. A row of a FIFO
 * destination waits (for the sweeper) while its group has an older unsent row from elsewhere, so the
 * group's order holds. That row may be another consumer's, which the consumer's role cannot read (row-level
 * security, inbox migration 7): the check asks `outboxOrder`, which answers for it without showing it.
 */
export async function relayRows(session: InboxSession, tables: InboxTables, transport: OutboxTransport, ids: readonly number[]): Promise<RelayReport> {
  if (ids.length === 0) return { sent: 0, deferred: 0 };
  const rows = await readOutboxRows(
    session,
    tables,
    `SELECT ${OUTBOX_COLUMNS} FROM ${tables.outbox} o
      WHERE o.id = ANY(:ids::bigint[]) AND o.sent_at IS NULL
        AND NOT (o.destination LIKE '%.fifo' AND ${tables.outboxOrder}(o.destination, o.group_id, o.id, :ids::bigint[]))`,
    { ids: `{${ids.join(',')}}` },
  );
  const report = await sendAndMark(session, tables, transport, rows);
  return { sent: report.sent, deferred: ids.length - report.sent };
}

/** Sends rows through the transport and records each result in one statement. */
export async function sendAndMark(
  session: InboxSession,
  tables: InboxTables,
  transport: OutboxTransport,
  rows: readonly OutboxEnvelope[],
): Promise<RelayReport & { readonly results: readonly SendResult[] }> {
  if (rows.length === 0) return { sent: 0, deferred: 0, results: [] };
  let results: readonly SendResult[];
  try {
    results = await transport.send(rows);
  } catch (error) {
    results = rows.map((row) => ({ id: row.id, error: error instanceof Error ? error.message : String(error) }));
  }
  // An autocommit write: a conflict (Aurora DSQL) rolled it back for certain, so it runs again.
  await retryConflicts(session, () =>
    session.execute(
      `UPDATE ${tables.outbox} o
        SET sent_at = CASE WHEN r.error IS NULL THEN now() ELSE o.sent_at END,
            attempts = o.attempts + 1,
            last_error = r.error
       FROM jsonb_to_recordset(:results::jsonb) AS r(id bigint, error text)
      WHERE o.id = r.id`,
      { results: results.map((result) => ({ id: result.id, error: result.error ?? null })) },
    ),
  );
  const sent = results.filter((result) => result.error === undefined).length;
  return { sent, deferred: rows.length - sent, results };
}

/** A row as the transport gets it, with its {@link MESSAGE}. */
function envelope(row: Record<string, unknown>, message: Uint8Array): OutboxEnvelope {
  const [body, attributes] = JSON.parse(Buffer.from(message).toString()) as [string, Record<string, string> | null];
  return {
    id: Number(row.id),
    key: String(row.idempotency_key),
    destination: String(row.destination),
    body,
    groupId: (row.group_id as string | null) ?? undefined,
    attributes: attributes ?? {},
    delaySeconds: row.delay_seconds === null || row.delay_seconds === undefined ? undefined : Number(row.delay_seconds),
  };
}
