import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inbox } from '../lambda/inbox/index.js';
import { DataApiSession } from '../lambda/inbox/transport/data-api/session.js';
import { inboxTables, migrate } from '../lambda/inbox/sql/schema.js';
import { purge } from '../lambda/inbox/sql/purge.js';
import type { InboxMetrics } from '../lambda/inbox/index.js';
import type { DatabaseTarget } from '../lambda/inbox/transport/data-api/session.js';
import { dataApi } from '../lambda/inbox/transport/data-api/transport.js';
import { purgeBatchSql } from '../lambda/inbox/sql/purge.js';
import { createDatabase } from '../local/postgres.js';
import { cpuBetween, postgresCpuSnapshot, postmasterPid } from './capacity.js';
import { dataApiClient } from './database.js';
import { freshRecord, sqsEvent } from './records.js';
import type { RemoteDataApi } from './servers.js';

/**
 * The statement purge() ran before issue 9, kept here to be measured beside the current one: the
 * subselect is index-driven, but the DELETE joins it back to the table on the key, which PostgreSQL plans
 * as a hash join over a sequential scan of the whole table for every batch (on a table of millions of
 * rows, as a nested loop of one key lookup per row).
 */
export const PREVIOUS_PURGE_SQL = `DELETE FROM inbox.consumed_message c
  USING (SELECT consumer_name, message_id FROM inbox.consumed_message
          WHERE processed_at < now() - make_interval(secs => :retentionSeconds)
          ORDER BY processed_at
          LIMIT :batchSize
          FOR UPDATE SKIP LOCKED) doomed
  WHERE c.consumer_name = doomed.consumer_name AND c.message_id = doomed.message_id`;

/** What the purge section measures. */
export interface PurgeSettings {
  /** Rows of the small table, the reference for the per-row cost. */
  readonly smallRows: number;
  /** Rows of the large table. */
  readonly largeRows: number;
  /** The share of each table older than the retention. */
  readonly oldShare: number;
  /** Rows per purge statement (purge()'s default). */
  readonly batchSize: number;
  /** Batches of the previous statement timed per table (inside a transaction that is rolled back). */
  readonly previousBatches: number;
  /** Claims running side by side while the windows alternate. */
  readonly claimLanes: number;
  readonly progress: (message: string) => void;
}

/** The result for one table size. */
export interface PurgeRun {
  readonly rows: number;
  readonly fillSeconds: number;
  /** purge() as it is: rows deleted, statements, seconds spent purging, and the plan's scan nodes. */
  readonly current: { readonly deleted: number; readonly batches: number; readonly seconds: number; readonly plan: string };
  /** The previous statement, timed over `previousBatches` batches and rolled back. */
  readonly previous: { readonly deleted: number; readonly batches: number; readonly seconds: number; readonly plan: string };
  /** Claim latencies in ms, in the windows where purge() ran and in those between, interleaved. */
  readonly claims: { readonly during: readonly number[]; readonly without: readonly number[]; readonly windows: number };
  /** Seconds and PostgreSQL CPU (µs, the postmaster and its processes) of the windows with a purge and of those without, for the capacity table. */
  readonly windows: { readonly during: PurgeWindows; readonly without: PurgeWindows };
}

/** The windows of one kind, summed. */
export interface PurgeWindows {
  readonly seconds: number;
  readonly postgresCpuMicros: number;
}

const DAY = 24 * 3600;
/** The fill spreads processed_at evenly over this many seconds before now. */
const SPAN_SECONDS = 10 * DAY;
/** Rows per interleaved purge window (the old rows are purged in slices of about this many, at most 20). */
const ROWS_PER_WINDOW = 25_000;

/**
 * One table size: a fresh database whose inbox table holds `rows` claims spread over ten days, the oldest
 * `oldShare` of them older than the retention. Then:
 * - the previous statement, `previousBatches` batches in a transaction that is rolled back (so the rows
 *   stay), for its rows per second;
 * - purge() as it is, over every old row, in slices (by retention) that alternate with windows of the
 *   same length without a purge, while `claimLanes` claims run side by side throughout: the rows per
 *   second, and the claims' latency with and without a purge running, interleaved.
 * No latency is added: the purge's cost at the database is what is measured.
 */
