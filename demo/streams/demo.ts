import { InboxConfigError } from '../../lambda/inbox/index.js';
import type { FaultName } from '../../local/scenario/fault-schedule.js';
import { startLocal } from '../../local/stack.js';
import { STREAM_FAULTS } from '../../local/scenario/stream-faults.js';
import { runStreamScenario } from '../../local/scenario/run-stream-scenario.js';
import type { StreamScenarioResult } from '../../local/scenario/run-stream-scenario.js';
import type { StreamSourceName } from '../../local/scenario/stream.js';
import { streamDemoConsumer } from './consumers.js';
import type { StreamPattern } from './consumers.js';

/** What `sqs-inbox demo --source <stream>` runs with. */
export interface StreamDemoOptions {
  readonly source: StreamSourceName;
  readonly messages: number;
  readonly seed: number;
  /** `--faults` as given, comma separated, or `none`. @default every one of STREAM_FAULTS */
  readonly faults: string | undefined;
}

const SOURCE_NAMES: Record<StreamSourceName, string> = {
  kinesis: 'a Kinesis stream of 4 shards (partition key: the customer)',
  dynamodb: "a DynamoDB table's stream of 4 shards (item key: the customer)",
  kafka: 'a Kafka topic of 4 partitions (record key: the customer)',
};

const LABELS: Record<StreamPattern, string> = {
  inbox: 'inbox (claim + effect in one transaction)',
  naive: 'naive (check, apply, record)',
};

/**
 * `sqs-inbox demo --source kinesis|dynamodb|kafka`: the same orders and faults through the source's inbox
 * handler, then the naive consumer, on the local stream and its event source mapping; a side-by-side
 * table; exit code 1 if the inbox run shows a double, lost or out-of-order effect, or did not drain.
 */
export async function runStreamDemo(options: StreamDemoOptions, out: NodeJS.WritableStream): Promise<number> {
  const faults = parseStreamFaults(options.faults);
  out.write(
    `sqs-inbox demo: ${options.messages} orders over ${SOURCE_NAMES[options.source]}, seed ${options.seed}\n` +
      `faults: ${faults.length ? faults.join(', ') : 'none'}\n` +
      'Starting embedded PostgreSQL and the local Data API...\n',
  );
  const local = await startLocal({ dataApi: { transactionIdleTimeoutMs: 2000 } });
  try {
    const results: StreamScenarioResult[] = [];
    for (const pattern of ['inbox', 'naive'] as const) {
      const label = LABELS[pattern];
      const result = await runStreamScenario(local, {
        source: options.source,
        ...streamDemoConsumer(options.source, pattern, options.messages),
        messages: options.messages,
        seed: options.seed,
        faults,
        onProgress: (done, total) => progress(out, label, done, total),
      });
      if ((out as NodeJS.WriteStream).isTTY) out.write('\n');
      else out.write(`  ${label}: ${result.writes} records checkpointed in ${(result.elapsedMs / 1000).toFixed(1)} s\n`);
      results.push(result);
    }
    out.write(`\n${streamTable(results)}\n`);
    const [inbox, naive] = results as [StreamScenarioResult, StreamScenarioResult];
    const bad = !inbox.completed || inbox.extraEffects > 0 || inbox.lost > 0 || inbox.orderViolations > 0;
    out.write(
      bad
        ? '\nFAILED: the inbox run shows a double, lost or out-of-order effect, or did not finish. This is a bug: please report it with the seed.\n'
        : `\nThe inbox applied every order exactly once, lost none and kept each customer's order; the naive consumer applied ${naive.extraEffects} effects twice.\n`,
    );
    return bad ? 1 : 0;
  } finally {
    await local.close();
  }
}

const ROWS: readonly (readonly [string, (result: StreamScenarioResult) => string])[] = [
  ['orders produced', (r) => String(r.messages)],
  ['producer re-sends (same key)', (r) => String(r.duplicateSends)],
  ['deliveries to handlers', (r) => String(r.recordsDelivered)],
  ['invocations', (r) => String(r.invocations)],
  ['crashes before the checkpoint', (r) => String(r.crashesBeforeCheckpoint)],
  ['orders shipped', (r) => String(r.applied)],
  ['orders shipped twice or more', (r) => String(r.doubled)],
  ['double effects', (r) => String(r.extraEffects)],
  ['lost (not shipped, not parked)', (r) => String(r.lost)],
  ['parked', (r) => String(r.parked)],
  ['out-of-order effects', (r) => String(r.orderViolations)],
  ['Data API calls per record', (r) => r.callsPerRecord.toFixed(2)],
  ['drained before the timeout', (r) => (r.completed ? 'yes' : 'NO')],
  ['wall time', (r) => `${(r.elapsedMs / 1000).toFixed(1)} s`],
];

/** The side-by-side table of stream runs, laid out as the SQS demo's. */
export function streamTable(results: readonly StreamScenarioResult[]): string {
  const header = ['', ...results.map((r) => r.pattern)];
  const lines = [header, ...ROWS.map(([name, cell]) => [name, ...results.map(cell)])];
  const widths = header.map((_, column) => Math.max(...lines.map((line) => line[column]!.length)));
  const render = (line: string[]) =>
    line.map((cell, column) => (column === 0 ? cell.padEnd(widths[0]!) : cell.padStart(Math.max(widths[column]!, 7)))).join('  ');
  const body = lines.map(render);
  const faultLines = results.map(
    (r) =>
      `faults injected (${r.pattern} run): ${
        Object.entries(r.faultsInjected)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ') || 'none'
      }`,
  );
  return [body[0], '-'.repeat(body[0]!.length), ...body.slice(1), '', ...faultLines].join('\n');
}

function progress(out: NodeJS.WritableStream, label: string, done: number, total: number): void {
  if (!(out as NodeJS.WriteStream).isTTY) return;
  const width = 30;
  const filled = Math.round((done / Math.max(1, total)) * width);
  out.write(`\r  ${label.padEnd(44)} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${String(done).padStart(6)}/${total}`);
}

function parseStreamFaults(text: string | undefined): FaultName[] {
  if (text === undefined) return [...STREAM_FAULTS];
  if (text === 'none' || text === '') return [];
  const names = text.split(',').map((name) => name.trim());
  for (const name of names) {
    if (!(STREAM_FAULTS as readonly string[]).includes(name)) {
      throw new InboxConfigError('--faults', `"${name}" is not a fault of the stream demo; choose from ${STREAM_FAULTS.join(', ')}, or none`);
    }
  }
  return names as FaultName[];
}
