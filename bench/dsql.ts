import { parseArgs } from 'node:util';
import pg from 'pg';
import type { SQSRecord } from 'aws-lambda';
import { inbox } from '../lambda/inbox/index.js';
import { migrate } from '../lambda/inbox/operations.js';
import type { InboxOptions } from '../lambda/inbox/index.js';
import { dsql } from '../lambda/inbox/transport/dsql/index.js';
import { PostgresSession } from '../lambda/inbox/transport/postgres/postgres-session.js';
import { DSQL_PROFILE_EXEMPT, startDsqlProfile } from '../local/dsql/profile.js';
import type { DsqlProfile } from '../local/dsql/profile.js';
import { createDatabase, startPostgres } from '../local/postgres.js';
import { EXAMPLE_ORDER_MIGRATIONS } from '../demo/functions/example-migrations.js';
import { LATENCY_MODEL } from './latency-model.js';
import { toMarkdown, toText } from './report.js';
import type { Table } from './report.js';

/**
 * The inbox on the DSQL profile (local/dsql/profile.ts): per mode and per injected conflict rate (0%, 1% and
 * 10% of commits), the calls per message, the conflicts retried per message, the redeliveries, the wall time
 * the calls take at DSQL's latencies in the bench's latency model, and the time measured here (embedded
 * PostgreSQL on loopback: no network). Every run is checked for 0 double and 0 lost effects.
 * `npm run bench -- --transport dsql`, or `tsx bench/dsql.ts [--messages 200] [--batch 10] [--seed 7]`.
 */

type Order = { orderId: string };
const SHIP = `INSERT INTO public.orders (order_id, status, shipped_count) VALUES (:orderId, 'shipped', 1)
  ON CONFLICT (order_id) DO UPDATE SET shipped_count = orders.shipped_count + 1`;
const SHIP_CLAIMED = `INSERT INTO public.orders (order_id, status, shipped_count) SELECT :orderId, 'shipped', 1 FROM claimed
  ON CONFLICT (order_id) DO UPDATE SET shipped_count = orders.shipped_count + 1`;
const SHIP_BATCH = `INSERT INTO public.orders (order_id, status, shipped_count) SELECT body->>'orderId', 'shipped', 1 FROM claimed
  ON CONFLICT (order_id) DO UPDATE SET shipped_count = orders.shipped_count + 1`;

/** The four modes, as a consumer writes them. */
export const DSQL_BENCH_MODES: Record<string, Partial<InboxOptions<Order>>> = {
  'transaction (apply)': { apply: async (tx, message) => void (await tx.execute(SHIP, { orderId: message.body.orderId })) },
  statement: { statement: (message) => ({ sql: SHIP_CLAIMED, params: { orderId: message.body.orderId } }) },
  'batch transaction (applyBatch)': {
    applyBatch: async (tx, messages) =>
      void (await tx.executeBatch(
        SHIP,
        messages.map((message) => ({ orderId: message.body.orderId })),
      )),
  },
  'batch statement (statementBatch)': { statementBatch: { sql: SHIP_BATCH } },
};

export const DSQL_CONFLICT_RATES = [0, 0.01, 0.1] as const;

/** The modes whose every call is one autocommit write. */
const AUTOCOMMIT = new Set(['statement', 'batch statement (statementBatch)']);

/** One mode at one conflict rate. */
export interface DsqlBenchRow {
  readonly mode: string;
  readonly rate: number;
  readonly messages: number;
  readonly statements: number;
  readonly commits: number;
  readonly conflicts: number;
  readonly redeliveries: number;
  readonly modelledMsPerMessage: number;
  readonly measuredMsPerMessage: number;
  readonly doubles: number;
  readonly lost: number;
}

const STATEMENT_MS = LATENCY_MODEL.elsewhere['Aurora DSQL statement (warm connection)']!.ms;
const COMMIT_MS = LATENCY_MODEL.elsewhere['Aurora DSQL commit']!.ms;