export async function measurePurge(postgresUrl: string, server: RemoteDataApi, rows: number, settings: PurgeSettings): Promise<PurgeRun> {
  const name = `bench_purge_${randomBytes(4).toString('hex')}`;
  await createDatabase(postgresUrl, name);
  const client = dataApiClient(server);
  const target = { client, resourceArn: server.resourceArn, secretArn: server.secretArn, database: name };
  const session = new DataApiSession(target, { callTimeoutMs: 120_000, resumeDelaysMs: [] });
  const direct = new pg.Client({ connectionString: withDatabase(postgresUrl, name) });
  await direct.connect();
  try {
    await migrate(session);
    await session.execute('CREATE TABLE public.purge_claim_effect (order_id text NOT NULL)');
    settings.progress(`    filling ${rows.toLocaleString('en-US')} inbox rows`);
    const filled = performance.now();
    await fill(direct, rows);
    const fillSeconds = (performance.now() - filled) / 1000;

    const oldRows = Math.floor(rows * settings.oldShare);
    // The cutoff between old and young rows, as a retention: rows older than this are purged.
    const retentionSeconds = Math.ceil(SPAN_SECONDS * (1 - settings.oldShare));

    const previous = await timePrevious(session, retentionSeconds, settings);
    settings.progress(`    previous statement: ${previous.deleted} rows in ${previous.seconds.toFixed(2)} s (rolled back)`);
    const postmaster = await postmasterPid(direct);
    const own = Number((await direct.query('SELECT pg_backend_pid() AS pid')).rows[0].pid);
    const postgresCpu = () => postgresCpuSnapshot(postmaster, own);
    const current = await timeCurrent(session, target, retentionSeconds, oldRows, settings, postgresCpu);
    const { count } = (await direct.query('SELECT count(*)::int AS count FROM inbox.consumed_message WHERE consumer_name = $1', ['bench-purge-fill']))
      .rows[0] as { count: number };
    if (count !== rows - current.purged.deleted) throw new Error(`purge: ${count} rows left of ${rows} after deleting ${current.purged.deleted}`);
    return { rows, fillSeconds, previous, current: current.purged, claims: current.claims, windows: current.windows };
  } finally {
    client.destroy();
    await direct.end();
    const admin = new pg.Client({ connectionString: postgresUrl });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
    await admin.end();
  }
}

/**
 * Fills the inbox table the way years of claims leave it: processed_at rising with the physical order,
 * keys in random order. The indexes are dropped during the insert and built after it (much faster than
 * growing them row by row), then the table is vacuumed and analysed, as autovacuum would have.
 */
async function fill(direct: pg.Client, rows: number): Promise<void> {
  await direct.query('DROP INDEX inbox.consumed_message_processed_at');
  await direct.query('ALTER TABLE inbox.consumed_message DROP CONSTRAINT consumed_message_pkey');
  await direct.query(
    `INSERT INTO inbox.consumed_message (consumer_name, message_id, processed_at, payload_sha256)
     SELECT 'bench-purge-fill', md5(g::text), now() - make_interval(secs => $2::float8 * (1 - (g - 1)::float8 / $1)),
            decode(md5(g::text) || md5((g + 1)::text), 'hex')
       FROM generate_series(1, $1::int) g`,
    [rows, SPAN_SECONDS],
  );
  await direct.query('ALTER TABLE inbox.consumed_message ADD CONSTRAINT consumed_message_pkey PRIMARY KEY (consumer_name, message_id)');
  await direct.query('CREATE INDEX consumed_message_processed_at ON inbox.consumed_message (processed_at)');
  await direct.query('VACUUM ANALYZE inbox.consumed_message');
}

/** The previous statement, `previousBatches` times in one transaction, then rolled back: the rows stay for purge(). */
async function timePrevious(session: DataApiSession, retentionSeconds: number, settings: PurgeSettings): Promise<PurgeRun['previous']> {
  const params = { retentionSeconds, batchSize: settings.batchSize };
  const plan = scanNodes(await session.execute(`EXPLAIN ${PREVIOUS_PURGE_SQL}`, params));
  const tx = await session.transaction();
  let deleted = 0;
  let batches = 0;
  const started = performance.now();
  try {
    while (batches < settings.previousBatches) {
      const { updated } = await tx.execute(PREVIOUS_PURGE_SQL, params);
      deleted += updated;
      batches++;
      if (updated < settings.batchSize) break;
    }
  } catch (error) {
    await tx.rollback().catch(() => {});
    throw error;
  }
  const seconds = (performance.now() - started) / 1000;
  await tx.rollback();
  return { deleted, batches, seconds, plan };
}

/**
 * purge() over every old row, in slices (raising the cutoff slice by slice), each slice a window with a
 * purge, each followed by a window of the same length without one; claims run throughout, and a claim is
 * counted in the window it started and ended in (one that straddles two windows is dropped).
 */
