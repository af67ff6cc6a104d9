import { CONSUMER_COUNT_METRICS, ENV_METRICS_NAMESPACE, METRIC_NAMESPACE } from '../contract.js';
import type { ConsumerCountMetric, ConsumerLatencyMetric } from '../contract.js';
import type { Outcome } from '../lanes/lanes.js';
import { EmfMetrics } from './emf-metrics.js';
import { JsonLogger } from './logger.js';
import { currentRequestId } from './invocation.js';
import type { SourceName } from '../sources/source.js';

/** The CloudWatch units sqs-inbox publishes in (`Seconds`: the scheduled functions' ages). */
export type MetricUnitName = 'Count' | 'Milliseconds' | 'Seconds';

/** The part of a logger sqs-inbox uses; Powertools' `Logger` fits, and so does `console`. */
export interface InboxLogger {
  /** Logs at debug level; `extra` holds structured fields. */
  debug(message: string, ...extra: unknown[]): void;
  /** Logs at info level. */
  info(message: string, ...extra: unknown[]): void;
  /** Logs at warn level: failed and parked records. */
  warn(message: string, ...extra: unknown[]): void;
  /** Logs at error level: key collisions. */
  error(message: string, ...extra: unknown[]): void;
}

/** The part of a metrics client sqs-inbox uses; Powertools' `Metrics` fits. */
export interface InboxMetrics {
  /** Adds one value of a metric to the invocation's set. */
  addMetric(name: string, unit: 'Count' | 'Milliseconds' | 'Seconds', value: number): void;
  /**
   * Adds a dimension to the metrics published next (Powertools' `Metrics` has it): the consumer's source
   * (`sqs`, `kinesis`, `dynamodb`, `kafka`) is added as `source` when the client has this method.
   */
  addDimension?(name: string, value: string): void;
  /**
   * Adds a property to the metrics published next, not a dimension (Powertools' `Metrics` has it): the
   * invocation's request id, as `function_request_id`, when the client has this method and Lambda gave one.
   */
  addMetadata?(key: string, value: string | undefined): void;
  /** Publishes the added metrics (as one embedded-metric-format log line with Powertools). */
  publishStoredMetrics(): void;
}

/** The metric namespace, unless the user's `Metrics` instance says otherwise. */
export { METRIC_NAMESPACE };

/** What one invocation did: counted per invocation, never in module state, then published once. */
export interface BatchSummary {
  /** Records in the event. */
  readonly records: number;
  /** Records whose claim inserted the row and whose effect committed. */
  readonly processed: number;
  /** Records whose key was claimed before with the same body: nothing applied, reported succeeded. */
  readonly duplicates: number;
  /** Records whose key was claimed before by a different body (a `KeyCollisionError`). */
  readonly collisions: number;
  /** Records parked by `onPermanentError: park`: reported succeeded. */
  readonly parked: number;
  /** Records that ran and failed: reported failed. */
  readonly failures: number;
  /**
   * FIFO records not run because an earlier record of their group failed (or, with
   * `fifo.onFailure: 'stop-batch'`, any earlier record of the batch): reported failed.
   */
  readonly shortCircuited: number;
  /** Records not started because too little time was left (`deadlineMarginMs`): reported failed. */
  readonly deferredByDeadline: number;
  /** Data API calls retried while Aurora resumed from auto-pause. */
  readonly resumeRetries: number;
  /** Batch modes: sets of records claimed and applied together (one per invocation that had two or more to join). */
  readonly batchSets: number;
  /**
   * Batch modes: sets that failed for a reason one record could cause (a statement PostgreSQL refused, an
   * error of the effect, a collision) and fell back to running each of their records alone, at a call or
   * more per record instead of a few per set.
   */
  readonly batchFallbacks: number;
  /** Outbox messages the handler sent after its commits. */
  readonly outboxSent: number;
  /** Outbox messages it left for the sweeper (a failed send, no time left, a FIFO group waiting on an older message). */
  readonly outboxDeferred: number;
  /** Milliseconds each record that ran took, in batch order of completion. */
  readonly recordLatenciesMs: readonly number[];
  /** Milliseconds the whole invocation took. */
  readonly batchLatencyMs: number;
  /** The ids of the records reported back as failed (SQS messageIds, sequence numbers, `topic-partition@offset`). */
  readonly failedMessageIds: readonly string[];
}

