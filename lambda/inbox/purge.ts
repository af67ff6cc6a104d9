import type { DataApiSession } from './data-api.js';
import { InboxConfigError } from './errors.js';
import { inboxTables } from './schema.js';

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
 * Deletes inbox rows older than the retention, in bounded batches, until none are left or the time
 * budget is spent. Safe while claims run: new claims are younger than any cutoff, and rows locked by a
 * running transaction are skipped, not waited for. The cutoff is the database's clock, like processed_at.
 *
 * @example
 * const report = await purge(session, { retentionSeconds: 14 * 24 * 3600 });
 */
export async function purge(session: DataApiSession, options: PurgeOptions): Promise<PurgeReport> {
  const tables = inboxTables(options.schema);
  const retentionSeconds = options.retentionSeconds;
  if (!Number.isInteger(retentionSeconds) || retentionSeconds < 1) {
    throw new InboxConfigError('retentionSeconds', `${String(retentionSeconds)} must be a positive integer number of seconds, e.g. 1209600 (14 days)`);
  }
  const batchSize = options.batchSize ?? 5000;
  if (!Number.isInteger(batchSize) || batchSize < 1) {
    throw new InboxConfigError('batchSize', `${String(batchSize)} must be a positive integer, e.g. 5000`);
  }
  const now = options.now ?? Date.now;
  const deadline = now() + (options.timeBudgetMs ?? 60_000);
  let deleted = 0;
  let batches = 0;
  let moreRemaining = false;
  for (;;) {
    const { updated } = await session.execute(
      `DELETE FROM ${tables.consumed} c
        USING (SELECT consumer_name, message_id FROM ${tables.consumed}
                WHERE processed_at < now() - make_interval(secs => :retentionSeconds)
                ORDER BY processed_at
                LIMIT :batchSize
                FOR UPDATE SKIP LOCKED) doomed
        WHERE c.consumer_name = doomed.consumer_name AND c.message_id = doomed.message_id`,
      { retentionSeconds, batchSize },
    );
    deleted += updated;
    batches++;
    if (updated < batchSize) break;
    if (now() >= deadline) {
      moreRemaining = true;
      break;
    }
  }
  const { rows } = await session.execute(
    `SELECT coalesce(extract(epoch FROM now() - min(processed_at)), 0)::float8 AS age FROM ${tables.consumed}`,
  );
  return { deleted, batches, moreRemaining, oldestRowAgeSeconds: Number(rows[0]?.age ?? 0) };
}
