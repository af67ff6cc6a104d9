import { ENV_CONSUMER } from '../contract.js';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { runBatch, succeeded } from '../lanes/lanes.js';
import type { BatchPlan, Outcome } from '../lanes/lanes.js';
import { checkGatedStatement } from '../sql/claim.js';
import { isPostgresTarget, openSession } from '../transport/open-session.js';
import type { InboxSession } from '../transport/session.js';
import type { DatabaseTarget } from '../data-api/session.js';
import { RecentKeys, filterPays, markKnownClaims } from '../prepare/duplicate-filter.js';
import { InboxConfigError } from '../errors.js';
import type { KeyStrategy } from '../prepare/keys.js';
import type { BatchModes, SetRunner } from '../modes/batch-modes.js';
import { RecordConsumer } from '../modes/per-record.js';
import { SQS_OPTIONS, awaitsEnvironment, checkOptions, settleEnvironment } from './options.js';
import type { ConsumerOptions, InboxOptions, ResolvedMode, ResolvedOptions } from './options.js';
import { CONSUMER_PARTS } from '../parked/parking-runtime.js';
import type { ConsumerParts } from '../parked/parking-runtime.js';
import { prepare } from '../prepare/prepare.js';
import { inboxTables } from '../sql/schema.js';
import type { InboxTables } from '../sql/schema.js';
import type { OutboxRuntime } from '../outbox/outbox-runtime.js';
import type { OutboxTransport, RelayReport } from '../outbox/relay.js';
import { sqsSource } from '../sources/sqs.js';
import type { InboxSource, SourceName, SourceRecord } from '../sources/source.js';
import { BatchTally, defaultTelemetry, publishSummary } from '../telemetry/telemetry.js';
import type { InboxLogger, InboxMetrics } from '../telemetry/telemetry.js';

/** The handler `inbox()` returns: an SQS Lambda handler (its parked messages: `parkedMessages(handler)` from `sqs-inbox/parked`). */
export interface InboxHandler extends ConsumerHandler<SQSEvent, SQSBatchResponse> {}

/**
 * A Lambda handler made by `inbox()` or one of the stream inboxes: it resolves with the response its event
 * source mapping reads (the records to redeliver). Its parked messages: `parkedMessages(handler)` from
 * `sqs-inbox/parked`.
 */
