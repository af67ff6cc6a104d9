import { InboxError } from '../errors.js';
import { retryConflicts } from '../transport/conflicts.js';
import type { InboxSession } from '../transport/session.js';
import { sessionOf } from '../transport/transport.js';
import type { InboxTransport } from '../transport/transport.js';
import { inboxTables } from '../sql/schema.js';
import type { InboxTables } from '../sql/schema.js';
import type { OutboxEnvelope } from './outbox-message.js';
import { OUTBOX_COLUMNS, readOutboxRows, sendAndMark } from './relay.js';
import type { OutboxTransport } from './relay.js';

/** Rows sent and marked per step: the sweep checks the time left before each. */
const SLICE_ROWS = 50;

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
  /**
   * The time left to the run, in milliseconds: a Lambda passes `() => context.getRemainingTimeInMillis()`.
   * Asked before each step; see `marginMs`.
   * @default no deadline
   */
  readonly remainingTimeMs?: (() => number) | undefined;
  /**
   * No step starts (the next 50 rows' sends, the delete) once less than this is left: it is kept for the
   * step already running, the age query and the report. What is left waits for the next sweep.
   * @default 30_000
   */
  readonly marginMs?: number | undefined;
}

/** What one sweep did. */
export interface SweepReport {
  /** Rows sent. */
  readonly sent: number;
  /** Rows that failed again, waited behind an older row of their FIFO group, or were left for lack of time. */
  readonly deferred: number;
  /** Sent rows deleted. */
  readonly deleted: number;
  /**
   * Age of the oldest row still unsent after the sweep, in seconds; 0 when none is left. Undefined only
   * when the age query failed (in {@link OutboxSweepError.report}).
   */
  readonly oldestUnsentAgeSeconds: number | undefined;
  /** True when the deadline stopped the sweep before it was done: rows or the delete were left for the next. */
  readonly cutShort: boolean;
  /** The steps that failed; the sweep goes on past each, and then throws {@link OutboxSweepError}. */
  readonly failures: readonly {
    /** `select` (reading the unsent rows), `send` (sending or marking rows), `delete` (old sent rows) or `age`. */
    readonly step: 'select' | 'send' | 'delete' | 'age';
    /** What the step threw. */
    readonly error: Error;
  }[];
}

/** A step of the sweep that failed, as {@link SweepReport} writes it out. */
type SweepFailure = SweepReport['failures'][number];

/**
 * Some steps of a sweep failed. `report` holds what the sweep did all the same (what it sent stays sent),
 * and `report.failures` each failed step with its error.
 */
export class OutboxSweepError extends InboxError {
  override name = 'OutboxSweepError';
  constructor(readonly report: SweepReport) {
    super(`outbox sweep: ${report.failures.map((failure) => `${failure.step} failed: ${failure.error.message}`).join('; ')}. The next sweep tries again.`);
  }
}

/**
 * Sends what crashed or timed-out workers left behind: the oldest unsent outbox rows first, in id order,
 * so each FIFO group keeps its order (the transport stops a group at its first failure, and so does the
 * sweep across its steps). Then deletes sent rows past their retention. Stops starting steps
 * `marginMs` before the deadline. A failed step does not stop the others; the sweep then throws
 * {@link OutboxSweepError}, whose `report` says what was done. Run it on a schedule (the InboxOutboxRelay
 * construct does).
 *
 * @example
 * const report = await sweepOutbox(dataApi({ resourceArn, secretArn }), { transport: sqsOutbox({ client: new SQSClient({}) }).transport });
 *
 * @param database - the transport to run on (`dataApi({...})`, `postgres(pool)`, `dsql({...})`)
 */
