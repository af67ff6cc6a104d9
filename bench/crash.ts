import type { LocalStack } from '../local/index.js';
import { POWERTOOLS_REAL, powertoolsReal } from './consumers.js';
import type { Variant } from './consumers.js';
import { benchDatabase } from './database.js';
import { startDynamoDb } from './dynamodb.js';
import { Invoker } from './measure.js';
import { freshRecords, redelivery } from './records.js';
import type { Table } from './report.js';
import type { RemoteDataApi } from './servers.js';

/** What one variant did when its worker died after the effect, before the completion was recorded. */
export interface CrashResult {
  readonly id: string;
  readonly messages: number;
  /** Records whose first delivery did not complete (the worker died), so SQS delivers them again. */
  readonly crashed: number;
  /** Messages whose effect was applied more than once. */
  readonly doubles: number;
  /** Messages whose effect was never applied. */
  readonly lost: number;
  /** How the fault was made, for this variant. */
  readonly fault: string;
}

/**
 * The fault the demo injects most (its "crash after the effect, before commit"), on every variant with a
 * dedup record: each record's effect runs, and the worker dies before the record of its completion is
 * written. For the inbox and the naive pattern the effect's statement runs and its answer never comes back
 * (the local Data API drops the response: the worker is gone); for Powertools, DynamoDB never gets the
 * UpdateItem that marks the record COMPLETED (the local DynamoDB refuses it). SQS then delivers every
 * record again, after the in-progress expiry Powertools set has passed (a visibility timeout is at least
 * the function's timeout, the remaining time Powertools reads), and the effect rows say what happened.
 */
export async function crashAfterEffect(
  local: LocalStack,
  variants: readonly Variant[],
  options: { batches: number; batchSize: number },
): Promise<CrashResult[]> {
  const dynamodb = await startDynamoDb();
  const server: RemoteDataApi = {
    name: 'crash',
    endpoint: local.dataApi.endpoint,
    resourceArn: local.dataApi.resourceArn,
    secretArn: local.dataApi.secretArn,
    latency: async () => {},
    stats: async () => ({ ...local.dataApi.stats.calls }),
    resetStats: async () => local.dataApi.stats.reset(),
  };
  const database = await benchDatabase(local.postgres.url, server);
  try {
    const invoker = new Invoker(database, dynamodb.endpoint);
    const results: CrashResult[] = [];
    for (const listed of variants.filter((variant) => variant.dedup && variant.id !== 'powertools-style')) {
      // Powertools with a short remaining time, so that its in-progress expiry passes before the redelivery, as on AWS.
      const variant = listed.id === POWERTOOLS_REAL ? powertoolsReal(POWERTOOLS_REAL, IN_PROGRESS_MS) : listed;
      const events = Array.from({ length: options.batches }, () => freshRecords(options.batchSize));
      const messages = options.batches * options.batchSize;
      const powertools = variant.id === POWERTOOLS_REAL;
      if (powertools) dynamodb.refuseUpdates(() => true);
      else local.dataApi.faults.dropResponse({ operation: 'ExecuteStatement', count: Infinity, match: (sql) => sql.includes('public.bench_effect') });
      let crashed = 0;
      for (const records of events) crashed += await invoker.invoke(variant, records, server, 'crash after the effect');
      dynamodb.refuseUpdates(undefined);
      local.dataApi.faults.clear();
      // The open transactions of the dead workers roll back at the server's idle timeout; Powertools' INPROGRESS records expire.
      await new Promise((resolve) => setTimeout(resolve, IN_PROGRESS_MS + 2500));
      for (const records of events) await invoker.invoke(variant, records.map(redelivery), server, 'redelivery after the crash');
      const counts = await effectCounts(database, variant.id);
      const orders = events.flat().map((record) => (JSON.parse(record.body) as { orderId: string }).orderId);
      results.push({
        id: variant.id,
        messages,
        crashed,
        doubles: orders.filter((order) => (counts.get(order) ?? 0) > variant.effectStatements).length,
        lost: orders.filter((order) => (counts.get(order) ?? 0) === 0).length,
        fault: powertools
          ? 'UpdateItem (COMPLETED) refused: the worker died after the effect'
          : "the effect statement's answer dropped: the worker died after it ran",
      });
      invoker.failures.splice(0);
    }
    return results;
  } finally {
    database.close();
    await dynamodb.close();
  }
}

/** The remaining time the crashing Powertools handler reports, in milliseconds: its in-progress expiry. */
const IN_PROGRESS_MS = 500;

/** Effect rows per order of one variant. */
async function effectCounts(database: Awaited<ReturnType<typeof benchDatabase>>, variant: string): Promise<Map<string, number>> {
  const { rows } = await database.session.execute('SELECT order_id, count(*) AS effects FROM public.bench_effect WHERE variant = :variant GROUP BY order_id', {
    variant,
  });
  return new Map(rows.map((row) => [String(row.order_id), Number(row.effects)]));
}

/** Section 5b's table. */
export function crashTable(results: readonly CrashResult[], problems: string[]): Table {
  for (const result of results) {
    if (result.crashed === 0) problems.push(`${result.id}: the crash after the effect hit no record, so section 5b shows nothing for it`);
    if (result.id.startsWith('inbox') && (result.doubles > 0 || result.lost > 0)) {
      problems.push(`${result.id}: ${result.doubles} double and ${result.lost} lost effects when the worker died after the effect`);
    }
  }
  return {
    title: '5b. The worker dies after the effect, before the completion is recorded: double effects per variant',
    headers: ['variant', 'messages', 'first deliveries that did not complete', 'double effects after redelivery', 'lost effects', 'how the fault is made'],
    rows: results.map((result) => [result.id, String(result.messages), String(result.crashed), String(result.doubles), String(result.lost), result.fault]),
    notes: [
      'Every record of the first delivery is hit. The inbox keeps the claim and the effect in one transaction (or one statement): a ' +
        'transaction whose worker died rolls back, effect and claim together, and its redelivery applies once; a single statement that ran ' +
        'committed both, and its redelivery is a duplicate. Powertools keeps its record in DynamoDB and the effect in Aurora: the INPROGRESS ' +
        `record outlives the worker, and once its in-progress expiry passes (${IN_PROGRESS_MS} ms here, the remaining time its context reported; ` +
        "on AWS the function's timeout, which the queue's visibility timeout exceeds) the redelivery takes the record and applies the effect again. " +
        'The naive pattern has the same gap between its effect and its record.',
      "It runs in the bench's own process on the local stack of section 5, with dynalite in-process, after the server process has stopped.",
    ],
  };
}
