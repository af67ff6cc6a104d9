import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { inbox, InboxConfigError } from '../../lambda/inbox/index.js';
import { purge } from '../../lambda/inbox/sql/purge.js';
import { cleanupHandler } from '../../lambda/functions/purge/cleanup.js';
import { purgeBatchSql } from '../../lambda/inbox/sql/purge.js';
import { inboxTables } from '../../lambda/inbox/sql/schema.js';
import { inboxFixture, lambdaContext, recordingLogger, recordingMetrics, sqsRecord } from '../support/inbox.js';
import type { InboxFixture } from '../support/inbox.js';

let db: InboxFixture;
beforeAll(async () => {
  db = await inboxFixture('purge');
});
afterAll(async () => db.close());
beforeEach(async () => {
  await db.query('TRUNCATE inbox.consumed_message');
});

/** Inserts `count` claims aged `ageSeconds`. */
async function claims(count: number, ageSeconds: number, prefix: string) {
  await db.query(
    `INSERT INTO inbox.consumed_message (consumer_name, message_id, processed_at)
     SELECT 'c', $1 || g, now() - make_interval(secs => $2) FROM generate_series(1, $3) g`,
    [prefix, ageSeconds, count],
  );
}

describe('purge', () => {
  it('deletes every row older than the retention, in bounded batches, and never a younger one', async () => {
    await claims(250, 3600, 'old-');
    await claims(40, 3500, 'young-');
    const report = await purge(db.session, { retentionSeconds: 3550, batchSize: 100 });
    expect(report).toMatchObject({ deleted: 250, moreRemaining: false });
    expect(report.batches).toBe(3);
    const left = await db.query('SELECT message_id FROM inbox.consumed_message');
    expect(left).toHaveLength(40);
    expect(left.every((r) => r.message_id.startsWith('young-'))).toBe(true);
    expect(report.oldestRowAgeSeconds).toBeGreaterThanOrEqual(3500);
    expect(report.oldestRowAgeSeconds).toBeLessThan(3550);
  });

  it('stops at its time budget and says more remain', async () => {
    await claims(300, 7200, 'old-');
    let clock = 0;
    const report = await purge(db.session, { retentionSeconds: 60, batchSize: 100, timeBudgetMs: 1000, now: () => (clock += 600) });
    // The clock reads 1200 after batch 1 (under the 1600 deadline) and 1800 after batch 2.
    expect(report).toMatchObject({ deleted: 200, batches: 2, moreRemaining: true });
    expect(report.oldestRowAgeSeconds).toBeGreaterThanOrEqual(7200);
  });

  it('does not wait for rows a running claim holds, and never removes a fresh claim', async () => {
    await claims(10, 7200, 'old-');
    const tx = await db.session.transaction();
    await tx.execute("UPDATE inbox.consumed_message SET processed_at = processed_at WHERE message_id = 'old-1'");
    const handler = inbox({
      consumer: 'c',
      database: db.target,
      logger: recordingLogger(),
      metrics: recordingMetrics(),
      apply: async () => {},
    });
    const [report] = await Promise.all([
      purge(db.session, { retentionSeconds: 60, batchSize: 3 }),
      handler({ Records: [sqsRecord(), sqsRecord()] }, lambdaContext()),
    ]);
    await tx.rollback();
    expect(report.deleted).toBe(9);
    const left = await db.query("SELECT message_id FROM inbox.consumed_message WHERE consumer_name = 'c' ORDER BY message_id");
    expect(left.map((r) => r.message_id)).toContain('old-1');
    expect(left).toHaveLength(3);
  });

  it('finds each batch through the processed_at index and the rows by ctid, never by scanning the whole table', async () => {
    // The form this replaced (DELETE ... USING a subselect, joined on the key) was planned as a hash join
    // over a sequential scan of the table for every batch, so a purge slowed down as the table grew.
    await claims(50_000, 7200, 'old-');
    await db.query('ANALYZE inbox.consumed_message');
    const plan = async (after: string | null) =>
      (await db.session.execute(`EXPLAIN ${purgeBatchSql(inboxTables())}`, { retentionSeconds: 60, batchSize: 5000, after })).rows
        .map((row) => String(row['QUERY PLAN']))
        .join('\n');
    for (const text of [await plan(null), await plan('2000-01-01T00:00:00.000000Z')]) {
      expect(text).toMatch(/Index Scan using consumed_message_processed_at on consumed_message/);
      expect(text).toMatch(/Tid Scan on consumed_message/);
      expect(text).not.toMatch(/Seq Scan|Hash Join/);
    }
  });

  it('deletes every row of a run of equal processed_at values that a batch boundary splits', async () => {
    await db.query(
      `INSERT INTO inbox.consumed_message (consumer_name, message_id, processed_at)
       SELECT 'c', 'tie-' || g, now() - interval '2 hours' FROM generate_series(1, 250) g`,
    );
    const report = await purge(db.session, { retentionSeconds: 60, batchSize: 100 });
    expect(report).toMatchObject({ deleted: 250, batches: 3, moreRemaining: false });
    expect(await db.query('SELECT message_id FROM inbox.consumed_message')).toHaveLength(0);
  });

  it('walks forward from the newest row it deleted: a row older than that waits for the next purge', async () => {
    // Stands in for a row a batch passed over because a transaction held it: the trigger adds an old row
    // behind the first batch's mark, once. A purge that searched the index from its start for every
    // batch would read the entries of every row it had deleted again (they stay until vacuum).
    await claims(250, 7200, 'old-');
    await db.query('CREATE TABLE IF NOT EXISTS public.purge_late_row (fired boolean)');
    await db.query('TRUNCATE public.purge_late_row');
    await db.query(`CREATE OR REPLACE FUNCTION public.purge_add_late_row() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NOT EXISTS (SELECT 1 FROM public.purge_late_row) THEN
          INSERT INTO public.purge_late_row VALUES (true);
          INSERT INTO inbox.consumed_message (consumer_name, message_id, processed_at) VALUES ('c', 'late', now() - interval '3 hours');
        END IF;
        RETURN NULL;
      END $$`);
    await db.query('CREATE TRIGGER purge_add_late_row AFTER DELETE ON inbox.consumed_message FOR EACH STATEMENT EXECUTE FUNCTION public.purge_add_late_row()');
    try {
      const first = await purge(db.session, { retentionSeconds: 60, batchSize: 100 });
      expect(first).toMatchObject({ deleted: 250, batches: 3, moreRemaining: false });
      expect((await db.query('SELECT message_id FROM inbox.consumed_message')).map((row) => row.message_id)).toEqual(['late']);
      expect(await purge(db.session, { retentionSeconds: 60, batchSize: 100 })).toMatchObject({ deleted: 1, batches: 1 });
    } finally {
      await db.query('DROP TRIGGER purge_add_late_row ON inbox.consumed_message');
    }
  });

  it('refuses a retention that is not a positive number of seconds', async () => {
    await expect(purge(db.session, { retentionSeconds: 0 })).rejects.toThrow(/retentionSeconds.*positive integer/);
  });

  it.each([
    ['retentionSeconds', { retentionSeconds: 1.5 }, '1.5 must be a positive integer number of seconds, e.g. 1209600 (14 days)'],
    ['retentionSeconds', { retentionSeconds: '3600' as never }, '3600 must be a positive integer number of seconds, e.g. 1209600 (14 days)'],
    ['retentionSeconds', { retentionSeconds: -5 }, '-5 must be a positive integer number of seconds, e.g. 1209600 (14 days)'],
    ['batchSize', { retentionSeconds: 60, batchSize: 0 }, '0 must be a positive integer, e.g. 5000'],
    ['batchSize', { retentionSeconds: 60, batchSize: 2.5 }, '2.5 must be a positive integer, e.g. 5000'],
  ])('refuses an invalid %s with an InboxConfigError naming it, before deleting anything', async (option, options, message) => {
    await claims(3, 7200, 'old-');
    const error = await purge(db.session, options).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(InboxConfigError);
    expect(error).toMatchObject({ option });
    expect((error as Error).message).toContain(message);
    expect(await db.query('SELECT message_id FROM inbox.consumed_message')).toHaveLength(3);
  });

  it('accepts the smallest retention and batch, one second and one row', async () => {
    await claims(2, 7200, 'old-');
    expect(await purge(db.session, { retentionSeconds: 1, batchSize: 1 })).toMatchObject({ deleted: 2, batches: 3, moreRemaining: false });
  });

  it('deletes 5000 rows per statement by default', async () => {
    await claims(5001, 7200, 'old-');
    expect(await purge(db.session, { retentionSeconds: 60 })).toMatchObject({ deleted: 5001, batches: 2, moreRemaining: false, oldestRowAgeSeconds: 0 });
  });

  it('spends a 60 second time budget by default, stopping once the clock reaches it', async () => {
    await claims(5, 7200, 'old-');
    let clock = 0;
    // The deadline is 30 s + 60 s; the clock reads 60 s after batch 1 and exactly 90 s after batch 2.
    const report = await purge(db.session, { retentionSeconds: 60, batchSize: 1, now: () => (clock += 30_000) });
    expect(report).toMatchObject({ deleted: 2, batches: 2, moreRemaining: true });
  });

  it('runs as the scheduled cleanup function and publishes its metrics', async () => {
    await claims(20, 7200, 'old-');
    const metrics = recordingMetrics();
    const handler = cleanupHandler(
      {
        INBOX_RESOURCE_ARN: db.server.resourceArn,
        INBOX_SECRET_ARN: db.server.secretArn,
        INBOX_DATABASE: db.server.database,
        INBOX_DATA_API_ENDPOINT: db.server.endpoint,
        INBOX_RETENTION_SECONDS: '3600',
        INBOX_PURGE_BATCH_SIZE: '7',
      },
      metrics as never,
    );
    const report = await handler(
      {},
      lambdaContext(() => 120_000),
    );
    expect(report.deleted).toBe(20);
    expect(metrics.published[0]).toMatchObject({ PurgedRows: [20], PurgeMoreRemaining: [0], OldestRowAgeSeconds: [0] });
  });

  it('refuses to configure the cleanup function without a retention', () => {
    expect(() => cleanupHandler({ INBOX_RESOURCE_ARN: 'r', INBOX_SECRET_ARN: 's' })).toThrow(/INBOX_RETENTION_SECONDS/);
  });
});
