import type { InboxSession } from '../transport/session.js';
import { inboxTables } from '../schema.js';
import { envelope, sendAndMark } from './relay.js';
import type { OutboxTransport } from './relay.js';

/** Options of {@link sweepOutbox}. */
export interface SweepOptions {
  /** The transport to send with, e.g. `sqsOutbox({ client }).transport`. */
  readonly transport: OutboxTransport;
  /** The inbox's schema. @default 'inbox' */
  readonly schema?: string | undefined;
  /**
   * Rows younger than this are left to the relay of the handler that wrote them (which sends right after
   * its commit); a row both send is harmless, only wasted. @default 60_000
   */
  readonly minAgeMs?: number | undefined;
  /** Unsent rows per sweep, oldest first. @default 500 */
  readonly limit?: number | undefined;
  /** Sent rows older than this are deleted. @default 7 days */
  readonly sentRetentionMs?: number | undefined;
  /** Sent rows deleted per sweep at most. @default 10_000 */
  readonly deleteLimit?: number | undefined;
}

/** What one sweep did. */
export interface SweepReport {
  /** Rows sent. */
  readonly sent: number;
  /** Rows that failed again, or waited behind an older row of their FIFO group. */
  readonly deferred: number;
  /** Sent rows deleted. */
  readonly deleted: number;
  /** Age of the oldest row still unsent after the sweep, in seconds; 0 when none is left. */
  readonly oldestUnsentAgeSeconds: number;
}

/**
 * Sends what crashed or timed-out workers left behind: the oldest unsent outbox rows first, in id order,
 * so each FIFO group keeps its order (the transport stops a group at its first failure). Then deletes
 * sent rows past their retention. Run it on a schedule (the InboxOutboxRelay construct does).
 *
 * @example
 * const report = await sweepOutbox(session, { transport: sqsOutbox({ client: new SQSClient({}) }).transport });
 */
export async function sweepOutbox(session: InboxSession, options: SweepOptions): Promise<SweepReport> {
  const tables = inboxTables(options.schema ?? 'inbox');
  const { rows } = await session.execute(
    `SELECT o.id, o.idempotency_key, o.destination, o.body, o.group_id, o.attributes, o.delay_seconds
       FROM ${tables.outbox} o
      WHERE o.sent_at IS NULL
        AND (o.created_at < now() - make_interval(secs => :minAge)
          -- A FIFO group whose head is old goes out whole: its younger rows wait behind the head
          -- (the relay holds them back), so leaving them for later sweeps would delay the group by
          -- minAge per sweep while it keeps getting traffic.
          OR (o.destination LIKE '%.fifo' AND EXISTS (
                SELECT 1 FROM ${tables.outbox} p
                 WHERE p.sent_at IS NULL AND p.destination = o.destination AND p.group_id = o.group_id
                   AND p.id < o.id AND p.created_at < now() - make_interval(secs => :minAge))))
      ORDER BY o.id
      LIMIT :limit`,
    { minAge: (options.minAgeMs ?? 60_000) / 1000, limit: options.limit ?? 500 },
  );
  const { sent, deferred } = await sendAndMark(session, tables, options.transport, rows.map(envelope));
  const deleted = await session.execute(
    `DELETE FROM ${tables.outbox} WHERE id IN (
       SELECT id FROM ${tables.outbox} WHERE sent_at < now() - make_interval(secs => :retention) ORDER BY sent_at LIMIT :limit)`,
    { retention: (options.sentRetentionMs ?? 7 * 24 * 3600_000) / 1000, limit: options.deleteLimit ?? 10_000 },
  );
  const oldest = await session.execute(
    `SELECT coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8 AS age FROM ${tables.outbox} WHERE sent_at IS NULL`,
  );
  return { sent, deferred, deleted: deleted.updated, oldestUnsentAgeSeconds: Math.max(0, Number(oldest.rows[0]?.age ?? 0)) };
}
