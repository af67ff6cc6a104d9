import { randomBytes } from 'node:crypto';
import { INBOX_MIGRATIONS, migrate } from '../../lambda/inbox/sql/schema.js';
import type { SqsEventSource } from '../../local/event-source.js';
import { FAULTS, FaultSchedule } from '../../local/fault-schedule.js';
import type { FaultName } from '../../local/fault-schedule.js';
import type { ScenarioResult, ScenarioRunOptions } from '../../local/scenario.js';
import {
  buildMessages,
  createQueueWithDlq,
  driveUntilDrained,
  faultedSource,
  inOwnDatabase,
  localSqsClient,
  openDatabase,
  produce,
  sqsDrained,
  sweeperSession,
  waiting,
} from '../../local/scenario-steps.js';
import { startLocal } from '../../local/stack.js';
import type { LocalStack } from '../../local/stack.js';
import { HandOffFaults, PIPELINE_FAULTS } from './faults.js';
import type { PipelineFaultName } from './faults.js';
import { judgePipeline } from './judge.js';
import type { InvoiceStage, PipelineStage } from './judge.js';
import { startSweeper, unsentRows } from '../../local/outbox-sweeper.js';
import type { PeriodicSweeper, SweeperStats } from '../../local/outbox-sweeper.js';
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
/** The sweeper's schedule, scaled down from AWS's minute to the function timeout. */
const SWEEP = { everyMs: 500, minAgeMs: VISIBILITY_SECONDS * 1000 };

/** Stacks a run is using: a run owns its stack's Data API and SQS faults. */
const busy = new WeakSet<LocalStack>();

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
  if (options.local && busy.has(options.local)) {
    throw new Error(
      "runPipeline: another pipeline is running on this stack. A run owns the stack's faults: await one before starting the next, or give each its own startLocal().",
    );
  }
  const local = options.local ?? (await startLocal({ dataApi: { transactionIdleTimeoutMs: 2000 } }));
  busy.add(local);
  try {
    const tag = `${settings.variant.replaceAll('-', '_')}_${settings.seed}_${randomBytes(3).toString('hex')}`;
    return await inOwnDatabase(local, `pipeline_${tag}`, (database) => runIn(local, settings, database, tag));
  } finally {
    busy.delete(local);
    if (!options.local) await local.close();
  }
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
  for (const [name, min] of [
    ['messages', 1],
    ['seed', 0],
    ['consumers', 1],
    ['timeoutMs', 1],
  ] as const) {
    if (!Number.isInteger(settings[name]) || settings[name] < min) problems.push(`${name} must be a whole number of at least ${min}; got ${settings[name]}.`);
  }
  const unknown = settings.faults.filter((fault) => !(PIPELINE_FAULTS as readonly string[]).includes(fault));
  if (unknown.length > 0) problems.push(`faults: unknown ${unknown.map((f) => JSON.stringify(f)).join(', ')}; choose from ${PIPELINE_FAULTS.join(', ')}.`);
  if (problems.length > 0) throw new RangeError(`runPipeline: ${problems.join(' ')}`);
  return settings;
}

