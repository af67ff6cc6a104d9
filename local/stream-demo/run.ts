import { randomBytes } from 'node:crypto';
import type { Context } from 'aws-lambda';
import { DataApiSession, INBOX_MIGRATIONS, migrate } from '../../lambda/inbox/index.js';
import { EXAMPLE_ORDER_MIGRATIONS } from '../../lambda/functions/example-migrations.js';
import { problemsOf } from '../effects.js';
import type { DoubleEffect, OutOfOrderEffect, SentMessage } from '../effects.js';
import { FaultSchedule } from '../fault-schedule.js';
import type { FaultName } from '../fault-schedule.js';
import { inOwnDatabase, openDatabase, readVerdict } from '../scenario-steps.js';
import type { LocalStack } from '../stack.js';
import type { StreamEventSource } from '../streams/stream-event-source.js';
import { STREAM_FAULTS, StreamInvocationFaults } from './faults.js';
import { NAIVE_SHIP_STATEMENT, STREAM_SOURCES, streamDemoSource } from './sources.js';
import type { StreamPattern, StreamSourceName } from './sources.js';

/**
 * Options of {@link runStreamScenario}.
 *
 * @example
 * const options: StreamScenarioOptions = { source: 'kafka', pattern: 'inbox', messages: 300, seed: 7 };
 */
export interface StreamScenarioOptions {
  /** The stream the orders go through: Kinesis, a DynamoDB table's stream, or Kafka. */
  readonly source: StreamSourceName;
  /** `inbox`: the source's inbox handler (kinesisInbox, dynamoDbInbox, kafkaInbox); `naive`: check, ship, record. */
  readonly pattern: StreamPattern;
  /** Orders produced (producer re-sends come on top). @default 300 */
  readonly messages?: number | undefined;
  /** Same seed, same fault decisions. @default 417 */
  readonly seed?: number | undefined;
  /** Faults to inject, from {@link STREAM_FAULTS}; `[]` runs without. @default every one of STREAM_FAULTS */
  readonly faults?: readonly FaultName[] | undefined;
  /** Customers; each customer's orders share a lane and must ship in production order. @default max(4, messages / 10) */
  readonly customers?: number | undefined;
  /** Records per invocation. @default 10 */
  readonly batchSize?: number | undefined;
  /** Give up waiting for the stream to be checkpointed after this long. @default 120 s, or 40 ms per order when longer */
  readonly timeoutMs?: number | undefined;
  /** Told of progress: records checkpointed out of those written (a crash may count some twice). */
  readonly onProgress?: ((checkpointed: number, written: number) => void) | undefined;
}

/**
 * What a stream scenario saw, from the database and the event source at the end.
 *
 * @example
 * const result = await runStreamScenario(local, { source: 'kafka', pattern: 'inbox', messages: 120 });
 * expect(result.problems).toEqual([]);
 */
export interface StreamScenarioResult {
  readonly source: StreamSourceName;
  readonly pattern: StreamPattern;
  readonly seed: number;
  /** Orders produced. */
  readonly messages: number;
  /** Stream records written, producer re-sends included. */
  readonly writes: number;
  /** Orders the producer wrote a second time, with the same key. */
  readonly duplicateSends: number;
  /** Handler invocations. */
  readonly invocations: number;
  /** Records handed to the handler, redeliveries included. */
  readonly recordsDelivered: number;
  /** Invocations whose worker died after the handler returned, before the checkpoint moved. */
  readonly crashesBeforeCheckpoint: number;
  /** Invocations retried after a failure the response or an error reported. */
  readonly retries: number;
  /** Orders shipped at least once. */
  readonly applied: number;
  /** Orders shipped more than once (shipped_count above 1). */
  readonly doubled: number;
  readonly doubleEffects: readonly DoubleEffect[];
  /** Shipments beyond the first, summed over orders. */
  readonly extraEffects: number;
  /** Orders never shipped and not parked. */
  readonly lost: number;
  readonly lostKeys: readonly string[];
  /** Orders in the inbox's parked table. */
  readonly parked: number;
  /** Orders first shipped after a later order of the same customer. */
  readonly orderViolations: number;
  readonly outOfOrder: readonly OutOfOrderEffect[];
  /** Data API calls while the consumer ran. */
  readonly dataApiCalls: number;
  /** `dataApiCalls` per record written. */
  readonly callsPerRecord: number;
  /** How many times each fault was injected, by name. */
  readonly faultsInjected: Readonly<Record<string, number>>;
  readonly elapsedMs: number;
  /** False when the stream was not fully checkpointed before the timeout. */
  readonly completed: boolean;
  /** Every order shipped exactly once, in order, and the stream drained: `problems` is empty. */
  readonly exactlyOnce: boolean;
  /** One readable line per problem. */
  readonly problems: readonly string[];
}

