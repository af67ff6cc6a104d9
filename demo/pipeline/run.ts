import { FAULTS } from '../../local/scenario/fault-schedule.js';
import type { FaultName } from '../../local/scenario/fault-schedule.js';
import type { ScenarioResult, ScenarioRunOptions } from '../../local/scenario/run-scenario.js';
import { inOwnDatabase, runTag } from '../../local/scenario/database.js';
import { drive } from '../../local/scenario/driver.js';
import { checkFaults, refuse, wholeNumber } from '../../local/scenario/options.js';
import type { SweeperStats } from '../../local/scenario/outbox-sweeper.js';
import { onStack } from '../../local/scenario/ownership.js';
import { SqsScenarioSource } from '../../local/scenario/sqs.js';
import type { LocalStack } from '../../local/stack.js';
import { HandOffFaults, PIPELINE_FAULTS } from './faults.js';
import type { PipelineFaultName } from './faults.js';
import { judgePipeline } from './judge.js';
import type { InvoiceStage, PipelineStage } from './judge.js';
import { PIPELINE_SETUP } from './tables.js';
import { PIPELINE_VARIANTS } from './variants.js';
import type { PipelineVariant } from './variants.js';

/**
 * Options of {@link runPipeline}: `local`, `messages` (orders) and `seed` as runScenario takes them.
 *
 * @example
 * const options: PipelineOptions = { variant: 'send-after-commit', messages: 150, seed: 7 };
 */
export interface PipelineOptions extends Pick<ScenarioRunOptions, 'local' | 'messages' | 'seed'> {
  /** How the ship stage hands the invoice message on (see {@link PIPELINE_VARIANTS}). @default 'outbox' */
  readonly variant?: PipelineVariant | undefined;
  /** The faults to inject; `[]` runs without faults. @default every fault in {@link PIPELINE_FAULTS} */
  readonly faults?: readonly PipelineFaultName[] | undefined;
  /** Event source mappings per stage, polling its queue at once. @default 3 */
  readonly consumers?: number | undefined;
  /** Give up waiting for both queues and the outbox to drain after this long. @default 120 s, or 80 ms per order when that is longer */
  readonly timeoutMs?: number | undefined;
  /** Told of progress: orders settled at the ship stage out of those sent, and invoice messages waiting. */
  readonly onProgress?: ((progress: PipelineProgress) => void) | undefined;
}

/** Where a pipeline run stands, for {@link PipelineOptions.onProgress}. */
export interface PipelineProgress {
  /** Messages of the orders queue settled (deleted or dead-lettered). */
  readonly shipSettled: number;
  /** Messages sent to the orders queue, duplicates included. */
  readonly shipSent: number;
  /** Messages in the invoices queue, visible or in flight. */
  readonly invoicesWaiting: number;
}

/** The hand-off between the stages: what the senders gave SQS, and what the sweeper did. */
export interface HandOffCounts {
  /** Invoice messages handed to SQS by the senders and the sweeper, resends under the same key included. */
  readonly sends: number;
  /** Orders whose invoice message was handed to SQS more than once. */
  readonly ordersSentTwice: number;
  /** Outbox rows the handlers' relays sent (the outbox only). */
  readonly relayed: number;
  /** Outbox rows the sweeper sent (the outbox only). */
  readonly swept: number;
  /** The periodic sweeper's runs (the outbox only). */
  readonly sweeper: Readonly<SweeperStats> | undefined;
}

/**
 * What a pipeline run saw, from the database and the queues at the end; `seed`, `duplicateSends`,
 * `poison`, `faultsInjected`, `elapsedMs`, `exactlyOnce` and `problems` (both stages', and phantom
 * invoices) as runScenario gives them.
 *
 * @example
 * const result = await runPipeline({ messages: 150 });
 * expect(result.problems).toEqual([]);
 */