/** The run in its database: both stages' queues, the orders, both stages' consumers and the sweeper, then the verdict. */
async function runIn(local: LocalStack, settings: Settings, database: string, tag: string): Promise<PipelineResult> {
  const started = Date.now();
  const { variant, seed, consumers } = settings;
  const { client: dataApiClient, target, session } = openDatabase(local, database);
  const model = local.sqs.model;
  const orders = createQueueWithDlq(model, `pipeline-${tag}-orders`, true, VISIBILITY_SECONDS);
  const invoices = createQueueWithDlq(model, `pipeline-${tag}-invoices`, true, VISIBILITY_SECONDS);
  const producerClient = await localSqsClient(local);
  // No SDK retries: the senders retry themselves, under their stable keys, so a lost answer reaches them.
  const senderClient = await localSqsClient(local, { maxAttempts: 1 });
  // They import @aws-sdk/client-sqs statically: loaded once the peer is known to be there.
  const { invoiceHandler, outboxTransport, shipHandler } = await import('./consumers.js');
  local.dataApi.faults.clear();
  local.sqs.faults.clear();
  const schedule = new FaultSchedule(
    seed,
    settings.faults.filter((fault): fault is FaultName => (FAULTS as readonly string[]).includes(fault)),
    local.dataApi,
    'commit',
  );
  const handOffFaults = new HandOffFaults(seed, settings.faults, local.sqs);
  const sources: SqsEventSource[] = [];
  let sweeper: PeriodicSweeper | undefined;
  try {
    await migrate(session, [INBOX_MIGRATIONS]);
    for (const sql of PIPELINE_SETUP) await session.execute(sql);

    // Orders for a customer each (its FIFO group), the demo's duplicate sends and poison among them.
    const groups = Math.max(4, Math.floor(settings.messages / 10));
    const message = (index: number) => ({ key: `order-${index}`, body: { orderId: `order-${index}` } });
    const sent = buildMessages({ messages: settings.messages, message, fifo: true, groups }, schedule);
    const duplicateSends = await produce(model, producerClient, orders.queue, sent, schedule);
    const sends = sent.length + duplicateSends;

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
    const stage = { model, schedule, visibilityTimeoutSeconds: VISIBILITY_SECONDS };
    for (let instance = 0; instance < consumers; instance++) {
      sources.push(
        faultedSource({
          ...stage,
          queue: orders.queue,
          functionName: `pipeline-ship-${instance}`,
          handler: handOffFaults.track(shipHandler(variant, target, handOff), (record) => schedule.delivery(record)),
          beforeDelete: handOffFaults.beforeDelete(schedule.beforeDelete()),
        }),
        faultedSource({ ...stage, queue: invoices.queue, functionName: `pipeline-invoice-${instance}`, handler: invoiceHandler(target) }),
      );
    }

    const { completed } = await driveUntilDrained({
      local,
      schedule,
      started,
      timeoutMs: settings.timeoutMs,
      start: () => {
        for (const source of sources) source.start();
        if (variant === 'outbox') {
          // A session of its own, without resume retries: a sweep refused by a paused Aurora is tried again at the next.
          sweeper = startSweeper(
            sweeperSession(target),
            outboxTransport(handOff, (count) => (swept += count)),
            SWEEP,
          );
        }
      },
      progress: () => ({ settled: sends - waiting(model, orders.queue.url), total: sends }),
      onProgress: () => {
        const shipLeft = waiting(model, orders.queue.url);
        settings.onProgress?.({ shipSettled: Math.max(0, sends - shipLeft), shipSent: sends, invoicesWaiting: waiting(model, invoices.queue.url) });
      },
      drained: () => sqsDrained(model, [orders.queue.url, invoices.queue.url], sources, sweeper ? () => unsentRows(session) : undefined),
      stop: async () => {
        await sweeper?.stop();
        await Promise.all(sources.map((source) => source.stop()));
      },
    });

    const left = waiting(model, orders.queue.url) + waiting(model, invoices.queue.url);
    const verdict = await judgePipeline(
      session,
      model,
      sent,
      { orders: orders.dlq, invoices: invoices.dlq },
      { completed, timeoutMs: settings.timeoutMs, left },
    );
    const unmatched = schedule.commitPointProblem();
    const problems = unmatched ? [...verdict.problems, unmatched] : verdict.problems;
    return {
      variant,
      seed,
      messages: settings.messages,
      duplicateSends,
      poison: sent.filter((message) => message.poison).length,
      ship: verdict.ship,
      handOff: {
        sends: [...sendsPerOrder.values()].reduce((sum, count) => sum + count, 0),
        ordersSentTwice: [...sendsPerOrder.values()].filter((count) => count > 1).length,
        relayed,
        swept,
        sweeper: sweeper ? { ...sweeper.stats } : undefined,
      },
      invoice: verdict.invoice,
      faultsInjected: { ...schedule.injected, ...handOffFaults.injected },
      elapsedMs: Date.now() - started,
      completed,
      exactlyOnce: problems.length === 0,
      problems,
    };
  } finally {
    await sweeper?.stop();
    await Promise.all(sources.map((source) => source.stop()));
    local.dataApi.faults.clear();
    local.sqs.faults.clear();
    producerClient.destroy();
    senderClient.destroy();
    dataApiClient.destroy();
    for (const { queue, dlq } of [orders, invoices]) {
      model.deleteQueue(queue.url);
      model.deleteQueue(dlq.url);
    }
  }
}
