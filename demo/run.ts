import { parseArgs } from 'node:util';
import { InboxConfigError } from '../lambda/inbox/index.js';
import { FAULTS } from '../local/scenario/fault-schedule.js';
import type { FaultName } from '../local/scenario/fault-schedule.js';
import { DEMO_PATTERNS, demoConsumer } from './consumers.js';
import type { DemoPattern } from './consumers.js';
import { runPipelineDemo } from './pipeline/demo.js';
import { runScenario } from '../local/scenario/run-scenario.js';
import type { ScenarioResult } from '../local/scenario/run-scenario.js';
import { startLocal } from '../local/stack.js';
import { runStreamDemo } from './streams/demo.js';
import { STREAM_SOURCES } from '../local/scenario/stream.js';
import type { StreamSourceName } from '../local/scenario/stream.js';
import { DEFAULT_DSQL_CONFLICT_RATE, SCENARIO_TRANSPORTS } from '../local/scenario/transport.js';
import type { ScenarioTransport } from '../local/scenario/transport.js';

/**
 * `sqs-inbox demo` (what `npm start` runs): the same orders, faults and consumers, through the inbox
 * handler per record, the inbox handler per batch, then the naive check-apply-record consumer; a
 * side-by-side table; exit code 1 if an inbox run shows a single double, lost or out-of-order effect.
 * With `--pipeline`, the two-stage demo instead (demo/pipeline/demo.ts); with `--source kinesis|dynamodb|kafka`,
 * the inbox against the naive consumer on that local stream (demo/streams/demo.ts).
 */
export async function runDemo(args: string[], out: NodeJS.WritableStream = process.stdout): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      messages: { type: 'string', default: '2000' },
      seed: { type: 'string', default: '417' },
      // No default here: --pipeline has more faults, and each mode defaults to all of its own.
      faults: { type: 'string' },
      consumers: { type: 'string', default: '3' },
      pipeline: { type: 'boolean', default: false },
      source: { type: 'string', default: 'sqs' },
      transport: { type: 'string', default: 'data-api' },
      // No default here: only --transport dsql takes it (runScenario's DEFAULT_DSQL_CONFLICT_RATE otherwise).
      'conflict-rate': { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    out.write(
      `Usage: sqs-inbox demo [--messages N] [--seed N] [--faults ${FAULTS.join(',')}|none] [--consumers N] [--pipeline | --source sqs|${STREAM_SOURCES.join('|')}] [--transport ${SCENARIO_TRANSPORTS.join('|')}] [--conflict-rate 0..1, with dsql]\n`,
    );
    return 0;
  }
  const messages = wholeNumber(values.messages, '--messages', 1);
  const seed = wholeNumber(values.seed, '--seed', 0);
  const consumers = wholeNumber(values.consumers, '--consumers', 1);
  const transport = transportOf(values.transport, values.source !== 'sqs' ? '--source' : values.pipeline ? '--pipeline' : undefined);
  const conflictRate = conflictRateOf(values['conflict-rate'], transport);
  if (values.source !== 'sqs') {
    if (!(STREAM_SOURCES as readonly string[]).includes(values.source))
      throw new InboxConfigError('--source', `"${values.source}" must be sqs, ${STREAM_SOURCES.join(', ')}`);
    if (values.pipeline) throw new InboxConfigError('--source', 'the pipeline demo runs on SQS: give --pipeline or --source, not both');
    return runStreamDemo({ source: values.source as StreamSourceName, messages, seed, faults: values.faults }, out);
  }
  if (values.pipeline) return runPipelineDemo({ messages, seed, consumers, faults: values.faults }, out);
  const faults = parseFaults(values.faults ?? FAULTS.join(','));

  out.write(
    `sqs-inbox demo: ${messages} orders over a FIFO queue, ${consumers} racing consumers, seed ${seed}\n` +
      `faults: ${faults.length ? faults.join(', ') : 'none'}\n` +
      `transport: ${transportLabel(transport, conflictRate)}\n` +
      'Starting embedded PostgreSQL, the local Data API and the local SQS...\n',
  );
  const local = await startLocal({ dataApi: { transactionIdleTimeoutMs: 2000 } });
  try {
    const results: ScenarioResult[] = [];
    for (const pattern of DEMO_PATTERNS) {
      const label = LABELS[pattern];
      const result = await runScenario(local, {
        ...demoConsumer(pattern),
        messages,
        seed,
        faults,
        consumers,
        transport,
        ...(conflictRate === undefined ? {} : { conflictRate }),
        onProgress: (settled, total) => progress(out, label, settled, total),
      });
      if ((out as NodeJS.WriteStream).isTTY) out.write('\n');
      else out.write(`  ${label}: ${result.sends} messages settled in ${(result.elapsedMs / 1000).toFixed(1)} s\n`);
      results.push(result);
    }
    out.write(`\n${table(results, transport)}\n`);
    const inboxRuns = results.filter((result) => result.pattern !== 'naive');
    const naiveRun = results.find((result) => result.pattern === 'naive')!;
    const bad = inboxRuns.some((run) => !run.completed || run.extraEffects > 0 || run.lost > 0 || run.orderViolations > 0);
    out.write(
      bad
        ? '\nFAILED: an inbox run shows a double, lost or out-of-order effect, or did not finish. This is a bug: please report it with the seed.\n'
        : `\nThe inbox, per record and per batch, applied every order exactly once, lost none and kept each customer's order; the naive consumer applied ${naiveRun.extraEffects} effects twice.\n`,
    );
    return bad ? 1 : 0;
  } finally {
    await local.close();
  }
}

