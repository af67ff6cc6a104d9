import { Duration } from 'aws-cdk-lib';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type { Construct } from 'constructs';
import { inboxAlarm } from './alarm.js';
import type { WatchedConsumer } from './alarm.js';
import type { ConsumerMetricFactory } from './metric-factory.js';

/** The thresholds of {@link lagAlarm}, as InboxAlarms takes them. */
export interface LagThresholds {
  /** @default Duration.minutes(15) */
  readonly maxMessageAge?: Duration | undefined;
  /** @default 10000 */
  readonly maxOffsetLag?: number | undefined;
}

/**
 * The consumer falls behind: the oldest queued message (SQS) or the last record of a processed batch (Kinesis,
 * DynamoDB) older than `maxMessageAge` for 5 minutes, or the consumer group more than `maxOffsetLag` records
 * behind its topic for 15 minutes (Kafka).
 */
export function lagAlarm(scope: Construct, consumer: WatchedConsumer, metrics: ConsumerMetricFactory, thresholds: LagThresholds): cloudwatch.Alarm {
  const name = consumer.consumerName;
  const maxAge = thresholds.maxMessageAge ?? Duration.minutes(15);
  const metric = metrics.lag();
  if (consumer.queue !== undefined) {
    return inboxAlarm(scope, 'OldestMessageAge', {
      metric,
      threshold: maxAge.toSeconds(),
      evaluationPeriods: 5,
      description: `The oldest message waiting for inbox consumer ${name} is older than ${maxAge.toHumanString()}: the consumer is stuck or too slow.`,
    });
  }
  if (consumer.source.kind === 'kafka') {
    const maxLag = thresholds.maxOffsetLag ?? 10_000;
    return inboxAlarm(scope, 'OffsetLag', {
      metric,
      threshold: maxLag,
      evaluationPeriods: 15,
      description:
        `The consumer group of inbox consumer ${name} stayed more than ${maxLag} records behind its topic for 15 minutes: ` +
        'a partition is stuck on a failing record, or the consumer is too slow.',
    });
  }
  return inboxAlarm(scope, 'IteratorAge', {
    metric,
    threshold: maxAge.toMilliseconds(),
    evaluationPeriods: 5,
    description:
      `Inbox consumer ${name} processed records older than ${maxAge.toHumanString()} (IteratorAge): a shard is stuck on a ` +
      'failing record, or the consumer is too slow. Past the stream retention, records are lost.',
  });
}
