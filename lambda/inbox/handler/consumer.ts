import { ENV_CONSUMER } from '../contract.js';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { runBatch, succeeded } from '../lanes/lanes.js';
import type { BatchPlan, Outcome } from '../lanes/lanes.js';
import { checkGatedStatement } from '../sql/claim.js';
import { RecentKeys, filterPays, markKnownClaims } from '../prepare/duplicate-filter.js';
import type { KeyStrategy } from '../prepare/keys.js';
import { BatchModeRunner } from '../modes/batch-mode-runner.js';
import type { RunScope } from '../modes/batch-mode-runner.js';
import { RecordConsumer } from '../modes/record-consumer.js';
import { awaitsEnvironment, checkOptions, settleEnvironment } from './options.js';
import type { ConsumerOptions, InboxOptions, ResolvedMode, ResolvedOptions } from './options.js';
import { relayAfterBatch } from '../outbox/after-batch.js';
import type { RelayReport } from '../outbox/relay.js';
import { registerConsumerParts } from './consumer-parts.js';
import type { ConsumerParts } from './consumer-parts.js';
import { prepare } from '../prepare/prepare.js';
import type { MessageRules, PreparedRecord } from '../prepare/prepare.js';
import { inboxTables } from '../sql/schema.js';
import type { InboxTables } from '../sql/schema.js';
import { sqsInboxSource } from '../sources/sqs.js';
import type { InboxSource, SourceRecord } from '../sources/source.js';
import { publishFailure } from '../telemetry/failure-channel.js';
import { BatchTally, defaultTelemetry, errorFields, publishSummary } from '../telemetry/telemetry.js';
import { inInvocation, withRequestIds } from '../telemetry/invocation.js';
import type { InboxLogger, InboxMetrics } from '../telemetry/telemetry.js';

/**
 * A Lambda handler made by `inbox()` or one of the stream inboxes: it resolves with the response its event
 * source mapping reads (the records to redeliver). Its parked messages: `parkedMessages(handler)` from
 * `sqs-inbox/operations`.
 */
export interface ConsumerHandler<Event, Response> {
  /**
   * Handles one event; resolves with the records to report failed. Without a `context`, no record is
   * held back for the deadline; with its `awsRequestId`, each log line and metric names the invocation.
   */
  // biome-ignore lint/style/useShorthandFunctionType: a call signature keeps its own doc comment, which a function type's would not.
  (event: Event, context?: Pick<Context, 'getRemainingTimeInMillis'> & Partial<Pick<Context, 'awsRequestId'>>): Promise<Response>;
}

/**
 * Makes an SQS-triggered Lambda handler that applies each record's effect exactly once: an Aurora
 * transaction (or one statement) over the Data API claims (consumer, key) in the inbox table and applies
 * the effect only if the claim inserted the row; per record (`apply`, `statement`) or per batch
 * (`applyBatch`, `statementBatch`, with each record run alone when the batch fails). It returns SQS
 * partial batch failures: exactly the records that did not commit and were not duplicates. The options
 * the code gives are validated here, once. What only the INBOX_* environment provides is read here when it
 * is set, else at the first invocation (Lambda's cold start), with the same {@link InboxConfigError}: a
 * module that builds its handler imports cleanly without that environment, in a test or a tool. An event
 * that is not an SQS event is refused with an `UnexpectedEventError` naming the trigger to check.
 *
 * @example
 * export const handler = inbox({
 *   consumer: 'order-worker',
 *   apply: async (tx, message) => {
 *     await tx.execute("UPDATE orders SET status = 'shipped' WHERE order_id = :orderId", { orderId: message.body.orderId });
 *   },
 * });
 */
export function inbox<Body = any>(options: InboxOptions<Body>): ConsumerHandler<SQSEvent, SQSBatchResponse> {
  return consumerHandler<Body, SQSRecord, SQSBatchResponse, KeyStrategy, SQSEvent>(sqsInboxSource, options);
}

/** The options a source's handler takes: those of every consumer, the source's key, and SQS's `fifo`. */
export type HandlerOptions<Body, Raw, Key> = ConsumerOptions<Body, Raw> & { readonly key?: Key | undefined; readonly fifo?: InboxOptions['fifo'] };