const LABELS: Record<DemoPattern, string> = {
  inbox: 'inbox (claim + effect in one transaction)',
  'inbox-batch': 'inbox batch (one transaction per batch)',
  naive: 'naive (check, apply, record)',
};

function progress(out: NodeJS.WritableStream, label: string, settled: number, total: number): void {
  if (!(out as NodeJS.WriteStream).isTTY) return;
  const width = 30;
  const filled = Math.round((settled / Math.max(1, total)) * width);
  out.write(`\r  ${label.padEnd(44)} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${String(settled).padStart(6)}/${total}`);
}

/** The rows of a scenario comparison, for the demo's table and the benchmark's. */
export const SCENARIO_ROWS: readonly (readonly [string, (result: ScenarioResult) => string])[] = [
  ['orders produced', (r) => String(r.messages)],
  ['duplicate sends (same key)', (r) => String(r.duplicateSends)],
  ['poison messages', (r) => String(r.poison)],
  ['deliveries to handlers', (r) => String(r.recordsDelivered)],
  ['invocations', (r) => String(r.invocations)],
  ['orders shipped', (r) => String(r.applied)],
  ['orders shipped twice or more', (r) => String(r.doubled)],
  ['double effects', (r) => String(r.extraEffects)],
  ['lost (not shipped, parked or in DLQ)', (r) => String(r.lost)],
  ['well-formed orders only in DLQ or parked', (r) => String(r.wellFormedInDlqOrParked)],
  ['parked', (r) => String(r.parked)],
  ['in the dead-letter queue', (r) => String(r.deadLettered)],
  ['out-of-order effects', (r) => String(r.orderViolations)],
  ['Data API calls per message sent', (r) => r.callsPerMessage.toFixed(2)],
  ['drained before the timeout', (r) => (r.completed ? 'yes' : 'NO')],
  ['wall time', (r) => `${(r.elapsedMs / 1000).toFixed(1)} s`],
];

const TRANSPORT_ROW = ['transport', (r: ScenarioResult) => r.transport] as const;

/**
 * On DSQL: the conflicts the profile injected at COMMIT, and the transactions the runtime ran again after a
 * conflict (injected, or a racing claim that repeatable read failed with the same 40001); naive retries none.
 */
const CONFLICTS_ROW = [
  'OCC conflicts injected / retried',
  (r: ScenarioResult) => (r.conflicts ? `${r.conflicts.injected} / ${r.conflicts.retried}` : '-'),
] as const;