/** A seeded dice, so that a run injects the same conflicts each time. */
function seeded(seed: number): () => number {
  let state = seed >>> 0 || 1;
  return () => (state = (Math.imul(state, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

function record(orderId: string, index: number): SQSRecord {
  return {
    messageId: `dsql-bench-${orderId}`,
    receiptHandle: `rh-${index}`,
    body: JSON.stringify({ orderId }),
    attributes: { ApproximateReceiveCount: '1', SentTimestamp: '0', SenderId: 'bench', ApproximateFirstReceiveTimestamp: '0' },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:us-east-1:123456789012:orders',
    awsRegion: 'us-east-1',
  };
}

/** Runs every mode at every rate on a fresh profile database; the rows of the report. */
export async function measureDsql(options: { messages: number; batch: number; seed: number }): Promise<DsqlBenchRow[]> {
  const server = await startPostgres();
  const url = await createDatabase(server.url, `dsql_bench_${process.pid}`);
  const direct = new pg.Pool({ connectionString: url, max: 2, options: DSQL_PROFILE_EXEMPT });
  direct.on('error', () => {}); // an idle connection closed by the server's shutdown
  let profile: DsqlProfile | undefined;
  const rows: DsqlBenchRow[] = [];
  try {
    await migrate(new PostgresSession({ pool: direct }, { callTimeoutMs: 30_000 }), [EXAMPLE_ORDER_MIGRATIONS]);
    profile = await startDsqlProfile(url);
    await profile.enforceRowLimit();
    const target = dsql({
      endpoint: profile.host,
      port: profile.port,
      region: 'us-east-1',
      user: 'postgres',
      database: new URL(url).pathname.slice(1),
      ssl: false,
      password: async () => 'postgres',
    });
    for (const [mode, shape] of Object.entries(DSQL_BENCH_MODES)) {
      for (const rate of DSQL_CONFLICT_RATES) {
        await direct.query('DELETE FROM public.orders');
        await direct.query('DELETE FROM inbox.consumed_message');
        const handler = inbox<Order>({ consumer: 'dsql-bench', database: target as never, logger: quiet, metrics: noMetrics, ...shape } as InboxOptions<Order>);
        const records = Array.from({ length: options.messages }, (_, i) => record(`${mode.split(' ')[0]}-${rate}-${i}`, i));
        profile.proxy.conflicts.rate = rate;
        profile.proxy.conflicts.random = seeded(options.seed + Math.round(rate * 1000));
        profile.proxy.stats.reset();
        const conflictsBefore = profile.proxy.conflicts.injected;
        const started = performance.now();
        let pending = records;
        let redeliveries = 0;
        // SQS redelivers what the handler reports failed; the loop stands for it, without the visibility timeout.
        for (let round = 0; pending.length > 0 && round < 50; round++) {
          const failed = new Set<string>();
          for (let i = 0; i < pending.length; i += options.batch) {
            const response = await handler({ Records: pending.slice(i, i + options.batch) }, { getRemainingTimeInMillis: () => 60_000 } as never);
            for (const failure of response.batchItemFailures) failed.add(failure.itemIdentifier);
          }
          pending = pending.filter((r) => failed.has(r.messageId));
          redeliveries += pending.length;
        }
        const measured = performance.now() - started;
        const calls = profile.proxy.stats.calls;
        const statements = calls.ExecuteStatement + calls.BeginTransaction + calls.RollbackTransaction + calls.BatchExecuteStatement;
        const commits = calls.CommitTransaction;
        const counts = (await direct.query<{ shipped_count: number }>('SELECT shipped_count FROM public.orders')).rows.map((row) => row.shipped_count);
        rows.push({
          mode,
          rate,
          messages: records.length,
          statements,
          commits,
          conflicts: profile.proxy.conflicts.injected - conflictsBefore,
          redeliveries,
          // An autocommit write (the statement modes) commits too: it pays the commit's round on top of the statement.
          modelledMsPerMessage: (statements * STATEMENT_MS + (AUTOCOMMIT.has(mode) ? statements : commits) * COMMIT_MS) / records.length,
          measuredMsPerMessage: measured / records.length,
          doubles: counts.filter((count) => count > 1).length,
          lost: records.length - counts.length,
        });
      }
    }
    await target.pool.end();
  } finally {
    await profile?.close();
    await direct.end();
    await server.close();
  }
  return rows;
}

const quiet = { debug() {}, info() {}, warn() {}, error() {} };
const noMetrics = { addMetric() {}, publishStoredMetrics() {} };

/** The report's table. */
export function dsqlTable(rows: readonly DsqlBenchRow[]): Table {
  const per = (n: number, row: DsqlBenchRow) => (n / row.messages).toFixed(2);
  return {
    title: `Aurora DSQL profile: per message, by mode and injected conflict rate (latency model: ${STATEMENT_MS} ms a statement, ${COMMIT_MS} ms a commit; see bench/README.md)`,
    headers: [
      'mode',
      'conflicts injected',
      'calls/msg',
      'commits/msg',
      'retries/msg',
      'redelivered/msg',
      'modelled ms/msg',
      'measured ms/msg (loopback)',
      'double',
      'lost',
    ],
    rows: rows.map((row) => [
      row.mode,
      `${(row.rate * 100).toFixed(0)}%`,
      per(row.statements + row.commits, row),
      per(row.commits, row),
      per(row.conflicts, row),
      per(row.redeliveries, row),
      row.modelledMsPerMessage.toFixed(1),
      row.measuredMsPerMessage.toFixed(2),
      String(row.doubles),
      String(row.lost),
    ]),
  };
}

/** `tsx bench/dsql.ts`: prints the table (and Markdown with `--markdown`); exits 1 on a double or lost effect. */
export async function runDsqlBench(argv: readonly string[] = process.argv.slice(2)): Promise<number> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      messages: { type: 'string', default: '200' },
      batch: { type: 'string', default: '10' },
      seed: { type: 'string', default: '7' },
      markdown: { type: 'boolean', default: false },
      transport: { type: 'string' },
    },
    strict: false,
  });
  const rows = await measureDsql({ messages: Number(values.messages), batch: Number(values.batch), seed: Number(values.seed) });
  const table = dsqlTable(rows);
  console.log(values.markdown ? toMarkdown(table) : toText(table));
  const broken = rows.filter((row) => row.doubles > 0 || row.lost > 0);
  for (const row of broken) console.error(`${row.mode} at ${row.rate * 100}%: ${row.doubles} double, ${row.lost} lost`);
  return broken.length > 0 ? 1 : 0;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  runDsqlBench().then(
    (code) => process.exit(code),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