// public.orders (the example workers' table) with the sequence of each order's first shipment: the
// upsert's conflict branch leaves it alone, so it orders first effects, as the SQS demo's bigserial id does.
const FIRST_SHIPPED = 'ALTER TABLE public.orders ADD COLUMN first_shipped bigserial';
const NAIVE_TABLE = 'CREATE TABLE public.naive_processed (message_key text PRIMARY KEY)';
const EFFECTS = 'SELECT order_id AS key, shipped_count AS count, first_shipped AS seq FROM public.orders';
const PARKED = 'SELECT message_key AS key FROM inbox.parked_message';

let running = false;

/**
 * Drives orders through a local stream (Kinesis, DynamoDB Streams or Kafka) and Lambda's event source
 * mapping for it, into the source's inbox handler or the naive baseline, with the demo's seeded faults:
 * producer re-sends, the worker dying after its commits and before the checkpoint (offset commit), lost
 * commit responses, dying inside the transaction, Aurora auto-pause and 5xx. Orders are keyed by
 * customer, so a customer's orders share a shard or partition. Then judges public.orders: every order
 * shipped exactly once (shipped_count 1), none lost, each customer's in production order.
 *
 * Runs in a fresh database on the stack's server; one run at a time per process (it owns the stack's
 * Data API faults and counts while it runs).
 *
 * @example
 * const local = await startLocal({ dataApi: { transactionIdleTimeoutMs: 2000 } });
 * const result = await runStreamScenario(local, { source: 'kinesis', pattern: 'inbox', messages: 300, seed: 7 });
 * expect(result.problems).toEqual([]);
 */
export async function runStreamScenario(local: LocalStack, options: StreamScenarioOptions): Promise<StreamScenarioResult> {
  const settings = resolve(options);
  if (running) throw new Error('runStreamScenario: another stream scenario is running in this process; await it first.');
  running = true;
  try {
    const tag = `${settings.source}_${settings.pattern}_${settings.seed}_${randomBytes(3).toString('hex')}`;
    return await inOwnDatabase(local, `stream_${tag}`, (database) => runIn(local, settings, database));
  } finally {
    running = false;
  }
}

type Settings = Required<Omit<StreamScenarioOptions, 'onProgress'>> & Pick<StreamScenarioOptions, 'onProgress'>;

function resolve(options: StreamScenarioOptions): Settings {
  const problems: string[] = [];
  if (!(STREAM_SOURCES as readonly string[]).includes(options.source)) problems.push(`source must be one of ${STREAM_SOURCES.join(', ')}; got ${JSON.stringify(options.source)}.`);
  if (options.pattern !== 'inbox' && options.pattern !== 'naive') problems.push(`pattern must be 'inbox' or 'naive'; got ${JSON.stringify(options.pattern)}.`);
  const messages = options.messages ?? 300;
  const seed = options.seed ?? 417;
  const customers = options.customers ?? Math.max(4, Math.floor(messages / 10));
  const batchSize = options.batchSize ?? 10;
  const timeoutMs = options.timeoutMs ?? Math.max(120_000, messages * 40);
  for (const [name, value, min] of [['messages', messages, 1], ['seed', seed, 0], ['customers', customers, 1], ['batchSize', batchSize, 1], ['timeoutMs', timeoutMs, 1]] as const) {
    if (!Number.isInteger(value) || value < min) problems.push(`${name} must be a whole number of at least ${min}; got ${value}.`);
  }
  const faults = options.faults ?? STREAM_FAULTS;
  const unknown = faults.filter((fault) => !STREAM_FAULTS.includes(fault));
  if (unknown.length > 0) problems.push(`faults: ${unknown.join(', ')} not injected on streams; choose from ${STREAM_FAULTS.join(', ')}.`);
  if (problems.length > 0) throw new RangeError(`runStreamScenario: ${problems.join(' ')}`);
  return { source: options.source, pattern: options.pattern, messages, seed, faults, customers, batchSize, timeoutMs, onProgress: options.onProgress };
}