async function timeCurrent(
  session: DataApiSession,
  target: DatabaseTarget,
  retentionSeconds: number,
  oldRows: number,
  settings: PurgeSettings,
  postgresCpu: () => Map<number, number>,
): Promise<{ purged: PurgeRun['current']; claims: PurgeRun['claims']; windows: PurgeRun['windows'] }> {
  const plan = scanNodes(await session.execute(`EXPLAIN ${purgeBatchSql(inboxTables())}`, { retentionSeconds, batchSize: settings.batchSize, after: null }));
  const claim = claimHandler(target);
  const slices = Math.max(1, Math.min(20, Math.round(oldRows / ROWS_PER_WINDOW)));
  const oldSeconds = SPAN_SECONDS - retentionSeconds;
  const latencies = { during: [] as number[], without: [] as number[] };
  let window: 'during' | 'without' | 'stop' = 'without';
  const lanes = Array.from({ length: settings.claimLanes }, async () => {
    while (window !== 'stop') {
      const startedIn = window;
      const started = performance.now();
      await claim();
      const ms = performance.now() - started;
      if (window === startedIn) latencies[startedIn].push(ms);
    }
  });
  let deleted = 0;
  let batches = 0;
  let seconds = 0;
  let windowMs = 500;
  const windows = { during: { seconds: 0, postgresCpuMicros: 0 }, without: { seconds: 0, postgresCpuMicros: 0 } };
  let mark = { at: performance.now(), cpu: postgresCpu() };
  // Adds the time and PostgreSQL CPU since the last mark to the window that just ended.
  const close = (kind: 'during' | 'without') => {
    const next = { at: performance.now(), cpu: postgresCpu() };
    windows[kind].seconds += (next.at - mark.at) / 1000;
    windows[kind].postgresCpuMicros += cpuBetween(mark.cpu, next.cpu);
    mark = next;
  };
  try {
    for (let slice = 1; slice <= slices; slice++) {
      window = 'without';
      mark = { at: performance.now(), cpu: postgresCpu() };
      await sleep(windowMs);
      close('without');
      window = 'during';
      const started = performance.now();
      // Slice by slice the cutoff moves from the oldest row to the last old one.
      const report = await purge(session, {
        retentionSeconds: Math.ceil(retentionSeconds + oldSeconds * (1 - slice / slices)),
        batchSize: settings.batchSize,
        timeBudgetMs: 600_000,
      });
      windowMs = performance.now() - started;
      close('during');
      seconds += windowMs / 1000;
      deleted += report.deleted;
      batches += report.batches;
    }
    window = 'without';
    mark = { at: performance.now(), cpu: postgresCpu() };
    await sleep(windowMs);
    close('without');
  } finally {
    window = 'stop';
    await Promise.all(lanes);
  }
  return { purged: { deleted, batches, seconds, plan }, claims: { ...latencies, windows: slices }, windows };
}

/** A single-statement inbox() handler whose one call per record is the claim (and a one-row effect). */
function claimHandler(target: DatabaseTarget): () => Promise<void> {
  const metrics: InboxMetrics = { addMetric() {}, publishStoredMetrics() {} };
  const handler = inbox<{ orderId: string }>({
    consumer: 'bench-purge-claims',
    database: dataApi(target),
    logger: { debug() {}, info() {}, warn() {}, error() {} },
    metrics,
    statement: {
      sql: 'INSERT INTO public.purge_claim_effect (order_id) SELECT :orderId FROM claimed',
      params: (message) => ({ orderId: message.body.orderId }),
    },
  });
  return async () => {
    const response = await handler(sqsEvent([freshRecord()]));
    if (response.batchItemFailures.length > 0) throw new Error('purge: a claim failed while the purge ran');
  };
}

/** "Hash Join > Seq Scan" style: the join and scan nodes of an EXPLAIN, in plan order, deduplicated. */
function scanNodes(result: { rows: Record<string, unknown>[] }): string {
  const nodes = result.rows
    .map((row) => String(row['QUERY PLAN']))
    .map((line) => /(Hash Join|Nested Loop|Merge Join|Seq Scan|Index Only Scan|Index Scan|Bitmap Heap Scan|Tid Scan)/.exec(line)?.[1])
    .filter((node): node is string => node !== undefined);
  return [...new Set(nodes)].join(' + ');
}

function withDatabase(url: string, name: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${name}`;
  return parsed.toString();
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