export interface PipelineResult
  extends Pick<ScenarioResult, 'seed' | 'duplicateSends' | 'poison' | 'faultsInjected' | 'elapsedMs' | 'exactlyOnce' | 'problems'> {
  /** How the ship stage handed the invoice message on. */
  readonly variant: PipelineVariant;
  /** Orders produced. */
  readonly messages: number;
  /** The ship stage, judged against the orders produced. */
  readonly ship: PipelineStage;
  /** What the senders handed to SQS between the stages. */
  readonly handOff: HandOffCounts;
  /** The invoice stage, judged against the orders shipped. */
  readonly invoice: InvoiceStage;
  /** False when the queues (and the outbox) did not drain before the timeout. */
  readonly completed: boolean;
}

/**
 * The visibility timeout and function timeout: 3 s, a second more than the one-stage demo's, as two
 * stages' handlers share the process (and the machine) and a batch of 10 runs longer.
 */
const VISIBILITY_SECONDS = 3;

/**
 * Runs orders through two consumers chained by a queue, through every fault of the demo and the hand-off's
 * own (a worker dying before it hands the message on, lost SendMessageBatch answers): "ship" consumes the
 * orders queue through the inbox, ships each order and hands an "invoice" message to a second FIFO queue
 * in the way `variant` says; "invoice" consumes that queue through the inbox. With the outbox, a sweeper
 * runs every half second, as the scheduled one does on AWS, and the run waits for it to have sent everything.
 * Then it judges both stages from the database: doubles, lost and out-of-order at each, and phantom
 * invoices (an order invoiced while not shipped). Each run has a database of its own, dropped at the end;
 * one run at a time per stack, since a run owns its stack's Data API and SQS faults.
 *
 * @example
 * const local = await startLocal({ dataApi: { transactionIdleTimeoutMs: 2000 } });
 * const outbox = await runPipeline({ local, variant: 'outbox', messages: 500 });
 * expect(outbox.problems).toEqual([]);
 * const naive = await runPipeline({ local, variant: 'send-after-commit', messages: 500 });
 * console.log(naive.invoice.lostKeys); // shipped, never invoiced
 */
export async function runPipeline(options: PipelineOptions = {}): Promise<PipelineResult> {
  const settings = resolve(options);
  return onStack('runPipeline', options.local, (local) => {
    const tag = runTag(settings.variant, settings.seed);
    return inOwnDatabase(local, `pipeline_${tag}`, (database) => run(local, database, tag, settings));
  });
}

type Settings = Required<Omit<PipelineOptions, 'local' | 'onProgress'>> & Pick<PipelineOptions, 'onProgress'>;

/** Validates the options once, naming every problem, and fills in the defaults. */
function resolve(options: PipelineOptions): Settings {
  const messages = options.messages ?? 300;
  const settings: Settings = {
    variant: options.variant ?? 'outbox',
    messages,
    seed: options.seed ?? 417,
    consumers: options.consumers ?? 3,
    timeoutMs: options.timeoutMs ?? Math.max(120_000, messages * 80),
    faults: options.faults ?? PIPELINE_FAULTS,
    onProgress: options.onProgress,
  };
  const problems: string[] = [];
  if (!(PIPELINE_VARIANTS as readonly string[]).includes(settings.variant))
    problems.push(`variant must be one of ${PIPELINE_VARIANTS.join(', ')}; got ${JSON.stringify(settings.variant)}.`);
  wholeNumber(problems, 'messages', messages, 1);
  wholeNumber(problems, 'seed', settings.seed, 0);
  wholeNumber(problems, 'consumers', settings.consumers, 1);
  wholeNumber(problems, 'timeoutMs', settings.timeoutMs, 1);
  checkFaults(problems, settings.faults as readonly FaultName[], PIPELINE_FAULTS as readonly FaultName[], 'unknown');
  refuse('runPipeline', problems);
  return settings;
}