/**
 * The consumer core every source shares: validates the options the code gives at once, settles the
 * INBOX_* environment at cold start, then per event turns the source's records into messages, claims and
 * applies them in the options' mode (lanes, concurrency, deadline), and answers with the source's failure
 * report. The source names its handler and its own options.
 */
export function consumerHandler<Body, Raw, Response, Key, Event>(
  source: InboxSource<Raw, Response, Key>,
  options: HandlerOptions<Body, Raw, Key>,
): ConsumerHandler<Event, Response> {
  const checked = checkOptions<Body, Raw>(options, source);
  const tables = inboxTables(checked.schema);
  const rules: MessageRules<Body, Raw> = { keyOf: source.keyStrategy(options.key), parse: checked.parse };
  checkClaimGates(checked.mode);
  // Streams count no deliveries: the keys this instance met stand in for a redelivery count.
  const recent = source.countsDeliveries ? undefined : new RecentKeys();
  const made: ConsumerMakings<Body, Raw, Response> = { source, options, tables, rules, recent };

  // The environment is read now when it is there, so that a wrong value fails at once; when it is not (a
  // test or a tool importing the handler's module), at the first invocation: Lambda's cold start.
  let consumer: Consumer<Body, Raw, Response> | undefined;
  const coldStart = () => (consumer ??= startConsumer(made, settleEnvironment(checked, process.env)));
  if (!awaitsEnvironment(checked, process.env)) coldStart();

  // Checked at the first invocation (the client's settings are async providers) and remembered.
  let clientChecked: Promise<void> | undefined;

  const handler = (event: Event, context?: LambdaContext): Promise<Response> => inInvocation(context?.awsRequestId, () => invoke(event, context));
  const invoke = async (event: Event, context: LambdaClock | undefined): Promise<Response> => {
    const running = coldStart();
    await (clientChecked ??= running.resolved.transport.checkClient?.(transactional(running.resolved.mode.kind)) ?? Promise.resolve());
    const invocation = openInvocation(running, event, context);
    const prepared = await prepareRecords(invocation);
    const outcomes = await runRecords(invocation, prepared);
    const relayed = await relay(invocation);
    return respond(invocation, outcomes, relayed);
  };
  // What parkedMessages(handler) works with: asking for it settles the environment, as an invocation does.
  const parts = (): ConsumerParts<Body, Raw> => {
    const { resolved, recordConsumer, logger } = coldStart();
    return {
      resolved,
      tables,
      source: source as InboxSource<Raw, unknown, unknown>,
      records: recordConsumer,
      relay: (session, ids) =>
        resolved.outbox ? relayAfterBatch({ session, tables, transport: resolved.outbox.transport, logger }, ids, true) : Promise.resolve(),
    };
  };
  registerConsumerParts(handler, parts as () => ConsumerParts);
  return handler;
}

/** Lambda's clock, when the invocation has one. */
type LambdaClock = Pick<Context, 'getRemainingTimeInMillis'>;
/** What the handler reads of Lambda's context: the clock, and the request id its logs and metrics carry. */
type LambdaContext = LambdaClock & Partial<Pick<Context, 'awsRequestId'>>;

/** A constant statement must carry the claim: checked once, when the handler is made. */
function checkClaimGates<Body, Raw>(mode: ResolvedMode<Body, Raw>): void {
  if (mode.kind === 'statement' && mode.constantSql !== undefined) checkGatedStatement(mode.constantSql, undefined, 'statement.sql');
  if (mode.kind === 'batch-statement') checkGatedStatement(mode.sql, undefined, 'statementBatch.sql');
}

/** What the handler is made with, before the environment settles: its source, its options, and what they give. */
interface ConsumerMakings<Body, Raw, Response> {
  readonly source: InboxSource<Raw, Response, unknown>;
  readonly options: ConsumerOptions<Body, Raw>;
  readonly tables: InboxTables;
  readonly rules: MessageRules<Body, Raw>;
  /** The keys this instance met, for a source that counts no deliveries (a stream). */
  readonly recent: RecentKeys | undefined;
}

/** What a consumer runs with once its environment is settled. */
interface Consumer<Body, Raw, Response> extends ConsumerMakings<Body, Raw, Response> {
  readonly resolved: ResolvedOptions<Body, Raw>;
  readonly logger: InboxLogger;
  readonly metrics: InboxMetrics;
  readonly recordConsumer: RecordConsumer<Body, Raw>;
  readonly batchRunner: BatchModeRunner<Body, Raw> | undefined;
}