async function runIn(local: LocalStack, settings: Settings, databaseName: string): Promise<StreamScenarioResult> {
  const started = Date.now();
  const { client, target: database, session } = openDatabase(local, databaseName);
  local.dataApi.faults.clear();
  const commitPoint = settings.pattern === 'inbox' ? 'commit' : { statement: NAIVE_SHIP_STATEMENT };
  const schedule = new FaultSchedule(settings.seed, settings.faults, local.dataApi, commitPoint);
  const source = streamDemoSource(settings.source);
  let eventSource: StreamEventSource<unknown, unknown> | undefined;
  try {
    await migrate(session, [INBOX_MIGRATIONS, EXAMPLE_ORDER_MIGRATIONS]);
    await session.execute(FIRST_SHIPPED);
    await session.execute(NAIVE_TABLE);

    // Produce: each customer's orders in turn on its lane; a re-send right after the original, as a
    // producer that timed out waiting for the put's answer retries it.
    const sent: SentMessage[] = [];
    const positions = new Map<string, number>();
    let duplicateSends = 0;
    for (let index = 0; index < settings.messages; index++) {
      const order = { orderId: `order-${index}`, customerId: `customer-${index % settings.customers}` };
      const position = (positions.get(order.customerId) ?? 0) + 1;
      positions.set(order.customerId, position);
      sent.push({ key: order.orderId, groupId: order.customerId, position, poison: false });
      source.put(order);
      if (source.resends && schedule.resends(order.orderId)) {
        duplicateSends++;
        source.put(order);
      }
    }
    const writes = settings.messages + duplicateSends;

    // The naive consumer fails a record and lets the stream retry it: no resume retries of its own.
    const naiveSession = new DataApiSession(database, { callTimeoutMs: 2000, resumeDelaysMs: [] });
    const faults = new StreamInvocationFaults(schedule, source.recordId);
    const handler = source.handler(settings.pattern, { database, session: naiveSession });
    eventSource = source.eventSource(faults.wrap(handler as (event: unknown, context: Context) => unknown, recordsOf) as never, {
      batchSize: settings.batchSize,
      functionTimeoutMs: 10_000,
      // A failed batch is retried after a short pause, not in a tight loop through an auto-pause.
      retryDelayMs: 50,
      beforeCheckpoint: faults.beforeCheckpoint,
      functionName: `stream-demo-${settings.pattern}`,
    });

    local.dataApi.stats.reset();
    local.dataApi.faults.clear();
    schedule.armCommitPoint();
    schedule.pause();
    eventSource.start();
    const deadline = started + settings.timeoutMs;
    let pausedAgain = false;
    let completed = false;
    for (;;) {
      const done = Math.min(writes, eventSource.stats.recordsCheckpointed);
      settings.onProgress?.(done, writes);
      if (!pausedAgain && done >= writes / 2) {
        pausedAgain = true;
        schedule.pause();
      }
      if (await eventSource.drain({ timeoutMs: 100 })) {
        completed = true;
        break;
      }
      if (Date.now() > deadline) break;
    }
    await eventSource.stop();
    local.dataApi.faults.clear();
    const dataApiCalls = local.dataApi.stats.total();

    const verdict = await readVerdict(session, EFFECTS, sent, PARKED, new Set());
    const left = writes - Math.min(writes, eventSource.stats.recordsCheckpointed);
    const problems = problemsOf(verdict, completed, settings.timeoutMs, left);
    const unmatched = schedule.commitPointProblem();
    if (unmatched) problems.push(unmatched);
    const stats = eventSource.stats;
    return {
      source: settings.source,
      pattern: settings.pattern,
      seed: settings.seed,
      messages: settings.messages,
      writes,
      duplicateSends,
      invocations: stats.invocations,
      recordsDelivered: stats.recordsDelivered,
      crashesBeforeCheckpoint: stats.crashes,
      retries: stats.retries,
      applied: verdict.applied,
      doubled: verdict.doubleEffects.length,
      doubleEffects: verdict.doubleEffects,
      extraEffects: verdict.extraEffects,
      lost: verdict.lostKeys.length,
      lostKeys: verdict.lostKeys,
      parked: verdict.parked,
      orderViolations: verdict.outOfOrder.length,
      outOfOrder: verdict.outOfOrder,
      dataApiCalls,
      callsPerRecord: dataApiCalls / writes,
      faultsInjected: { ...schedule.injected },
      elapsedMs: Date.now() - started,
      completed,
      exactlyOnce: problems.length === 0,
      problems,
    };
  } finally {
    await eventSource?.stop();
    local.dataApi.faults.clear();
    client.destroy();
  }
}

/** The records of a stream event, whatever the source: Kinesis and DynamoDB's `Records`, Kafka's per-partition lists. */
function recordsOf(event: unknown): readonly unknown[] {
  const shaped = event as { Records?: unknown[]; records?: Record<string, unknown[]> };
  return shaped.Records ?? Object.values(shaped.records ?? {}).flat();
}
