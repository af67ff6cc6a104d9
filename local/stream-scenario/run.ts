import { randomBytes } from 'node:crypto';
import type { Context } from 'aws-lambda';
import { INBOX_MIGRATIONS, migrate } from '../../lambda/inbox/sql/schema.js';
import type { DataApiSession } from '../../lambda/inbox/data-api/session.js';
import type { DatabaseTarget } from '../../lambda/inbox/data-api/session.js';
import { problemsOf } from '../effects.js';
import type { DoubleEffect, OutOfOrderEffect, SentMessage } from '../effects.js';
import { FaultSchedule } from '../fault-schedule.js';
import type { FaultLikelihood, FaultName } from '../fault-schedule.js';
import type { ScenarioConsumer, ScenarioEnvironment, ScenarioMessage, ScenarioResult, ScenarioRunOptions } from '../scenario.js';
import { driveUntilDrained, exclusively, inOwnDatabase, onStack, openDatabase, readVerdict, runEnvironment, runSetup, runVerify } from '../scenario-steps.js';
import type { LocalStack } from '../stack.js';
import type { StreamEventSource } from '../streams/stream-event-source.js';
import type { StreamHandler } from '../streams/types.js';
import { STREAM_FAULTS, StreamInvocationFaults } from './faults.js';
import { STREAM_SOURCES, streamSource } from './sources.js';
import type { StreamSourceName } from './sources.js';

/**
 * What a stream handler factory gets: {@link ScenarioEnvironment} on the Data API, the transport a stream
 * scenario runs on.
 *
 * @example
 * const handler = ({ database }: StreamEnvironment) => kinesisInbox({ consumer: 'credits', database, key: { field: 'creditId' }, apply });
 */
export interface StreamEnvironment extends Omit<ScenarioEnvironment, 'database' | 'session' | 'transport'> {
  /** The run's database, for `kinesisInbox({ database })` or `new DataApiSession(database, policy)`; its client has `maxAttempts: 1`. */
  readonly database: DatabaseTarget;
  /** A session on the run's database (callTimeoutMs 10 s, resumeDelaysMs [250, 500, 1000, 2000]), for handlers that talk to it directly. */
  readonly session: DataApiSession;
}

/**
 * Your own stream consumer: a `kinesisInbox`, `dynamoDbInbox` or `kafkaInbox` handler (or any handler
 * of the source's events), your tables, your records, and how to count your effects, as
 * {@link ScenarioConsumer} has them for SQS.
 *
 * @example
 * const credits: StreamConsumer = {
 *   handler: ({ database }) => kinesisInbox<Credit>({ consumer: 'credits', database, key: { field: 'creditId' }, apply }),
 *   setup: 'CREATE TABLE public.credits (id bigserial PRIMARY KEY, credit_id text NOT NULL, amount_cents int NOT NULL)',
 *   message: (i) => ({ key: `credit-${i}`, body: { creditId: `credit-${i}`, amountCents: 100 + i }, groupId: `account-${i % 5}` }),
 *   effects: 'SELECT credit_id AS key, count(*), min(id) AS seq FROM public.credits GROUP BY 1',
 * };
 */
export interface StreamConsumer extends Pick<ScenarioConsumer, 'setup' | 'effects' | 'commitPoint' | 'label' | 'verify'> {
  /**
   * A factory of the handler under test, called once, after the run's database exists and `INBOX_*` is
   * set: `({ database }) => kinesisInbox({ database, ... })`.
   */
  readonly handler: (environment: StreamEnvironment) => StreamHandler<never> | Promise<StreamHandler<never>>;
  /**
   * Builds record `index`: `key`, the business id your effects query returns (on Kafka also sent as the
   * `idempotency-key` header; on Kinesis and DynamoDB your handler's `key` option must find it in the
   * body); `body`, Kinesis's data and Kafka's value (its JSON when an object), DynamoDB's item (an
   * object); `groupId`, its lane: Kinesis's partition key, Kafka's record key, the DynamoDB item's
   * partition key (so the records of one lane rewrite one item, in order). Order is judged per lane.
   */
  readonly message: (index: number) => ScenarioMessage;
  /** The DynamoDB table's partition key attribute, set to the lane in every item. @default 'pk' */
  readonly partitionKey?: string | undefined;
}

/**
 * Options of {@link runStreamScenario}: the stream, your consumer (`handler`, `message`, `effects`), and
 * the run's settings.
 *
 * @example
 * const options: StreamScenarioOptions = { source: 'kafka', ...credits, messages: 300, seed: 7 };
 */
export type StreamScenarioOptions = StreamRunOptions & StreamConsumer;

/**
 * Options of {@link runStreamScenario} about the run.
 *
 * @example
 * const run: StreamRunOptions = { source: 'kinesis', messages: 300, seed: 7 };
 */
