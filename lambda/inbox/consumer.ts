import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { isFifo, runBatch, succeeded } from './batch.js';
import type { BatchPlan, Outcome } from './batch.js';
import { checkGatedStatement } from './claim.js';
import { DataApiSession } from './data-api.js';
import type { DatabaseTarget } from './data-api.js';
import { filterPays, markKnownClaims } from './duplicate-filter.js';
import { InboxConfigError, InboxError } from './errors.js';
import { keyStrategy } from './keys.js';
import { BatchModeRunner } from './modes/batch.js';
import { RecordConsumer } from './modes/per-record.js';
import { resolveOptions } from './options.js';
import type { InboxOptions, ResolvedMode } from './options.js';
import { parkedMessages } from './parked.js';
import type { ParkedMessages } from './parked.js';
import { prepare } from './prepared.js';
import { inboxTables } from './schema.js';
import { sqsRecords } from './sqs-event.js';
import { BatchTally, defaultTelemetry, publishSummary } from './telemetry.js';
import type { InboxLogger } from './telemetry.js';

/** The handler `inbox()` returns: an SQS Lambda handler, plus access to its parked messages. */
export interface InboxHandler {
  /**
   * Handles one SQS event; resolves with the records to report failed. Without a `context`, no record is
   * held back for the deadline.
   */
  (event: SQSEvent, context?: Pick<Context, 'getRemainingTimeInMillis'>): Promise<SQSBatchResponse>;
  /** List and replay this consumer's parked messages. */
  readonly parked: ParkedMessages;
}

