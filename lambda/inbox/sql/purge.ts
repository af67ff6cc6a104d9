import { sessionOf } from '../transport/transport.js';
import type { InboxTransport } from '../transport/transport.js';
import { retryConflicts } from '../transport/conflicts.js';
import { InboxConfigError } from '../errors.js';
import { inboxTables } from './schema.js';
import type { InboxTables } from './schema.js';

/** Options of {@link purge}. */
export interface PurgeOptions {
  /**
   * Rows younger than this are never deleted. It must exceed the longest time a message can still be
   * redelivered (queue retention plus the dead-letter queue's, when messages can be redriven back), or
   * a late redelivery finds no claim and is applied twice. The CDK constructs check this at synth.
   */
  readonly retentionSeconds: number;
  /** Rows deleted per statement; small batches keep each statement short and its locks few. @default 5000 */
  readonly batchSize?: number | undefined;
  /** Stop starting new batches after this long. @default 60_000 */
  readonly timeBudgetMs?: number | undefined;
  /** The inbox's PostgreSQL schema: the same as the consumers' `schema`. @default 'inbox' */
  readonly schema?: string | undefined;
  /** The clock the time budget is measured with, in epoch milliseconds. @default Date.now */
  readonly now?: (() => number) | undefined;
}

/** What a purge did. */
export interface PurgeReport {
  /** Inbox rows deleted. */
  readonly deleted: number;
  /** DELETE statements run. */
  readonly batches: number;
  /** True when the time budget ran out with old rows left. */
  readonly moreRemaining: boolean;
  /** Age of the oldest inbox row after the purge, in seconds (0 when the table is empty). */
  readonly oldestRowAgeSeconds: number;
}

/**
 * One purge batch: deletes up to `:batchSize` rows older than `:retentionSeconds`, oldest first, starting
 * at `:after` (the processed_at a previous batch returned as `last`, or null), and returns how many it
 * deleted and the processed_at of the newest one, as ISO 8601 text in UTC to the microsecond (whatever
 * the session's DateStyle, and finer than a JS Date holds), so that the next batch starts exactly there.
 *
 * Its cost depends on the batch, not on the table: the subselect walks the processed_at index from
 * `:after` and stops after `:batchSize` rows (LIMIT under an index scan), locking each with SKIP LOCKED so
 * that a row a running transaction holds is passed over, not waited for; the DELETE then finds those
 * rows by their ctid (a TID scan), which a row lock keeps stable until the statement ends. The form it
 * replaces, `DELETE ... USING (subselect) WHERE` the keys match, was planned as a hash join over a
 * sequential scan of the whole table for every batch (on tens of millions of rows, as a nested loop of
 * one key lookup per row).
 */
export function purgeBatchSql(tables: InboxTables): string {
  return `WITH doomed AS (
    DELETE FROM ${tables.consumed}
     WHERE ctid = ANY (ARRAY(
             SELECT ctid FROM ${tables.consumed}
              WHERE processed_at < now() - make_interval(secs => :retentionSeconds)
                AND processed_at >= coalesce(:after::timestamptz, '-infinity'::timestamptz)
              ORDER BY processed_at
              LIMIT :batchSize
              FOR UPDATE SKIP LOCKED))
    RETURNING processed_at)
  SELECT count(*)::int AS deleted,
         to_char(max(processed_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS last
    FROM doomed`;
}

/**
 * Deletes inbox rows older than the retention, in bounded batches, until none are left or the time
 * budget is spent. Safe while claims run: new claims are younger than any cutoff, and rows locked by a
 * running transaction are skipped, not waited for (and left for the next purge). The cutoff is the
 * database's clock, like processed_at. Each batch costs the same however large the table is (see
 * `purgeBatchSql`).
 *
 * @example
 * const report = await purge(dataApi({ resourceArn, secretArn }), { retentionSeconds: 14 * 24 * 3600 });
 *
 * @param database - the transport to run on (`dataApi({...})`, `postgres(pool)`, `dsql({...})`)
 */
export async function purge(database: InboxTransport, options: PurgeOptions): Promise<PurgeReport> {
  const session = sessionOf(database);
  const tables = inboxTables(options.schema);
  const retentionSeconds = options.retentionSeconds;
  if (!Number.isInteger(retentionSeconds) || retentionSeconds < 1) {
    throw new InboxConfigError('retentionSeconds', `${String(retentionSeconds)} must be a positive integer number of seconds, e.g. 1209600 (14 days)`);
  }
  const batchSize = options.batchSize ?? 5000;
  if (!Number.isInteger(batchSize) || batchSize < 1) {
    throw new InboxConfigError('batchSize', `${String(batchSize)} must be a positive integer, e.g. 5000`);
  }
  // A database that bounds the rows one transaction modifies (Aurora DSQL: 3,000) bounds each batch too.
  const limit = Math.min(batchSize, session.dialect?.maxModifiedRows ?? batchSize);
  const now = options.now ?? Date.now;
  const deadline = now() + (options.timeBudgetMs ?? 60_000);
  let deleted = 0;
  let batches = 0;
  let moreRemaining = false;
  // The processed_at of the newest row deleted so far: each batch starts there, so it never walks the
  // index entries of the rows earlier batches deleted (they stay until vacuum, and while any snapshot
  // older than the delete is open they cannot even be marked dead, so each batch would read them all).
  let after: string | null = null;
  const sql = purgeBatchSql(tables);
  for (;;) {
    // An autocommit delete: a conflict (Aurora DSQL) rolled it back for certain, so it runs again.
    const { rows } = await retryConflicts(session, () => session.execute(sql, { retentionSeconds, batchSize: limit, after }));
    const updated = Number(rows[0]?.deleted ?? 0);
    after = (rows[0]?.last as string | null | undefined) ?? after;
    deleted += updated;
    batches++;
    if (updated < limit) break;
    if (now() >= deadline) {
      moreRemaining = true;
      break;
    }
  }
  const { rows } = await session.execute(`SELECT coalesce(extract(epoch FROM now() - min(processed_at)), 0)::float8 AS age FROM ${tables.consumed}`);
  return { deleted, batches, moreRemaining, oldestRowAgeSeconds: Number(rows[0]?.age ?? 0) };
}