export interface ConsumerHandler<Event, Response> {
  /**
   * Handles one event; resolves with the records to report failed. Without a `context`, no record is
   * held back for the deadline.
   */
  (event: Event, context?: Pick<Context, 'getRemainingTimeInMillis'>): Promise<Response>;
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
 * that is not an SQS event is refused with {@link UnexpectedEventError}.
 *
 * @example
 * export const handler = inbox({
 *   consumer: 'order-worker',
 *   apply: async (tx, message) => {
 *     await tx.execute("UPDATE orders SET status = 'shipped' WHERE order_id = :orderId", { orderId: message.body.orderId });
 *   },
 * });
 */
export function inbox<Body = any>(options: InboxOptions<Body>): InboxHandler {
  return sqsConsumer(options, undefined);
}

/** `inbox()`, with the batch modes' code when it is given (by `sqs-inbox/batch`). */
export function sqsConsumer<Body>(options: InboxOptions<Body>, batchModes: BatchModes | undefined): InboxHandler {
  return consumerHandler<Body, SQSRecord, SQSBatchResponse, KeyStrategy, SQSEvent>(sqsSource, options, options?.key, SQS_OPTIONS, 'inbox', batchModes);
}

/**
 * The consumer core every source shares: validates the options the code gives at once, settles the
 * INBOX_* environment at cold start, then per event turns the source's records into messages, claims and
 * applies them in the options' mode (lanes, concurrency, deadline), and answers with the source's failure
 * report.
 */
export function consumerHandler<Body, Raw, Response, Key, Event>(
  source: InboxSource<Raw, Response, Key>,
  options: ConsumerOptions<Body, Raw> & { readonly fifo?: InboxOptions['fifo'] },
  key: Key | undefined,
  sourceOptions: Readonly<Record<string, true>>,
  handlerName: string,
  batchModes: BatchModes | undefined,
): ConsumerHandler<Event, Response> {
  const checked = checkOptions<Body, Raw>(options, sourceOptions, source.parse, handlerName, batchModes);
  const tables = inboxTables(checked.schema);
  const rules = { keyOf: source.keyStrategy(key), parse: checked.parse };
  if (checked.mode.kind === 'statement' && checked.mode.constantSql !== undefined) {
    checkGatedStatement(checked.mode.constantSql, undefined, 'statement.sql');
  }
  if (checked.mode.kind === 'batch-statement') checkGatedStatement(checked.mode.sql, undefined, 'statementBatch.sql');

  // The environment is read now when it is there, so that a wrong value fails at once; when it is not (a
  // test or a tool importing the handler's module), at the first invocation: Lambda's cold start.
  let consumer: Consumer<Body, Raw> | undefined;
  const coldStart = () => (consumer ??= startConsumer(source, options, settleEnvironment(checked, process.env), tables, batchModes));
  if (!awaitsEnvironment(checked, process.env)) coldStart();

  // Checked at the first invocation (the client's settings are async providers) and remembered.
  let clientChecked: Promise<void> | undefined;
  // Streams count no deliveries: the keys this instance met stand in for a redelivery count.
  const recent = source.countsDeliveries ? undefined : new RecentKeys();

  const handler = async (event: Event, context?: Pick<Context, 'getRemainingTimeInMillis'>): Promise<Response> => {
    const { resolved, logger, metrics, records: recordConsumer, batchRunner } = coldStart();
    await (clientChecked ??= isPostgresTarget(resolved.target) ? Promise.resolve() : refuseSdkRetries(resolved.mode.kind, resolved.target.client));
    const started = resolved.now();
    const records = source.records(event);
    // Lambda's clock when it gives one; else the margin never stops a record.
    const remaining = () => context?.getRemainingTimeInMillis?.() ?? Number.POSITIVE_INFINITY;
    const margin = resolved.deadlineMarginMs ?? Math.min(resolved.callTimeoutMs * 2, remaining() / 2);
    const tally = new BatchTally();
    const session = openSession(resolved.target, {
      callTimeoutMs: resolved.callTimeoutMs,
      resumeDelaysMs: resolved.resumeDelaysMs,
      timeLeftMs: () => remaining() - margin,
      onResumeRetry: () => tally.resumeRetries++,
      sleep: resolved.sleep,
    });
    const plan: BatchPlan = {
      // Stryker disable next-line MethodExpression: a source gives a lane to every record of an event or to none (one queue is FIFO or not; every stream record has its shard or partition), so some and every agree
      ordered: records.some((record) => record.lane !== undefined),
      onFailure: resolved.onFailure,
      concurrency: resolved.concurrency,
      mayStart: () => remaining() >= margin,
    };
    const prepared = records.map((record) => prepare(record, rules));
    const lookUp = filterPays(resolved.duplicateFilter, resolved.mode.kind, prepared, recent);
    recent?.remember(prepared);
    if (lookUp && plan.mayStart()) {
      // Only an optimisation: when the lookup fails, each record's claim decides, as without it.
      await markKnownClaims(session, tables, resolved.consumer, prepared).catch((error: unknown) =>
        logger.warn("the duplicate filter failed; each record's claim decides", { error: describe(error instanceof Error ? error : new Error(String(error))) }),
      );
    }
    const timed = async (run: () => Promise<Outcome>) => {
      const begun = resolved.now();
      const outcome = await run();
      tally.recordLatenciesMs.push(resolved.now() - begun);
      return outcome;
    };
    const outcomes = batchRunner
      ? await batchRunner.run(prepared, plan, session, tally, timed)
      : await runBatch(records, plan, (_, index) => timed(() => recordConsumer.consume(prepared[index]!, session, tally)));
    const relayed = resolved.outbox ? await relay(resolved.outbox, session, tables, tally.outboxIds, plan.mayStart(), logger) : { sent: 0, deferred: 0 };
    const failedIds = records.filter((_, index) => !succeeded(outcomes[index]!)).map((record) => record.id ?? '');
    const summary = tally.summarise(outcomes, failedIds, resolved.now() - started, relayed);
    logFailures(logger, source as InboxSource<unknown, unknown, unknown>, records, outcomes);
    // Before the response: a source that fails the whole invocation (no partial response) still counts.
    publishSummary(metrics, summary, source.name);
    options.onBatch?.(summary);
    return source.respond(records, outcomes);
  };
  // What parkedMessages(handler) works with: asking for it settles the environment, as an invocation does.
  const parts = (): ConsumerParts<Body, Raw> => {
    const { resolved, records: recordConsumer, logger } = coldStart();
    return {
      resolved,
      tables,
      source: source as InboxSource<Raw, unknown, unknown>,
      records: recordConsumer,
      batchModes,
      relay: (session, ids) => (resolved.outbox ? relay(resolved.outbox, session, tables, ids, true, logger) : Promise.resolve()),
    };
  };
  return Object.assign(handler, { [CONSUMER_PARTS]: parts });
}

/** What a consumer runs with once its environment is settled. */
interface Consumer<Body, Raw> {
  readonly resolved: ResolvedOptions<Body, Raw>;
  readonly logger: InboxLogger;
  readonly metrics: InboxMetrics;
  readonly records: RecordConsumer<Body, Raw>;
  readonly batchRunner: SetRunner<Body, Raw> | undefined;
}

/** The consumer's telemetry and its runners, made once at cold start. */
function startConsumer<Body, Raw>(
  source: InboxSource<Raw, unknown, unknown>,
  options: ConsumerOptions<Body, Raw>,
  resolved: ResolvedOptions<Body, Raw>,
  tables: InboxTables,
  batchModes: BatchModes | undefined,
): Consumer<Body, Raw> {
  // Stryker disable next-line ConditionalExpression: making the defaults when both are given only wastes them
  const defaults = options.logger && options.metrics ? undefined : defaultTelemetry(resolved.consumer, source.name);
  const logger = options.logger ?? defaults!.logger;
  const deployed = process.env[ENV_CONSUMER];
  if (options.consumer !== undefined && deployed && deployed !== options.consumer) {
    // The construct names its alarms, dashboard and uniqueness check after INBOX_CONSUMER; the claims
    // and metrics carry the option. Both work, but they no longer describe the same consumer.
    logger.warn("inbox consumer differs from INBOX_CONSUMER: claims and metrics use the option, the deployment's alarms watch the environment name", {
      consumer: options.consumer,
      [ENV_CONSUMER]: deployed,
    });
  }
  const records = new RecordConsumer<Body, Raw>(resolved, tables, logger, source, batchModes);
  // checkOptions refused a batch mode without the batch modes' code.
  const batch = resolved.mode.kind === 'batch-transaction' || resolved.mode.kind === 'batch-statement';
  const batchRunner = batch ? batchModes!.runner(resolved, tables, records, logger) : undefined;
  return { resolved, logger, metrics: options.metrics ?? defaults!.metrics, records, batchRunner };
}

/**
 * Sends what the invocation's committed transactions wrote to the outbox, when time is left. Never throws:
 * the records committed, so they succeed whatever happens here; what is not sent stays for the sweeper.
 */
async function relay(
  outbox: { readonly transport: OutboxTransport; readonly runtime: OutboxRuntime },
  session: InboxSession,
  tables: InboxTables,
  ids: readonly number[],
  timeLeft: boolean,
  logger: InboxLogger,
): Promise<RelayReport> {
  if (!timeLeft) return { sent: 0, deferred: ids.length };
  try {
    const report = await outbox.runtime.relay(session, tables, outbox.transport, ids);
    if (report.deferred > 0) logger.warn('outbox messages left for the sweeper', { deferred: report.deferred });
    return report;
  } catch (error) {
    logger.warn('the outbox relay failed; the sweeper sends its messages', { error: describe(error instanceof Error ? error : new Error(String(error))) });
    return { sent: 0, deferred: ids.length };
  }
}

/**
 * In transaction mode the SDK's own retries would re-send a statement whose response was lost, running it
 * twice inside one transaction. A client that retries is refused, with the fix.
 */
async function refuseSdkRetries(mode: ResolvedMode<unknown>['kind'], client: DatabaseTarget['client']): Promise<void> {
  // A gated statement sent twice claims once: its retry is harmless.
  if (mode === 'statement' || mode === 'batch-statement') return;
  const provider = (client.config as { maxAttempts?: unknown }).maxAttempts;
  const attempts = typeof provider === 'function' ? Number(await provider()) : Number(provider ?? 1);
  if (attempts > 1) {
    throw new InboxConfigError(
      'database.client',
      `retries each call up to ${attempts} times; inside a transaction a retried statement whose first response was lost runs twice. ` +
        'Create it with `new RDSDataClient({ maxAttempts: 1 })`, or leave `client` out and inbox() makes one',
    );
  }
}

function logFailures(
  logger: InboxLogger,
  source: InboxSource<unknown, unknown, unknown>,
  records: readonly SourceRecord<unknown>[],
  outcomes: readonly Outcome[],
): void {
  outcomes.forEach((outcome, index) => {
    const id = { [source.idName]: records[index]?.id };
    if (outcome.kind === 'failed') {
      logger.warn(`record failed; ${REDELIVERS[source.name]} will deliver it again`, { ...id, error: describe(outcome.error) });
    } else if (outcome.kind === 'parked') {
      logger.warn('record parked', { ...id, error: describe(outcome.error) });
    }
  });
}

/** Who delivers a failed record again, for the log line. */
const REDELIVERS: Record<SourceName, string> = { sqs: 'SQS', kinesis: 'Lambda', dynamodb: 'Lambda', kafka: 'Lambda' };

const describe = (error: Error) => ({ name: error.name, message: error.message });
