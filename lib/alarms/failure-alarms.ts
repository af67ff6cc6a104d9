import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type { Construct } from 'constructs';
import { inboxAlarm } from './alarm.js';
import type { WatchedConsumer } from './alarm.js';
import type { ConsumerMetricFactory } from './metric-factory.js';

/** Invocations that failed as a whole (a crash or a timeout): the whole batch is retried. */
export function errorsAlarm(scope: Construct, consumer: WatchedConsumer, metrics: ConsumerMetricFactory): cloudwatch.Alarm {
  return inboxAlarm(scope, 'Errors', {
    metric: metrics.function('Errors'),
    threshold: 0,
    description: `Invocations of inbox consumer ${consumer.consumerName} failed as a whole (crash or timeout): the whole batch is retried.`,
  });
}

/**
 * A rate of failed records above `percent` for `periods` 5-minute periods in a row. Failed records are retried, so a
 * failure that heals on retry, or that SQS keeps retrying for hours, never shows in Lambda's `Errors` or the
 * dead-letter queue.
 */
export function failureRateAlarm(
  scope: Construct,
  consumer: WatchedConsumer,
  rate: cloudwatch.MathExpression,
  thresholds: { readonly percent: number; readonly periods: number },
): cloudwatch.Alarm {
  const { percent, periods } = thresholds;
  return inboxAlarm(scope, 'FailureRate', {
    metric: rate,
    threshold: percent,
    evaluationPeriods: periods,
    datapointsToAlarm: periods,
    description:
      `More than ${percent}% of the records inbox consumer ${consumer.consumerName} ran failed, for ${periods * 5} minutes: they are ` +
      'retried (partial batch failures are not Lambda Errors), and reach the dead-letter queue only after ' +
      `${consumer.queue !== undefined ? 'maxReceiveCount' : 'retryAttempts'}. See its logs for the failed records.`,
  });
}