/**
 * One invocation of the handler, made once per event and passed through its steps (prepare, run, relay,
 * respond), as Powertools' `processPartialResponse` passes its processor: the consumer that runs it, the
 * event's records, the session on Lambda's clock, the lanes' plan, and the tally its summary counts.
 */
interface Invocation<Body, Raw, Response> extends RunScope {
  readonly consumer: Consumer<Body, Raw, Response>;
  readonly records: readonly SourceRecord<Raw>[];
  /** When the invocation began, on the options' clock: the summary's batch latency starts here. */
  readonly started: number;
}

/** The consumer's telemetry and its runners, made once at cold start. */
function startConsumer<Body, Raw, Response>(made: ConsumerMakings<Body, Raw, Response>, resolved: ResolvedOptions<Body, Raw>): Consumer<Body, Raw, Response> {
  const { source, options, tables } = made;
  // Stryker disable next-line ConditionalExpression: making the defaults when both are given only wastes them
  const defaults = options.logger && options.metrics ? undefined : defaultTelemetry(resolved.consumer, source.name);
  const logger = withRequestIds(options.logger ?? defaults!.logger);
  const deployed = process.env[ENV_CONSUMER];
  if (options.consumer !== undefined && deployed && deployed !== options.consumer) {
    // The construct names its alarms, dashboard and uniqueness check after INBOX_CONSUMER; the claims
    // and metrics carry the option. Both work, but they no longer describe the same consumer.
    logger.warn("inbox consumer differs from INBOX_CONSUMER: claims and metrics use the option, the deployment's alarms watch the environment name", {
      consumer: options.consumer,
      [ENV_CONSUMER]: deployed,
    });
  }
  const recordConsumer = new RecordConsumer<Body, Raw>(resolved, tables, logger, source);
  const batch = resolved.mode.kind === 'batch-transaction' || resolved.mode.kind === 'batch-statement';
  const batchRunner = batch ? new BatchModeRunner(resolved, tables, recordConsumer, logger) : undefined;
  return { ...made, resolved, logger, metrics: options.metrics ?? defaults!.metrics, recordConsumer, batchRunner };
}

/**
 * Opens the invocation of `event`: its records, its session on Lambda's clock, and its lanes' plan. No record
 * starts, and no call runs, past the deadline's margin.
 */
function openInvocation<Body, Raw, Response>(
  consumer: Consumer<Body, Raw, Response>,
  event: unknown,
  context: LambdaClock | undefined,
): Invocation<Body, Raw, Response> {
  const { resolved, source } = consumer;
  const started = resolved.now();
  const records = source.records(event);
  const tally = new BatchTally();
  // Lambda's clock when it gives one; else the margin never stops a record.
  const remaining = () => context?.getRemainingTimeInMillis?.() ?? Number.POSITIVE_INFINITY;
  const margin = resolved.deadlineMarginMs ?? Math.min(resolved.callTimeoutMs * 2, remaining() / 2);
  const session = resolved.transport.open({
    callTimeoutMs: resolved.callTimeoutMs,
    resumeDelaysMs: resolved.resumeDelaysMs,
    timeLeftMs: () => remaining() - margin,
    onResumeRetry: () => tally.resumeRetries++,
    sleep: resolved.sleep,
    metrics: { addMetric: (name, unit, value) => tally.sessionMetrics.push([name, unit, value]), publishStoredMetrics: () => {} },
  });
  const plan: BatchPlan = {
    // Stryker disable next-line MethodExpression: a source gives a lane to every record of an event or to none (one queue is FIFO or not; every stream record has its shard or partition), so some and every agree
    ordered: records.some((record) => record.lane !== undefined),
    onFailure: resolved.onFailure,
    concurrency: resolved.concurrency,
    mayStart: () => remaining() >= margin,
  };
  return { consumer, records, session, plan, tally, started };
}

