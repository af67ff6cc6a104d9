import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Outcome } from './batch.js';

/** The part of a logger sqs-inbox uses; Powertools' `Logger` fits, and so does `console`. */
export interface InboxLogger {
  debug(message: string, ...extra: unknown[]): void;
  info(message: string, ...extra: unknown[]): void;
  warn(message: string, ...extra: unknown[]): void;
  error(message: string, ...extra: unknown[]): void;
}

/** The part of a metrics client sqs-inbox uses; Powertools' `Metrics` fits. */
export interface InboxMetrics {
  addMetric(name: string, unit: (typeof MetricUnit)[keyof typeof MetricUnit], value: number): void;
  publishStoredMetrics(): void;
}

/** The metric namespace, unless the user's `Metrics` instance says otherwise. */
export const METRIC_NAMESPACE = 'SqsInbox';

/** What one invocation did: counted per invocation, never in module state, then published once. */
export interface BatchSummary {
  readonly records: number;
  readonly processed: number;
  readonly duplicates: number;
  readonly collisions: number;
  readonly parked: number;
  readonly failures: number;
  readonly shortCircuited: number;
  readonly deferredByDeadline: number;
  readonly resumeRetries: number;
  /** Milliseconds each record that ran took, in batch order of completion. */
  readonly recordLatenciesMs: readonly number[];
  readonly batchLatencyMs: number;
  /** The messageIds reported back as failed. */
  readonly failedMessageIds: readonly string[];
}

/** A mutable tally for one invocation. */
export class BatchTally {
  resumeRetries = 0;
  collisions = 0;
  readonly recordLatenciesMs: number[] = [];

  summarise(outcomes: readonly Outcome[], failedMessageIds: readonly string[], batchLatencyMs: number): BatchSummary {
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
      recordLatenciesMs: this.recordLatenciesMs,
      batchLatencyMs,
      failedMessageIds,
    };
  }
}

/** Default Powertools instances for a consumer. */
export function defaultTelemetry(consumer: string): { logger: InboxLogger; metrics: InboxMetrics } {
  return {
    logger: new Logger({ serviceName: consumer }),
    metrics: new Metrics({ namespace: process.env.POWERTOOLS_METRICS_NAMESPACE ?? METRIC_NAMESPACE, serviceName: consumer }),
  };
}

/**
 * Publishes one invocation's summary as CloudWatch embedded-metric-format metrics. Adding and publishing
 * happen with no await between them, so concurrent invocations in one process never mix their metrics.
 */
export function publishSummary(metrics: InboxMetrics, summary: BatchSummary): void {
  const counts: [string, number][] = [
    ['Processed', summary.processed],
    ['Duplicates', summary.duplicates],
    ['KeyCollisions', summary.collisions],
    ['Failures', summary.failures],
    ['ShortCircuited', summary.shortCircuited],
    ['DeferredByDeadline', summary.deferredByDeadline],
    ['ResumeRetries', summary.resumeRetries],
    ['Parked', summary.parked],
  ];
  for (const [name, value] of counts) metrics.addMetric(name, MetricUnit.Count, value);
  for (const latency of summary.recordLatenciesMs) metrics.addMetric('RecordLatency', MetricUnit.Milliseconds, latency);
  metrics.addMetric('BatchLatency', MetricUnit.Milliseconds, summary.batchLatencyMs);
  metrics.publishStoredMetrics();
}
