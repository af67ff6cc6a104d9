import { InboxConfigError } from '../../lambda/inbox/index.js';
import { startLocal } from '../../local/stack.js';
import { PIPELINE_FAULTS } from './faults.js';
import type { PipelineFaultName } from './faults.js';
import { runPipeline } from './run.js';
import type { PipelineResult } from './run.js';
import { PIPELINE_VARIANTS } from './variants.js';
import type { PipelineVariant } from './variants.js';

/** The demo's settings, checked by `runDemo`; `faults` as given on the command line. */
export interface PipelineDemoSettings {
  readonly messages: number;
  readonly seed: number;
  readonly consumers: number;
  /** Comma-separated fault names, or `none`. @default every fault in PIPELINE_FAULTS */
  readonly faults: string | undefined;
}

const LABELS: Record<PipelineVariant, string> = {
  outbox: 'inbox + outbox',
  'send-in-handler': 'send in handler',
  'send-after-commit': 'send after commit',
};

/**
 * `sqs-inbox demo --pipeline`: the same orders and faults through the two-stage pipeline (ship, then
 * invoice) once per way of handing the invoice message on; one table; exit code 1 if the inbox + outbox
 * pipeline shows a single double, lost, out-of-order or phantom effect at either stage, or did not finish.
 */
export async function runPipelineDemo(settings: PipelineDemoSettings, out: NodeJS.WritableStream): Promise<number> {
  const faults = parseFaults(settings.faults);
  const { messages, seed, consumers } = settings;
  out.write(
    `sqs-inbox demo --pipeline: ${messages} orders, shipped then invoiced, two FIFO queues chained by a hand-off, ${consumers} racing consumers per stage, seed ${seed}\n` +
      `faults: ${faults.length ? faults.join(', ') : 'none'}\n` +
      'Starting embedded PostgreSQL, the local Data API and the local SQS...\n',
  );
  const local = await startLocal({ dataApi: { transactionIdleTimeoutMs: 2000 } });
  const tty = (out as NodeJS.WriteStream).isTTY === true;
  try {
    const results: PipelineResult[] = [];
    for (const variant of PIPELINE_VARIANTS) {
      const label = LABELS[variant];
      const result = await runPipeline({
        local,
        variant,
        messages,
        seed,
        faults,
        consumers,
        onProgress: ({ shipSettled, shipSent, invoicesWaiting }) => {
          if (tty)
            out.write(
              `\r  ${label.padEnd(18)} orders settled ${String(shipSettled).padStart(6)}/${shipSent}, invoice messages waiting ${String(invoicesWaiting).padStart(5)}`,
            );
        },
      });
      out.write(tty ? '\n' : `  ${label}: ${messages} orders through both stages in ${seconds(result.elapsedMs)}\n`);
      results.push(result);
    }
    out.write(`\n${pipelineTable(results)}\n`);
    const verdict = pipelineVerdict(results);
    out.write(`\n${verdict.text}\n`);
    return verdict.code;
  } finally {
    await local.close();
  }
}

type Row = readonly [string, (result: PipelineResult) => string];

