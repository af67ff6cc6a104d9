import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type { Construct } from 'constructs';
import { inboxAlarm } from './alarm.js';
import type { WatchedConsumer } from './alarm.js';
import type { ConsumerMetricFactory } from './metric-factory.js';

/** Any key collision: a message whose idempotency key another payload already used, so a producer reuses keys. */
export function keyCollisionAlarm(scope: Construct, consumer: WatchedConsumer, metrics: ConsumerMetricFactory): cloudwatch.Alarm {
  return inboxAlarm(scope, 'KeyCollisions', {
    metric: metrics.inbox('KeyCollisions'),
    threshold: 0,
    description: `Inbox consumer ${consumer.consumerName} saw a message whose idempotency key was already used by a different payload: a producer reuses keys.`,
  });
}

/** A duplicate rate above `percent` in 5 minutes: an upstream retry storm. */
export function duplicateRateAlarm(scope: Construct, consumer: WatchedConsumer, rate: cloudwatch.MathExpression, percent: number): cloudwatch.Alarm {
  return inboxAlarm(scope, 'DuplicateRate', {
    metric: rate,
    threshold: percent,
    description: `More than ${percent}% of the records inbox consumer ${consumer.consumerName} saw were duplicates: an upstream retry storm.`,
  });
}