/** The run in its database: both stages' queues and consumers, the sweeper with the outbox, then both stages' verdicts. */
async function run(local: LocalStack, database: string, tag: string, settings: Settings): Promise<PipelineResult> {
  const { variant, seed } = settings;
  const shape = { fifo: true, visibilityTimeoutSeconds: VISIBILITY_SECONDS, groups: Math.max(4, Math.floor(settings.messages / 10)) };
  const source = await SqsScenarioSource.open(local, `pipeline-${tag}-orders`, shape);
  const invoices = source.queue(`pipeline-${tag}-invoices`);
  // No SDK retries: the senders retry themselves, under their stable keys, so a lost answer reaches them.
  const senderClient = await source.client({ maxAttempts: 1 });
  // They import @aws-sdk/client-sqs statically: loaded once the peer is known to be there.
  const { invoiceHandler, outboxTransport, shipHandler } = await import('./consumers.js');
  const handOffFaults = new HandOffFaults(seed, settings.faults, local.sqs);
  const sendsPerOrder = new Map<string, number>();
  let relayed = 0;
  let swept = 0;
  const handOff = {
    invoicesUrl: invoices.queue.url,
    client: senderClient,
    faults: handOffFaults,
    onSend: (orderId: string) => sendsPerOrder.set(orderId, (sendsPerOrder.get(orderId) ?? 0) + 1),
    onRelayed: (count: number) => (relayed += count),
  };
  return drive({
    runner: 'runPipeline',
    local,
    database,
    source,
    seed,
    // The hand-off's own faults are HandOffFaults's.
    faults: settings.faults.filter((fault): fault is FaultName => (FAULTS as readonly string[]).includes(fault)),
    commitPoint: 'commit',
    // Orders for a customer each (its FIFO group), the demo's duplicate sends and poison among them.
    messages: settings.messages,
    message: (index) => ({ key: `order-${index}`, body: { orderId: `order-${index}` } }),
    setup: PIPELINE_SETUP,
    timeoutMs: settings.timeoutMs,
    connect: ({ schedule, transport }) => {
      const target = transport.database();
      for (let instance = 0; instance < settings.consumers; instance++) {
        source.consume(
          source.input,
          handOffFaults.track(shipHandler(variant, target, handOff), (record) => schedule.delivery(record)),
          schedule,
          {
            functionName: `pipeline-ship-${instance}`,
            beforeDelete: handOffFaults.beforeDelete(schedule.beforeDelete()),
          },
        );
        source.consume(invoices, invoiceHandler(target), schedule, { functionName: `pipeline-invoice-${instance}` });
      }
      // A session of its own, without resume retries: a sweep refused by a paused Aurora is tried again at the next.
      if (variant === 'outbox')
        source.sweep(
          transport.sweeper,
          outboxTransport(handOff, (count) => (swept += count)),
          transport.outboxWatch,
        );
    },
    onProgress: () => {
      const { settled, total } = source.progress();
      settings.onProgress?.({ shipSettled: Math.max(0, settled), shipSent: total, invoicesWaiting: source.waiting(invoices) });
    },
    judge: async ({ session, production, schedule, completed, started }) => {
      const verdict = await judgePipeline(session, source, production.sent, invoices, { completed, timeoutMs: settings.timeoutMs, left: source.left() });
      const unmatched = schedule.commitPointProblem();
      const problems = unmatched ? [...verdict.problems, unmatched] : verdict.problems;
      return {
        variant,
        seed,
        messages: settings.messages,
        duplicateSends: production.duplicateSends,
        poison: production.sent.filter((message) => message.poison).length,
        ship: verdict.ship,
        handOff: {
          sends: [...sendsPerOrder.values()].reduce((sum, count) => sum + count, 0),
          ordersSentTwice: [...sendsPerOrder.values()].filter((count) => count > 1).length,
          relayed,
          swept,
          sweeper: source.sweeper ? { ...source.sweeper.stats } : undefined,
        },
        invoice: verdict.invoice,
        faultsInjected: { ...schedule.injected, ...handOffFaults.injected },
        elapsedMs: Date.now() - started,
        completed,
        exactlyOnce: problems.length === 0,
        problems,
      };
    },
  });
}