/** A mutable tally for one invocation. */
export class BatchTally {
  resumeRetries = 0;
  collisions = 0;
  batchSets = 0;
  batchFallbacks = 0;
  readonly recordLatenciesMs: number[] = [];
  /** Outbox rows written by this invocation's committed transactions, for the relay. */
  readonly outboxIds: number[] = [];
  /**
   * Metrics the session counts as the invocation runs (DSQL's conflicts), added at the invocation's publish: the
   * consumer's client is shared by every invocation the process runs at once, and one added as it happens would
   * be published by whichever invocation publishes first, under its request id.
   */
  readonly sessionMetrics: [name: string, unit: MetricUnitName, value: number][] = [];

  summarise(
    outcomes: readonly Outcome[],
    failedMessageIds: readonly string[],
    batchLatencyMs: number,
    outbox: { readonly sent: number; readonly deferred: number } = { sent: 0, deferred: 0 },
  ): BatchSummary {
    const count = (kind: Outcome['kind']) => outcomes.filter((outcome) => outcome.kind === kind).length;
    return {
      records: outcomes.length,
      processed: count('processed'),
      duplicates: count('duplicate'),
      collisions: this.collisions,
      parked: count('parked'),
      failures: count('failed'),
      shortCircuited: count('short-circuited'),
      deferredByDeadline: count('deferred'),
      resumeRetries: this.resumeRetries,
      batchSets: this.batchSets,
      batchFallbacks: this.batchFallbacks,
      outboxSent: outbox.sent,
      outboxDeferred: outbox.deferred,
      recordLatenciesMs: this.recordLatenciesMs,
      batchLatencyMs,
      failedMessageIds,
    };
  }
}

/**
 * The defaults for a consumer: an {@link EmfMetrics} and a {@link JsonLogger}, which write the lines a
 * Powertools `Metrics` and `Logger` would, without bundling the utilities.
 */
export function defaultTelemetry(consumer: string, source: SourceName): { logger: InboxLogger; metrics: InboxMetrics } {
  return {
    logger: new JsonLogger(consumer),
    metrics: new EmfMetrics(process.env[ENV_METRICS_NAMESPACE] ?? METRIC_NAMESPACE, consumer, source),
  };
}

/**
 * Publishes one invocation's summary as CloudWatch embedded-metric-format metrics. Adding and publishing
 * happen with no await between them, so concurrent invocations in one process never mix their metrics.
 */
export function publishSummary(metrics: InboxMetrics, summary: BatchSummary, source: SourceName, sessionMetrics: BatchTally['sessionMetrics']): void {
  // Powertools clears added dimensions at each publish, so it is added for every one.
  metrics.addDimension?.('source', source);
  // Undefined without a Lambda context: a JSON line leaves the key out.
  metrics.addMetadata?.('function_request_id', currentRequestId());
  // Typed by the contract's list: a metric the alarms watch and the summary does not fill does not compile.
  const counts: Readonly<Record<ConsumerCountMetric, number>> = {
    Processed: summary.processed,
    Duplicates: summary.duplicates,
    KeyCollisions: summary.collisions,
    Failures: summary.failures,
    ShortCircuited: summary.shortCircuited,
    DeferredByDeadline: summary.deferredByDeadline,
    ResumeRetries: summary.resumeRetries,
    BatchSets: summary.batchSets,
    BatchFallbacks: summary.batchFallbacks,
    Parked: summary.parked,
    OutboxSent: summary.outboxSent,
    OutboxDeferred: summary.outboxDeferred,
  };
  for (const name of CONSUMER_COUNT_METRICS) metrics.addMetric(name, 'Count', counts[name]);
  for (const latency of summary.recordLatenciesMs) metrics.addMetric('RecordLatency' satisfies ConsumerLatencyMetric, 'Milliseconds', latency);
  metrics.addMetric('BatchLatency' satisfies ConsumerLatencyMetric, 'Milliseconds', summary.batchLatencyMs);
  for (const [name, unit, value] of sessionMetrics) metrics.addMetric(name, unit, value);
  metrics.publishStoredMetrics();
}

/** An error as a log line's `error` field: its name and message (a thrown non-Error as a message). */
export function errorFields(error: unknown): { readonly name: string; readonly message: string } {
  const failure = error instanceof Error ? error : new Error(String(error));
  return { name: failure.name, message: failure.message };
}