export interface StreamRunOptions extends Pick<ScenarioRunOptions, 'env'> {
  /** The stream the records go through: Kinesis, a DynamoDB table's stream, or Kafka. */
  readonly source: StreamSourceName;
  /** The stack to run on; it is left running. @default a new `startLocal()`, closed at the end */
  readonly local?: LocalStack | undefined;
  /** Records produced (producer re-sends come on top). @default 300 */
  readonly messages?: number | undefined;
  /** Same seed, same fault decisions. @default 417 */
  readonly seed?: number | undefined;
  /** Faults to inject, from {@link STREAM_FAULTS}; `[]` runs without. @default every one of STREAM_FAULTS */
  readonly faults?: readonly FaultName[] | undefined;
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
 * const result = await runStreamScenario(local, { source: 'kafka', ...credits, messages: 120 });
 * expect(result.problems).toEqual([]);
 */
export interface StreamScenarioResult {
  readonly source: StreamSourceName;
  /** The consumer's {@link StreamConsumer.label} (default 'handler'). */
  readonly pattern: string;
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
  /** Each fault asked for, and how many records make it 99% likely, as {@link ScenarioResult.faultLikelihood}. */
  readonly faultLikelihood: readonly FaultLikelihood[];
  readonly elapsedMs: number;
  /** False when the stream was not fully checkpointed before the timeout. */
  readonly completed: boolean;
  /** Every order shipped exactly once, in order, and the stream drained: `problems` is empty. */
  readonly exactlyOnce: boolean;
  /**
   * One readable line per problem, the faults asked for that never struck and what `verify` found among them.
   */
  readonly problems: readonly string[];
}

const PARKED = 'SELECT message_key AS key FROM inbox.parked_message';

/**
 * Drives records through a local stream (Kinesis, DynamoDB Streams or Kafka) and Lambda's event source
 * mapping for it, into your own handler (`kinesisInbox`, `dynamoDbInbox`, `kafkaInbox`, or any), with
 * the seeded stream faults: producer re-sends, the worker dying after its
 * commits and before the checkpoint (offset commit), lost commit responses, dying inside the
 * transaction, Aurora auto-pause and 5xx. Then judges your effects query as {@link runScenario} does:
 * every record applied exactly once, none lost (parked counts as accounted for), each lane's in
 * production order; faults that never struck and what `verify` found are problems too.
 *
 * Runs in a fresh database on the stack's server, with `INBOX_*` and the SQS endpoint variables set
 * while it lasts; one scenario at a time per process (it owns `process.env` and the stack's Data API
 * faults and counts while it runs).
 *
 * @example
 * const result = await runStreamScenario({ source: 'kinesis', ...credits });
 * expect(result.problems).toEqual([]);
 */
export function runStreamScenario(options: StreamScenarioOptions): Promise<StreamScenarioResult>;
/**
 * The same, on a stack you started (it is left running).
 *
 * @example
 * const local = await startLocal({ dataApi: { transactionIdleTimeoutMs: 2000 } });
 * const result = await runStreamScenario(local, { source: 'kinesis', ...credits, messages: 300, seed: 7 });
 * expect(result.problems).toEqual([]);
 */
export function runStreamScenario(local: LocalStack, options: StreamScenarioOptions): Promise<StreamScenarioResult>;
export async function runStreamScenario(first: LocalStack | StreamScenarioOptions, second?: StreamScenarioOptions): Promise<StreamScenarioResult> {
  const options: StreamScenarioOptions = second ? { ...second, local: first as LocalStack } : (first as StreamScenarioOptions);
  const settings = resolve(options);
  return exclusively('runStreamScenario', (setEnv) =>
    onStack(options.local, (local) => {
      const tag = `${settings.source}_${settings.label
        .toLowerCase()
        .replace(/[^a-z0-9_]/g, '_')
        .slice(0, 20)}_${settings.seed}_${randomBytes(3).toString('hex')}`;
      return inOwnDatabase(local, `stream_${tag}`, (database) => runIn(local, settings, database, setEnv));
    }),
  );
}

/** The options of one run, validated, with the defaults filled in. */
interface Settings {
  readonly source: StreamSourceName;
  readonly consumer: StreamConsumer;
  readonly label: string;
  readonly messages: number;
  readonly seed: number;
  readonly faults: readonly FaultName[];
  readonly batchSize: number;
  readonly timeoutMs: number;
  readonly env: Readonly<Record<string, string>> | undefined;
  readonly onProgress: StreamRunOptions['onProgress'];
}

function resolve(options: StreamScenarioOptions): Settings {
  const problems: string[] = [];
  const given = options as Partial<StreamConsumer> & StreamRunOptions;
  if (!(STREAM_SOURCES as readonly string[]).includes(options.source))
    problems.push(`source must be one of ${STREAM_SOURCES.join(', ')}; got ${JSON.stringify(options.source)}.`);
  const messages = options.messages ?? 300;
  const seed = options.seed ?? 417;
  const batchSize = options.batchSize ?? 10;
  const timeoutMs = options.timeoutMs ?? Math.max(120_000, messages * 40);
  for (const [name, value, min] of [
    ['messages', messages, 1],
    ['seed', seed, 0],
    ['batchSize', batchSize, 1],
    ['timeoutMs', timeoutMs, 1],
  ] as const) {
    if (!Number.isInteger(value) || value < min) problems.push(`${name} must be a whole number of at least ${min}; got ${value}.`);
  }
  let consumer: StreamConsumer | undefined;
  if (typeof given.handler !== 'function') problems.push('handler must be a factory of your handler, e.g. ({ database }) => kinesisInbox({ database, ... }).');
  if (typeof given.message !== 'function') problems.push('message must be a function (index) => ({ key, body, groupId? }).');
  if (typeof given.effects !== 'string' || given.effects.trim() === '')
    problems.push('effects must be SQL returning key and count per record, e.g. SELECT credit_id AS key, count(*) FROM public.credits GROUP BY 1.');
  if (given.verify !== undefined && typeof given.verify !== 'function') problems.push('verify must be a function (session) => problems.');
  if (problems.length === 0) consumer = given as StreamConsumer;
  const faults = options.faults ?? STREAM_FAULTS;
  const unknown = faults.filter((fault) => !STREAM_FAULTS.includes(fault));
  if (unknown.length > 0) problems.push(`faults: ${unknown.join(', ')} not injected on streams; choose from ${STREAM_FAULTS.join(', ')}.`);
  if (problems.length > 0 || !consumer) throw new RangeError(`runStreamScenario: ${problems.join(' ')}`);
  return {
    source: options.source,
    consumer,
    label: consumer.label ?? 'handler',
    messages,
    seed,
    faults,
    batchSize,
    timeoutMs,
    env: options.env,
    onProgress: options.onProgress,
  };
}

async function runIn(
  local: LocalStack,
  settings: Settings,
  databaseName: string,
  setEnv: (env: Readonly<Record<string, string>>) => void,
): Promise<StreamScenarioResult> {
  const started = Date.now();
  const { consumer } = settings;
  const { client, target: database, session } = openDatabase(local, databaseName);
  local.dataApi.faults.clear();
  const source = streamSource(settings.source, { partitionKey: consumer.partitionKey });
  // A stream that writes no record for a producer's retry (DynamoDB) cannot be given duplicate sends.
  const faults = source.resends ? settings.faults : settings.faults.filter((fault) => fault !== 'duplicate-sends');
  const schedule = new FaultSchedule(settings.seed, faults, local.dataApi, consumer.commitPoint ?? 'commit');
  let eventSource: StreamEventSource<unknown, unknown> | undefined;
  try {
    await migrate(session, [INBOX_MIGRATIONS]);
    await runSetup('runStreamScenario', session, consumer.setup);

    // Produce: each lane's records in turn; a re-send right after the original, as a producer that
    // timed out waiting for the put's answer retries it.
    const sent: SentMessage[] = [];
    const positions = new Map<string, number>();
    let duplicateSends = 0;
    for (let index = 0; index < settings.messages; index++) {
      const { key, body, groupId } = consumer.message(index);
      const lane = groupId ?? key;
      const position = (positions.get(lane) ?? 0) + 1;
      positions.set(lane, position);
      sent.push({ key, groupId: lane, position, poison: false });
      source.put({ key, lane, body });
      if (schedule.resends(key)) {
        duplicateSends++;
        source.put({ key, lane, body });
      }
    }
    const writes = settings.messages + duplicateSends;

    const env = runEnvironment(local, databaseName, settings.env) as Record<string, string>;
    setEnv(env);
    const handler = await consumer.handler({ env, database, session, instance: 0, local });
    if (typeof handler !== 'function')
      throw new TypeError(
        `runStreamScenario: handler must be a factory that returns your handler, e.g. ({ database }) => kinesisInbox({ database, ... }); the factory returned ${typeof handler}.`,
      );
    const invocationFaults = new StreamInvocationFaults(schedule, source.recordId);
    const stream = source.eventSource(invocationFaults.wrap(handler as (event: unknown, context: Context) => unknown, recordsOf) as never, {
      batchSize: settings.batchSize,
      functionTimeoutMs: 10_000,
      // A failed batch is retried after a short pause, not in a tight loop through an auto-pause.
      retryDelayMs: 50,
      beforeCheckpoint: invocationFaults.beforeCheckpoint,
      functionName: `stream-scenario-${settings.label}`,
    });
    eventSource = stream;

    const checkpointed = () => Math.min(writes, stream.stats.recordsCheckpointed);
    const { completed, dataApiCalls } = await driveUntilDrained({
      local,
      schedule,
      started,
      timeoutMs: settings.timeoutMs,
      start: () => stream.start(),
      progress: () => ({ settled: checkpointed(), total: writes }),
      onProgress: () => settings.onProgress?.(checkpointed(), writes),
      drained: () => stream.drain({ timeoutMs: 100 }),
      stop: () => stream.stop(),
    });

    const verdict = await readVerdict(session, consumer.effects, sent, PARKED, new Set());
    const problems = problemsOf(verdict, completed, settings.timeoutMs, writes - checkpointed());
    const unmatched = schedule.commitPointProblem();
    if (unmatched) problems.push(unmatched);
    // A run must say what it did not test.
    problems.push(...schedule.unfiredProblems(settings.messages), ...(await runVerify(consumer.verify, session)));
    const stats = stream.stats;
    return {
      source: settings.source,
      pattern: settings.label,
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
      faultLikelihood: schedule.likelihood(settings.messages),
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