const FAULTS_ROW = [
  'faults injected',
  (r: ScenarioResult) =>
    Object.entries(r.faultsInjected)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ') || 'none',
] as const;

function table(results: readonly ScenarioResult[], transport: ScenarioTransport): string {
  // On the wire a call is a statement's round trip, counted at the wire proxy.
  const calls = (name: string) => (transport !== 'data-api' && name === 'Data API calls per message sent' ? 'wire round trips per message sent' : name);
  const rows = [
    TRANSPORT_ROW,
    ...SCENARIO_ROWS.map(([name, cell]) => [calls(name), cell] as const),
    ...(transport === 'dsql' ? [CONFLICTS_ROW] : []),
    FAULTS_ROW,
  ];
  const header = ['', ...results.map((r) => r.pattern)];
  const lines = [header, ...rows.map(([name, cell]) => [name, ...results.map(cell)])];
  const widths = header.map((_, column) => Math.max(...lines.filter((_, i) => column === 0 || i < lines.length - 1).map((line) => line[column]!.length)));
  const render = (line: string[]) => line.map((cell, column) => (column === 0 ? cell.padEnd(widths[0]!) : cell.padStart(widths[column]!))).join('  ');
  const body = lines.slice(0, -1).map(render);
  const faultsLine = lines.at(-1)!;
  const faultLines = results.map((result, index) => `faults injected (${result.pattern} run): ${faultsLine[index + 1]}`);
  return [body[0], '-'.repeat(body[0]!.length), ...body.slice(1), '', ...faultLines].join('\n');
}

function transportLabel(transport: ScenarioTransport, conflictRate = DEFAULT_DSQL_CONFLICT_RATE): string {
  if (transport === 'data-api') return 'data-api (the local Data API over HTTP)';
  if (transport === 'postgres') return 'postgres (node-postgres over the PostgreSQL wire protocol, through the wire proxy)';
  return `dsql (dsql() on the DSQL profile: PostgreSQL held to Aurora DSQL's rules, ${Number((conflictRate * 100).toFixed(2))}% of COMMITs failing with an OCC conflict)`;
}

/** `--conflict-rate`: the share of COMMITs the DSQL profile fails, 0 to 1; only with `--transport dsql`. */
function conflictRateOf(text: string | undefined, transport: ScenarioTransport): number | undefined {
  if (text === undefined) return undefined;
  if (transport !== 'dsql') throw new InboxConfigError('--conflict-rate', `is the DSQL profile's: give it with --transport dsql, or leave it out`);
  const rate = Number(text);
  if (text.trim() === '' || !(rate >= 0 && rate <= 1))
    throw new InboxConfigError('--conflict-rate', `"${text}" must be a share of COMMITs from 0 to 1, e.g. 0.05`);
  return rate;
}

/** The `--transport` value; only the SQS demo (not `other`, the pipeline or a stream) runs on the wire. */
function transportOf(text: string, other: string | undefined): ScenarioTransport {
  if (!(SCENARIO_TRANSPORTS as readonly string[]).includes(text))
    throw new InboxConfigError('--transport', `"${text}" must be one of ${SCENARIO_TRANSPORTS.join(', ')}`);
  if (text !== 'data-api' && other) throw new InboxConfigError('--transport', `${text} runs the SQS demo; ${other} runs on the Data API: give one of them`);
  return text as ScenarioTransport;
}

function wholeNumber(text: string, flag: string, min: number): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < min) throw new InboxConfigError(flag, `"${text}" must be a whole number of at least ${min}`);
  return value;
}

function parseFaults(text: string): FaultName[] {
  if (text === 'none' || text === '') return [];
  const names = text.split(',').map((name) => name.trim());
  for (const name of names) {
    if (!(FAULTS as readonly string[]).includes(name)) {
      throw new InboxConfigError('--faults', `unknown fault "${name}"; choose from ${FAULTS.join(', ')}, or none`);
    }
  }
  return names as FaultName[];
}