/**
 * Makes an SQS-triggered Lambda handler that applies each record's effect exactly once: an Aurora
 * transaction (or one statement) over the Data API claims (consumer, key) in the inbox table and applies
 * the effect only if the claim inserted the row; per record (`apply`, `statement`) or per batch
 * (`applyBatch`, `statementBatch`, with each record run alone when the batch fails). It returns SQS
 * partial batch failures: exactly the records that did not commit and were not duplicates. Options are
 * validated here, once, at cold start. An event that is not an SQS event is refused with
 * {@link UnexpectedEventError}.
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
  const resolved = resolveOptions(options);
  const tables = inboxTables(resolved.schema);
  const keyOf = keyStrategy(options.key);
  if (resolved.mode.kind === 'statement' && resolved.mode.constantSql !== undefined) {
    checkGatedStatement(resolved.mode.constantSql, undefined, 'statement.sql');
  }
  if (resolved.mode.kind === 'batch-statement') checkGatedStatement(resolved.mode.sql, undefined, 'statementBatch.sql');
  // Stryker disable next-line ConditionalExpression: making the defaults when both are given only wastes them
  const defaults = options.logger && options.metrics ? undefined : defaultTelemetry(resolved.consumer);
  const logger = options.logger ?? defaults!.logger;
  const deployed = process.env.INBOX_CONSUMER;
  if (options.consumer !== undefined && deployed && deployed !== options.consumer) {
    // The construct names its alarms, dashboard and uniqueness check after INBOX_CONSUMER; the claims
    // and metrics carry the option. Both work, but they no longer describe the same consumer.
    logger.warn('inbox consumer differs from INBOX_CONSUMER: claims and metrics use the option, the deployment\'s alarms watch the environment name', {
      consumer: options.consumer,
      INBOX_CONSUMER: deployed,
    });
  }
  const metrics = options.metrics ?? defaults!.metrics;
  const consumer = new RecordConsumer(resolved, tables, logger);
  const batchRunner = resolved.mode.kind === 'batch-transaction' || resolved.mode.kind === 'batch-statement'
    ? new BatchModeRunner(resolved, tables, consumer, logger)
    : undefined;

  // Checked at the first invocation (the client's settings are async providers) and remembered.
  let clientChecked: Promise<void> | undefined;

  const handler = async (event: SQSEvent, context?: Pick<Context, 'getRemainingTimeInMillis'>): Promise<SQSBatchResponse> => {
    await (clientChecked ??= refuseSdkRetries(resolved.mode.kind, resolved.target.client));
    const started = resolved.now();
    const records = sqsRecords(event);
    // Lambda's clock when it gives one; else the margin never stops a record.
    const remaining = () => context?.getRemainingTimeInMillis?.() ?? Number.POSITIVE_INFINITY;
    const margin = resolved.deadlineMarginMs ?? Math.min(resolved.callTimeoutMs * 2, remaining() / 2);
    const tally = new BatchTally();
    const session = new DataApiSession(resolved.target, {
      callTimeoutMs: resolved.callTimeoutMs,
      resumeDelaysMs: resolved.resumeDelaysMs,
      timeLeftMs: () => remaining() - margin,
      onResumeRetry: () => tally.resumeRetries++,
      sleep: resolved.sleep,
    });
    const plan: BatchPlan = {
      fifo: isFifo(records),
      onFailure: resolved.onFailure,
      concurrency: resolved.concurrency,
      mayStart: () => remaining() >= margin,
    };
    const prepared = records.map((record, index) => prepare(record, index, keyOf, resolved.parse));
    if (filterPays(resolved.duplicateFilter, resolved.mode.kind, prepared) && plan.mayStart()) {
      // Only an optimisation: when the lookup fails, each record's claim decides, as without it.
      await markKnownClaims(session, tables, resolved.consumer, prepared).catch((error: unknown) =>
        logger.warn('the duplicate filter failed; each record\'s claim decides', { error: describe(error instanceof Error ? error : new Error(String(error))) }),
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
      : await runBatch(records, plan, (_, index) => timed(() => consumer.consume(prepared[index]!, session, tally)));
    const failed = records.filter((_, index) => !succeeded(outcomes[index]!));
    if (failed.some((record) => typeof record.messageId !== 'string' || record.messageId.length === 0)) {
      // A record that did not commit must come back, but it cannot be named: fail the whole batch. Its
      // committed records are duplicates on redelivery, so this costs calls, never an effect.
      throw new InboxError('a record that did not commit has no messageId, so it cannot be reported alone; failing the whole batch so SQS delivers it again');
    }
    const failedIds = failed.map((record) => record.messageId);
    const summary = tally.summarise(outcomes, failedIds, resolved.now() - started);
    logFailures(logger, records, outcomes);
    publishSummary(metrics, summary);
    options.onBatch?.(summary);
    return { batchItemFailures: failedIds.map((itemIdentifier) => ({ itemIdentifier })) };
  };
  return Object.assign(handler, {
    parked: parkedMessages({
      target: resolved.target,
      tables,
      consumer: resolved.consumer,
      callTimeoutMs: resolved.callTimeoutMs,
      replayEffect: (tx, parked) => consumer.replay(tx, parked),
    }),
  });
}

/**
 * In transaction mode the SDK's own retries would re-send a statement whose response was lost, running it
 * twice inside one transaction. A client that retries is refused, with the fix.
 */
async function refuseSdkRetries(mode: ResolvedMode<unknown>['kind'], client: DatabaseTarget['client']): Promise<void> {
  // A gated statement sent twice claims once: its retry is harmless.
  if (mode === 'statement' || mode === 'batch-statement') return;
  const provider = (client.config as { maxAttempts?: unknown }).maxAttempts;
  // Stryker disable next-line LogicalOperator: an RDSDataClient's resolved config always holds maxAttempts as a provider function (resolveRetryConfig), so this branch never runs
  const attempts = typeof provider === 'function' ? Number(await provider()) : Number(provider ?? 1);
  if (attempts > 1) {
    throw new InboxConfigError(
      'database.client',
      `retries each call up to ${attempts} times; inside a transaction a retried statement whose first response was lost runs twice. ` +
        'Create it with `new RDSDataClient({ maxAttempts: 1 })`, or leave `client` out and inbox() makes one',
    );
  }
}

function logFailures(logger: InboxLogger, records: readonly SQSRecord[], outcomes: readonly Outcome[]): void {
  outcomes.forEach((outcome, index) => {
    const messageId = records[index]?.messageId;
    if (outcome.kind === 'failed') {
      logger.warn('record failed; SQS will deliver it again', { messageId, error: describe(outcome.error) });
    } else if (outcome.kind === 'parked') {
      logger.warn('record parked', { messageId, error: describe(outcome.error) });
    }
  });
}

const describe = (error: Error) => ({ name: error.name, message: error.message });