/** Keys, hashes and parses the records, and settles the known duplicates in one lookup when that pays. */
async function prepareRecords<Body, Raw>({ consumer, records, session, plan }: Invocation<Body, Raw, unknown>): Promise<PreparedRecord<Body, Raw>[]> {
  const { resolved, logger, rules, recent, tables } = consumer;
  // Every record's parse settles before the first call: an async validator's lookups run side by side.
  const prepared = await Promise.all(records.map((record) => prepare(record, rules)));
  const lookUp = filterPays(resolved.duplicateFilter, resolved.mode.kind, prepared, recent);
  recent?.remember(prepared);
  if (lookUp && plan.mayStart()) {
    // Only an optimisation: when the lookup fails, each record's claim decides, as without it.
    await markKnownClaims(session, tables, resolved.consumer, prepared).catch((error: unknown) =>
      logger.warn("the duplicate filter failed; each record's claim decides", { error: errorFields(error) }),
    );
  }
  return prepared;
}

/** Runs the records in the options' mode, lane by lane: each record alone, or in sets by the batch modes. */
function runRecords<Body, Raw>(invocation: Invocation<Body, Raw, unknown>, prepared: PreparedRecord<Body, Raw>[]): Promise<Outcome[]> {
  const { consumer, records, session, plan, tally } = invocation;
  const { resolved, recordConsumer, batchRunner } = consumer;
  const timed = async (run: () => Promise<Outcome>) => {
    const begun = resolved.now();
    const outcome = await run();
    tally.recordLatenciesMs.push(resolved.now() - begun);
    return outcome;
  };
  return batchRunner
    ? batchRunner.run(invocation, prepared, timed)
    : runBatch(records, plan, (_, index) => timed(() => recordConsumer.consume(prepared[index]!, session, tally)));
}

/** Sends what the committed records wrote to the outbox; without an outbox, nothing was sent or deferred: the summary's own default. */
async function relay<Body, Raw>({ consumer, session, plan, tally }: Invocation<Body, Raw, unknown>): Promise<RelayReport | undefined> {
  const { resolved, tables, logger } = consumer;
  return resolved.outbox ? relayAfterBatch({ session, tables, transport: resolved.outbox.transport, logger }, tally.outboxIds, plan.mayStart()) : undefined;
}

/** Logs the failures, publishes the summary, and answers with the source's failure report. */
function respond<Body, Raw, Response>(invocation: Invocation<Body, Raw, Response>, outcomes: readonly Outcome[], relayed: RelayReport | undefined): Response {
  const { consumer, records, tally, started } = invocation;
  const { resolved, logger, metrics, source, options } = consumer;
  const failedIds = records.filter((_, index) => !succeeded(outcomes[index]!)).map((record) => record.id ?? '');
  const summary = tally.summarise(outcomes, failedIds, resolved.now() - started, relayed);
  logFailures(logger, source as InboxSource<unknown, unknown, unknown>, records, outcomes);
  // Before the response: a source that fails the whole invocation (no partial response) still counts.
  publishSummary(metrics, summary, source.name, tally.sessionMetrics);
  options.onBatch?.(summary);
  return source.respond(records, outcomes);
}

/** Whether the records run in transactions of several statements, where a call sent twice could apply twice; a gated statement sent twice claims once. */
function transactional(mode: ResolvedMode<unknown>['kind']): boolean {
  return mode !== 'statement' && mode !== 'batch-statement';
}

function logFailures(
  logger: InboxLogger,
  source: InboxSource<unknown, unknown, unknown>,
  records: readonly SourceRecord<unknown>[],
  outcomes: readonly Outcome[],
): void {
  outcomes.forEach((outcome, index) => {
    const id = { [source.idName]: records[index]?.id };
    if (outcome.kind === 'failed' || outcome.kind === 'parked') publishFailure({ id: records[index]?.id, error: outcome.error });
    if (outcome.kind === 'failed' && outcome.parkError) {
      logger.warn(`record failed, and could not be parked; ${source.redeliveredBy} will deliver it again`, {
        ...id,
        error: errorFields(outcome.error),
        parkError: errorFields(outcome.parkError),
      });
    } else if (outcome.kind === 'failed') {
      logger.warn(`record failed; ${source.redeliveredBy} will deliver it again`, { ...id, error: errorFields(outcome.error) });
    } else if (outcome.kind === 'parked') {
      logger.warn('record parked', { ...id, error: errorFields(outcome.error) });
    }
  });
}
