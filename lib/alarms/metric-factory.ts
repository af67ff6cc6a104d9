import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { rateSeconds } from '../invariants.js';
import type { InboxOutboxRelay } from '../outbox/inbox-outbox-relay.js';
import type { InboxCleanup } from '../purge/inbox-cleanup.js';
import { METRIC_NAMESPACE } from '../../lambda/inbox/contract.js';
import type { WatchedConsumer } from './alarm.js';

/** The period of the inbox's own counts, and of the rates made of them. */
const FIVE_MINUTES = Duration.minutes(5);

/**
 * The metrics of one consumer, as the alarms and the dashboard read them: its runtime's (namespace SqsInbox,
 * dimensions `service` and `source`, lambda/inbox/contract.ts), the rates made of them, how far behind it is, and
 * its function's. Makes metrics only: the alarms and the widgets use it from their own files.
 */
export class ConsumerMetricFactory {
  constructor(private readonly consumer: WatchedConsumer) {}

  /** One of the metrics the consumer's runtime publishes, by name. */
  inbox(metricName: string, statistic = 'Sum', period: Duration = FIVE_MINUTES): cloudwatch.Metric {
    return new cloudwatch.Metric({
      namespace: METRIC_NAMESPACE,
      metricName,
      dimensionsMap: { service: this.consumer.consumerName, source: this.consumer.source.kind },
      statistic,
      period,
    });
  }

  /** Duplicates over the records seen, in percent; 0 below `minRecords`, so one duplicate of one message is no spike. */
  duplicateRate(minRecords: number): cloudwatch.MathExpression {
    return new cloudwatch.MathExpression({
      expression: `IF((FILL(dup, 0) + FILL(proc, 0)) >= ${minRecords}, 100 * FILL(dup, 0) / (FILL(dup, 0) + FILL(proc, 0)), 0)`,
      usingMetrics: { dup: this.inbox('Duplicates'), proc: this.inbox('Processed') },
      label: 'Duplicate rate (%)',
      period: FIVE_MINUTES,
    });
  }

  /** Failed records over the records run (processed, duplicate, failed, parked), in percent; 0 below `minRecords`. */
  failureRate(minRecords: number): cloudwatch.MathExpression {
    const ran = '(FILL(fail, 0) + FILL(proc, 0) + FILL(dup, 0) + FILL(park, 0))';
    return new cloudwatch.MathExpression({
      expression: `IF(${ran} >= ${minRecords}, 100 * FILL(fail, 0) / ${ran}, 0)`,
      usingMetrics: { fail: this.inbox('Failures'), proc: this.inbox('Processed'), dup: this.inbox('Duplicates'), park: this.inbox('Parked') },
      label: 'Failure rate (%)',
      period: FIVE_MINUTES,
    });
  }

  /** Batch sets that fell back to one record at a time over all batch sets, in percent; 0 below `minSets`. */
  batchFallbackRate(minSets: number): cloudwatch.MathExpression {
    return new cloudwatch.MathExpression({
      expression: `IF(FILL(sets, 0) >= ${minSets}, 100 * FILL(fallbacks, 0) / FILL(sets, 0), 0)`,
      usingMetrics: { sets: this.inbox('BatchSets'), fallbacks: this.inbox('BatchFallbacks') },
      label: 'Batch fallback rate (%)',
      period: FIVE_MINUTES,
    });
  }

  /**
   * How far behind the consumer is, as its source tells: the age of the oldest queued message in seconds (SQS), the
   * records the consumer group has not committed (Kafka: `OffsetLag`), or the age of the last record of a processed
   * batch in milliseconds (Kinesis, DynamoDB: `IteratorAge`), as Lambda names them
   * (https://docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-types.html).
   */
  lag(): cloudwatch.Metric {
    if (this.consumer.queue !== undefined) return queueMetric(this.consumer.queue, 'ApproximateAgeOfOldestMessage', Duration.minutes(1));
    const name = this.consumer.source.kind === 'kafka' ? 'OffsetLag' : 'IteratorAge';
    return functionMetric(this.consumer.function, name, 'Maximum', Duration.minutes(1));
  }

  /** One of the metrics Lambda publishes for the consumer's function. */
  function(metricName: string, statistic = 'Sum', period: Duration = FIVE_MINUTES): cloudwatch.Metric {
    return functionMetric(this.consumer.function, metricName, statistic, period);
  }
}

/** The messages a queue holds that a consumer could receive now (its backlog, or a dead-letter queue's count). */
export function visibleMessages(queue: sqs.IQueue, label?: string): cloudwatch.Metric {
  return queueMetric(queue, 'ApproximateNumberOfMessagesVisible', Duration.minutes(1), label);
}

/** A metric SQS publishes for a queue, at its maximum over the period. */
export function queueMetric(queue: sqs.IQueue, metricName: string, period: Duration, label?: string): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace: 'AWS/SQS',
    metricName,
    dimensionsMap: { QueueName: queue.queueName },
    statistic: 'Maximum',
    period,
    ...(label === undefined ? {} : { label }),
  });
}

/** A metric Lambda publishes for a function. */
export function functionMetric(fn: lambda.IFunction, metricName: string, statistic = 'Sum', period: Duration = FIVE_MINUTES): cloudwatch.Metric {
  return fn.metric(metricName, { statistic, period });
}

/** A metric the purge publishes under its own `service` dimension: it runs hourly by default, so hourly periods. */
export function cleanupMetric(cleanup: InboxCleanup, metricName: string, statistic: string): cloudwatch.Metric {
  return serviceMetric(cleanup.serviceName, metricName, statistic, Duration.hours(1));
}

/** A metric the outbox sweeper publishes under its own `service` dimension, over {@link outboxMetricPeriod}. */
export function outboxMetric(relay: InboxOutboxRelay, metricName: string, statistic: string): cloudwatch.Metric {
  return serviceMetric(relay.serviceName, metricName, statistic, outboxMetricPeriod(relay));
}

/**
 * The sweeper's metric period: one period holds at least one run (5 minutes at least; an hour for a `cron()`
 * schedule), so a period without a report means the sweeper did not report.
 */
export function outboxMetricPeriod(relay: InboxOutboxRelay): Duration {
  const interval = rateSeconds(relay.schedule.expressionString);
  return Duration.seconds(interval === undefined ? 3600 : Math.max(5 * 60, Math.ceil(interval / 60) * 60));
}

function serviceMetric(service: string, metricName: string, statistic: string, period: Duration): cloudwatch.Metric {
  return new cloudwatch.Metric({ namespace: METRIC_NAMESPACE, metricName, dimensionsMap: { service }, statistic, period });
}
