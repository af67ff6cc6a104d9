import type { Context } from 'aws-lambda';
import type { LocalStack } from '../stack.js';
import { makeHandler } from './consumer.js';
import type { ScenarioConsumer, ScenarioEnvironment } from './consumer.js';
import { inOwnDatabase, runTag } from './database.js';
import { drive } from './driver.js';
import { dynamoDbStream } from './dynamodb.js';
import type { FaultName } from './fault-schedule.js';
import { judgeRun } from './judge.js';
import { kafkaTopic } from './kafka.js';
import { kinesisStream } from './kinesis.js';
import { checkConsumer, checkFaults, refuse, wholeNumber } from './options.js';
import { exclusively, onStack } from './ownership.js';
import type { SetEnv } from './ownership.js';
import type { ScenarioResult, ScenarioRunOptions } from './run-scenario.js';
import type { ScenarioMessage } from './source.js';
import { STREAM_SOURCES, StreamScenarioSource } from './stream.js';
import type { StreamLog, StreamSourceName } from './stream.js';
import { STREAM_FAULTS } from './stream-faults.js';

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
export interface StreamConsumer extends Pick<ScenarioConsumer, 'setup' | 'effects' | 'commitPoint' | 'label' | 'verify' | 'expectedFailures'> {
  /**
   * A factory of the handler under test, called once, after the run's database exists and `INBOX_*` is
   * set: `({ database }) => kinesisInbox({ database, ... })`. A stream scenario runs on the Data API, so its
   * environment's `transport` is `'data-api'`.
   */
  readonly handler: (environment: ScenarioEnvironment) => ((event: never, context: Context) => unknown) | Promise<(event: never, context: Context) => unknown>;
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
 * Options of `runStreamScenario`: the stream, your consumer (`handler`, `message`, `effects`), and
 * the run's settings.
 *
 * @example
 * const options: StreamScenarioOptions = { source: 'kafka', ...credits, messages: 300, seed: 7 };
 */
export type StreamScenarioOptions = StreamRunOptions & StreamConsumer;

/**
 * Options of `runStreamScenario` about the run.
 *
 * @example
 * const run: StreamRunOptions = { source: 'kinesis', messages: 300, seed: 7 };
 */
export interface StreamRunOptions extends Pick<ScenarioRunOptions, 'local' | 'messages' | 'seed' | 'env' | 'databaseGrants'> {
  /** The stream the records go through: Kinesis, a DynamoDB table's stream, or Kafka. */
  readonly source: 'kinesis' | 'dynamodb' | 'kafka';
  /** Faults to inject, from {@link STREAM_FAULTS}; `[]` runs without. @default every one of STREAM_FAULTS */
  readonly faults?: readonly FaultName[] | undefined;
  /** Records per invocation. @default 10 */
  readonly batchSize?: number | undefined;
  /** Give up waiting for the stream to be checkpointed after this long. @default 120 s, or 40 ms per record when longer */
  readonly timeoutMs?: number | undefined;
  /** Told of progress: records checkpointed out of those written (a crash may count some twice). */
  readonly onProgress?: ((checkpointed: number, written: number) => void) | undefined;
}

/**
 * What a stream scenario saw, from the database and the event source at the end: what
 * {@link ScenarioResult} says of an SQS run, but for what only a queue has, and the stream's own counts.
 *
 * @example
 * const result = await runStreamScenario(local, { source: 'kafka', ...credits, messages: 120 });
 * expect(result.problems).toEqual([]);
 */
export interface StreamScenarioResult
  extends Omit<
    ScenarioResult,
    | 'transport'
    | 'sends'
    | 'poison'
    | 'timeouts'
    | 'wellFormedInDlqOrParked'
    | 'deadLettered'
    | 'orderChecked'
    | 'outOfOrderPastDeadLetter'
    | 'unexpectedKeys'
    | 'callsPerMessage'
    | 'conflicts'
    | 'destinations'
    | 'outboxSwept'
    | 'notes'
  > {
  /** The stream the records went through. */
  readonly source: StreamRunOptions['source'];
  /** Stream records written, producer re-sends included. */
  readonly writes: number;
  /** Invocations whose worker died after the handler returned, before the checkpoint moved. */
  readonly crashesBeforeCheckpoint: number;
  /** Invocations retried after a failure the response or an error reported. */
  readonly retries: number;
  /** `dataApiCalls` per record written. */
  readonly callsPerRecord: number;
}

/**
 * Drives records through a local stream (Kinesis, DynamoDB Streams or Kafka) and Lambda's event source
 * mapping for it, into your own handler (`kinesisInbox`, `dynamoDbInbox`, `kafkaInbox`, or any), with
 * the seeded stream faults: producer re-sends, the worker dying after its
 * commits and before the checkpoint (offset commit), lost commit responses, dying inside the
 * transaction, Aurora auto-pause and 5xx. Then judges your effects query as `runScenario` does:
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
    onStack('runStreamScenario', options.local, (local) => {
      const tag = `${settings.source}_${runTag(settings.label, settings.seed)}`;
      return inOwnDatabase(local, `stream_${tag}`, (database) => run(local, database, settings, setEnv));
    }),
  );
}

/** The options of one run, validated, with the defaults filled in. */
interface Settings extends Required<Pick<StreamRunOptions, 'source' | 'messages' | 'seed' | 'faults' | 'batchSize' | 'timeoutMs'>> {
  readonly consumer: StreamConsumer;
  readonly label: string;
  readonly env: StreamRunOptions['env'];
  readonly databaseGrants: StreamRunOptions['databaseGrants'];
  readonly onProgress: StreamRunOptions['onProgress'];
}

/** Validates the options once, naming every problem, and fills in the defaults. */
function resolve(options: StreamScenarioOptions): Settings {
  const problems: string[] = [];
  if (!(STREAM_SOURCES as readonly string[]).includes(options.source))
    problems.push(`source must be one of ${STREAM_SOURCES.join(', ')}; got ${JSON.stringify(options.source)}.`);
  const messages = options.messages ?? 300;
  const settings: Settings = {
    source: options.source,
    consumer: options,
    label: options.label ?? 'handler',
    messages,
    seed: options.seed ?? 417,
    faults: options.faults ?? STREAM_FAULTS,
    batchSize: options.batchSize ?? 10,
    timeoutMs: options.timeoutMs ?? Math.max(120_000, messages * 40),
    env: options.env,
    databaseGrants: options.databaseGrants,
    onProgress: options.onProgress,
  };
  wholeNumber(problems, 'messages', messages, 1);
  wholeNumber(problems, 'seed', settings.seed, 0);
  wholeNumber(problems, 'batchSize', settings.batchSize, 1);
  wholeNumber(problems, 'timeoutMs', settings.timeoutMs, 1);
  checkConsumer(problems, options, {
    handler: '({ database }) => kinesisInbox({ database, ... })',
    effects: 'key and count per record, e.g. SELECT credit_id AS key, count(*) FROM public.credits GROUP BY 1',
  });
  checkFaults(problems, settings.faults, STREAM_FAULTS, 'not injected on streams');
  refuse('runStreamScenario', problems);
  return settings;
}

/** A stream of `source` on a fresh model. */
function streamLog(source: StreamSourceName, partitionKey: string): StreamLog {
  if (source === 'kinesis') return kinesisStream();
  if (source === 'dynamodb') return dynamoDbStream(partitionKey);
  return kafkaTopic();
}

/** The run in its database: the stream, the consumer's handler behind its mapping, then the verdict. */
async function run(local: LocalStack, database: string, settings: Settings, setEnv: SetEnv): Promise<StreamScenarioResult> {
  const { consumer } = settings;
  const source = new StreamScenarioSource(streamLog(settings.source, consumer.partitionKey ?? 'pk'));
  return drive({
    runner: 'runStreamScenario',
    local,
    database,
    source,
    seed: settings.seed,
    // A stream that writes no record for a producer's retry (DynamoDB) cannot be given duplicate sends.
    faults: source.resends ? settings.faults : settings.faults.filter((fault) => fault !== 'duplicate-sends'),
    commitPoint: consumer.commitPoint ?? 'commit',
    messages: settings.messages,
    message: consumer.message,
    setup: consumer.setup,
    databaseGrants: settings.databaseGrants,
    timeoutMs: settings.timeoutMs,
    setEnv,
    env: settings.env,
    connect: async ({ env, schedule, transport }) => {
      const environment: ScenarioEnvironment = {
        env,
        transport: 'data-api',
        database: transport.database(),
        session: transport.session,
        instance: 0,
        local,
      };
      const handler = await makeHandler('runStreamScenario', consumer.handler, environment, database, '({ database }) => kinesisInbox({ database, ... })');
      source.consume(handler as (event: unknown, context: Context) => unknown, schedule, {
        batchSize: settings.batchSize,
        functionTimeoutMs: 10_000,
        // A failed batch is retried after a short pause, not in a tight loop through an auto-pause.
        retryDelayMs: 50,
        functionName: `stream-scenario-${settings.label}`,
      });
    },
    onProgress: () => {
      const { settled, total } = source.progress();
      settings.onProgress?.(settled, total);
    },
    judge: async ({ production, schedule, session, completed, dataApiCalls, started, outsideWrites, roleProblems, firstError }) => {
      const { judged } = await judgeRun({
        session,
        effects: consumer.effects,
        sent: production.sent,
        deadLettered: new Set(),
        completed,
        timeoutMs: settings.timeoutMs,
        left: source.left(),
        schedule,
        messages: settings.messages,
        found: outsideWrites,
        refused: roleProblems,
        verify: consumer.verify && ((verifying) => consumer.verify!(verifying, {})),
        expectedFailures: consumer.expectedFailures,
        firstError,
        failedByHandler: undefined,
        transport: 'data-api',
      });
      const { stats } = source;
      return {
        ...judged,
        source: settings.source,
        pattern: settings.label,
        seed: settings.seed,
        messages: settings.messages,
        writes: production.writes,
        duplicateSends: production.duplicateSends,
        invocations: stats.invocations,
        recordsDelivered: stats.recordsDelivered,
        crashesBeforeCheckpoint: stats.crashes,
        retries: stats.retries,
        dataApiCalls,
        callsPerRecord: dataApiCalls / production.writes,
        elapsedMs: Date.now() - started,
        completed,
      };
    },
  });
}