/** The table's sections, each a stage or the hand-off between them. */
const SECTIONS: readonly (readonly [string, readonly Row[]])[] = [
  [
    'ship (orders queue)',
    [
      ['orders produced', (r) => String(r.messages)],
      ['duplicate sends (same key)', (r) => String(r.duplicateSends)],
      ['poison messages', (r) => String(r.poison)],
      ['orders shipped', (r) => String(r.ship.applied)],
      ['double effects', (r) => String(r.ship.extraEffects)],
      ['lost (not shipped, parked or in DLQ)', (r) => String(r.ship.lostKeys.length)],
      ['parked or in the dead-letter queue', (r) => String(r.ship.parked + r.ship.deadLettered)],
      ['out-of-order effects', (r) => String(r.ship.outOfOrder.length)],
    ],
  ],
  [
    'hand-off (ship -> invoices queue)',
    [
      ['invoice messages handed to SQS', (r) => String(r.handOff.sends)],
      ['orders handed on twice or more', (r) => String(r.handOff.ordersSentTwice)],
      ["outbox rows sent by the handler's relay", (r) => (r.handOff.sweeper ? String(r.handOff.relayed) : '-')],
      ['outbox rows sent by the sweeper', (r) => (r.handOff.sweeper ? String(r.handOff.swept) : '-')],
    ],
  ],
  [
    'invoice (invoices queue)',
    [
      ['orders invoiced, of those shipped', (r) => `${r.invoice.applied}/${r.invoice.expected}`],
      ['double effects', (r) => String(r.invoice.extraEffects)],
      ['lost (shipped, never invoiced)', (r) => String(r.invoice.lostKeys.length)],
      ['phantom (invoiced while not shipped)', (r) => String(r.invoice.phantomKeys.length)],
      ['out-of-order effects', (r) => String(r.invoice.outOfOrder.length)],
    ],
  ],
  [
    '',
    [
      ['drained before the timeout', (r) => (r.completed ? 'yes' : 'NO')],
      ['wall time', (r) => seconds(r.elapsedMs)],
    ],
  ],
];

/** The side-by-side table of the variants, then each run's faults. */
export function pipelineTable(results: readonly PipelineResult[]): string {
  const lines: string[][] = [['', ...results.map((r) => LABELS[r.variant])]];
  for (const [title, rows] of SECTIONS) {
    if (title) lines.push([title]);
    for (const [name, cell] of rows) lines.push([title ? `  ${name}` : name, ...results.map(cell)]);
  }
  const width = (column: number) => Math.max(...lines.map((line) => line[column]?.length ?? 0));
  const render = (line: string[]) =>
    line.length === 1 ? line[0]! : line.map((cell, column) => (column === 0 ? cell.padEnd(width(0)) : cell.padStart(width(column)))).join('  ');
  const body = lines.map(render);
  const faults = results.map(
    (r) =>
      `faults injected (${LABELS[r.variant]}): ${
        Object.entries(r.faultsInjected)
          .map(([name, count]) => `${name} ${count}`)
          .join(', ') || 'none'
      }`,
  );
  return [body[0], '-'.repeat(body[0]!.length), ...body.slice(1), '', ...faults].join('\n');
}

/**
 * The demo's last words and exit code: 1 when the outbox run shows a problem (a double, lost, out-of-order
 * or phantom effect at either stage, or it did not finish), whatever the naive runs show.
 */
export function pipelineVerdict(results: readonly PipelineResult[]): { readonly code: 0 | 1; readonly text: string } {
  const outbox = results.find((result) => result.variant === 'outbox');
  if (!outbox?.exactlyOnce) {
    return { code: 1, text: `FAILED: ${outbox ? outbox.problems.join('; ') : 'the outbox did not run'}. This is a bug: please report it with the seed.` };
  }
  return { code: 0, text: summary(results) };
}

function summary(results: readonly PipelineResult[]): string {
  const of = (variant: PipelineVariant) => results.find((result) => result.variant === variant);
  const inside = of('send-in-handler');
  const after = of('send-after-commit');
  return (
    'The inbox + outbox shipped every order once and invoiced every shipped order once, none before its shipment committed' +
    (inside && after
      ? `; sending in the handler invoiced ${inside.invoice.phantomKeys.length} orders that were not shipped (phantom messages), ` +
        `sending after the commit lost ${after.invoice.lostKeys.length} invoice messages.`
      : '.')
  );
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

function parseFaults(text: string | undefined): PipelineFaultName[] {
  if (text === undefined) return [...PIPELINE_FAULTS];
  if (text === 'none' || text === '') return [];
  const names = text.split(',').map((name) => name.trim());
  const unknown = names.find((name) => !(PIPELINE_FAULTS as readonly string[]).includes(name));
  if (unknown !== undefined) throw new InboxConfigError('--faults', `unknown fault "${unknown}"; choose from ${PIPELINE_FAULTS.join(', ')}, or none`);
  return names as PipelineFaultName[];
}
