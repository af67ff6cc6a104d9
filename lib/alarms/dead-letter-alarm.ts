import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type { Construct } from 'constructs';
import { inboxAlarm } from './alarm.js';
import type { WatchedConsumer } from './alarm.js';
import { visibleMessages } from './metric-factory.js';

/**
 * Messages in the dead-letter queue (SQS), or records the mapping sent to its on-failure queue (streams); none when
 * the consumer has no such queue (a queue without one, or a stream whose `onFailure` is not a queue).
 */
export function deadLetterAlarm(scope: Construct, consumer: WatchedConsumer): cloudwatch.Alarm | undefined {
  if (consumer.deadLetterQueue === undefined) return undefined;
  const name = consumer.consumerName;
  return inboxAlarm(scope, 'DeadLetterQueueNotEmpty', {
    metric: visibleMessages(consumer.deadLetterQueue),
    threshold: 0,
    description:
      consumer.queue !== undefined
        ? `Messages of inbox consumer ${name} reached the dead-letter queue: inspect them, fix the cause, then redrive.`
        : `The event source mapping of inbox consumer ${name} discarded records after its retries: each message in the on-failure ` +
          'queue says which. Fix the cause, then replay them from the stream while it still holds them (the inbox skips any already applied).',
  });
}