export async function sweepOutbox(database: InboxTransport, options: SweepOptions): Promise<SweepReport> {
  const session = sessionOf(database);
  const tables = inboxTables(options.schema ?? 'inbox');
  const remaining = options.remainingTimeMs ?? (() => Number.POSITIVE_INFINITY);
  const margin = options.marginMs ?? 30_000;
  const timeLeft = () => remaining() >= margin;
  const failures: SweepFailure[] = [];
  const attempt = async <T>(step: SweepFailure['step'], run: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await run();
    } catch (error) {
      failures.push({ step, error: error instanceof Error ? error : new Error(String(error)) });
      return undefined;
    }
  };

  const rows = (await attempt('select', () => unsentRows(session, tables, options))) ?? [];
  const { sent, deferred, stopped } = await sendInSlices(rows, {
    session,
    tables,
    transport: options.transport,
    timeLeft,
    failed: (error) => failures.push({ step: 'send', error }),
  });
  const deleting = timeLeft();
  const deleted = deleting ? ((await attempt('delete', () => deleteSent(session, tables, options))) ?? 0) : 0;
  const cutShort = stopped || !deleting;
  const oldestUnsentAgeSeconds = await attempt('age', () => oldestUnsentAge(session, tables));
  const report: SweepReport = { sent, deferred, deleted, oldestUnsentAgeSeconds, cutShort, failures };
  if (failures.length > 0) throw new OutboxSweepError(report);
  return report;
}

async function unsentRows(session: InboxSession, tables: InboxTables, options: SweepOptions): Promise<OutboxEnvelope[]> {
  return readOutboxRows(
    session,
    tables,
    `SELECT ${OUTBOX_COLUMNS}
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
}

/** How a sweep sends its rows: through its session and transport, while `timeLeft`, telling `failed` of a failure that stops it. */
interface SliceSends {
  readonly session: InboxSession;
  readonly tables: InboxTables;
  readonly transport: OutboxTransport;
  readonly timeLeft: () => boolean;
  readonly failed: (error: Error) => void;
}

/**
 * Sends and marks the rows 50 at a time while time is left. A FIFO group with a row not sent in one step
 * sends nothing more in later steps, or it would be reordered; a failed mark stops the sends (the rows it
 * left unmarked are resent later under the same keys).
 */
async function sendInSlices(
  rows: readonly OutboxEnvelope[],
  { session, tables, transport, timeLeft, failed }: SliceSends,
): Promise<{ sent: number; deferred: number; stopped: boolean }> {
  const blocked = new Set<string>();
  const groupOf = (row: OutboxEnvelope) => (row.destination.endsWith('.fifo') ? `${row.destination}\n${row.groupId}` : undefined);
  let sent = 0;
  for (let start = 0; start < rows.length; start += SLICE_ROWS) {
    if (!timeLeft()) return { sent, deferred: rows.length - sent, stopped: true };
    const slice = rows.slice(start, start + SLICE_ROWS).filter((row) => !blocked.has(groupOf(row) ?? ''));
    try {
      const results = await sendAndMark(session, tables, transport, slice);
      sent += results.sent;
      const failedIds = new Set(results.results.filter((result) => result.error !== undefined).map((result) => result.id));
      for (const row of slice) {
        const group = groupOf(row);
        if (group !== undefined && failedIds.has(row.id)) blocked.add(group);
      }
    } catch (error) {
      failed(error instanceof Error ? error : new Error(String(error)));
      return { sent, deferred: rows.length - sent, stopped: false };
    }
  }
  return { sent, deferred: rows.length - sent, stopped: false };
}

async function deleteSent(session: InboxSession, tables: InboxTables, options: SweepOptions): Promise<number> {
  // A database that bounds the rows one transaction modifies (Aurora DSQL: 3,000) bounds the delete too.
  const limit = Math.min(options.deleteLimit ?? 10_000, session.dialect?.maxModifiedRows ?? Infinity);
  const { updated } = await retryConflicts(session, () =>
    session.execute(
      `DELETE FROM ${tables.outbox} WHERE id IN (
         SELECT id FROM ${tables.outbox} WHERE sent_at < now() - make_interval(secs => :retention) ORDER BY sent_at LIMIT :limit)`,
      { retention: (options.sentRetentionMs ?? 7 * 24 * 3600_000) / 1000, limit },
    ),
  );
  return updated;
}

async function oldestUnsentAge(session: InboxSession, tables: InboxTables): Promise<number> {
  const { rows } = await session.execute(
    `SELECT coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8 AS age FROM ${tables.outbox} WHERE sent_at IS NULL`,
  );
  return Math.max(0, Number(rows[0]?.age ?? 0));
}
