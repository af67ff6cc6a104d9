import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type { Construct } from 'constructs';
import { inboxAlarm } from './alarm.js';
import type { WatchedConsumer } from './alarm.js';
import type { ConsumerMetricFactory } from './metric-factory.js';

/**
 * More than `threshold` records parked in 5 minutes (`onPermanentError: 'park'`). A parked record is reported as
 * succeeded and never reaches the dead-letter queue, so this alarm is what tells anyone it needs a fix and a replay.
 */
export function parkedAlarm(scope: Construct, consumer: WatchedConsumer, metrics: ConsumerMetricFactory, threshold: number): cloudwatch.Alarm {
  return inboxAlarm(scope, 'Parked', {
    metric: metrics.inbox('Parked'),
    threshold,
    description:
      `Inbox consumer ${consumer.consumerName} parked ${threshold === 0 ? 'a record' : `more than ${threshold} records`} in 5 minutes ` +
      '(a permanent error with onPermanentError: "park"): it never reaches the dead-letter queue. Fix the cause, then replay it ' +
      '(parkedMessages(handler).list() and replay(), from sqs-inbox/operations).',
  });
}
