import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type { InboxOutboxRelay } from '../outbox/inbox-outbox-relay.js';
import type { InboxCleanup } from '../purge/inbox-cleanup.js';
import { CONSUMER_LATENCY_METRICS } from '../../lambda/inbox/contract.js';
import type { WatchedConsumer } from './alarm.js';
import type { ConsumerMetricFactory } from './metric-factory.js';
import { cleanupMetric, functionMetric, outboxMetric, visibleMessages } from './metric-factory.js';

/** The rates a consumer's alarms judge, shown beside its anomalies. */
export interface ConsumerRates {
  readonly duplicateRate: cloudwatch.MathExpression;
  readonly failureRate: cloudwatch.MathExpression;
  readonly fallbackRate: cloudwatch.MathExpression;
}

/** A consumer's row of the dashboard: outcomes, anomalies and rates, latency, its queue or stream, its function. */
export function consumerWidgets(consumer: WatchedConsumer, metrics: ConsumerMetricFactory, rates: ConsumerRates): cloudwatch.IWidget[] {
  const name = consumer.consumerName;
  const counts = (names: readonly string[]) => names.map((metricName) => metrics.inbox(metricName));
  return [
    new cloudwatch.TextWidget({ markdown: `## Inbox consumer \`${name}\``, width: 24, height: 1 }),
    new cloudwatch.GraphWidget({
      title: `${name}: outcomes`,
      left: counts(['Processed', 'Duplicates', 'Failures', 'Parked']),
      // Outbox messages sent after the commits, and those left for the sweeper.
      right: counts(['OutboxSent', 'OutboxDeferred']),
      width: 8,
    }),
    new cloudwatch.GraphWidget({
      title: `${name}: anomalies`,
      left: counts(['KeyCollisions', 'ShortCircuited', 'DeferredByDeadline', 'ResumeRetries', 'BatchSets', 'BatchFallbacks']),
      right: [rates.duplicateRate, rates.failureRate, rates.fallbackRate],
      width: 8,
    }),
    new cloudwatch.GraphWidget({
      title: `${name}: latency (ms)`,
      left: CONSUMER_LATENCY_METRICS.flatMap((metricName) => [metrics.inbox(metricName, 'p50'), metrics.inbox(metricName, 'p99')]),
      width: 8,
    }),
    new cloudwatch.GraphWidget({
      title: `${name}: ${consumer.queue !== undefined ? 'queue' : consumer.source.kind}`,
      left: [
        ...(consumer.queue === undefined ? [] : [visibleMessages(consumer.queue)]),
        ...(consumer.deadLetterQueue === undefined ? [] : [visibleMessages(consumer.deadLetterQueue, 'Dead-letter queue')]),
      ],
      right: [metrics.lag()],
      width: 12,
    }),
    new cloudwatch.GraphWidget({
      title: `${name}: function`,
      left: [metrics.function('Invocations'), metrics.function('Errors'), metrics.function('Throttles')],
      right: [metrics.function('Duration', 'p99')],
      width: 12,
    }),
  ];
}

/** The purge's section: rows purged and left, and the oldest row's age against the alarm's threshold. */
export function cleanupWidgets(cleanup: InboxCleanup, threshold: number | undefined): cloudwatch.IWidget[] {
  return [
    new cloudwatch.TextWidget({ markdown: '## Inbox cleanup', width: 24, height: 1 }),
    new cloudwatch.GraphWidget({
      title: 'cleanup: purged rows',
      left: [cleanupMetric(cleanup, 'PurgedRows', 'Sum')],
      right: [cleanupMetric(cleanup, 'PurgeMoreRemaining', 'Maximum')],
      width: 12,
    }),
    new cloudwatch.GraphWidget({
      title: 'cleanup: oldest row age (s)',
      left: [cleanupMetric(cleanup, 'OldestRowAgeSeconds', 'Maximum')],
      ...(threshold === undefined ? {} : { leftAnnotations: [{ value: threshold, label: 'alarm' }] }),
      width: 12,
    }),
  ];
}

/** The outbox sweeper's section: messages swept and deferred, the oldest unsent one against the alarm, the function. */
export function outboxWidgets(relay: InboxOutboxRelay, maxAge: number): cloudwatch.IWidget[] {
  return [
    new cloudwatch.TextWidget({ markdown: '## Outbox relay', width: 24, height: 1 }),
    new cloudwatch.GraphWidget({
      title: 'outbox: swept messages',
      left: [outboxMetric(relay, 'OutboxSwept', 'Sum'), outboxMetric(relay, 'OutboxSweepDeferred', 'Sum')],
      width: 8,
    }),
    new cloudwatch.GraphWidget({
      title: 'outbox: oldest unsent message age (s)',
      left: [outboxMetric(relay, 'OutboxOldestUnsentAgeSeconds', 'Maximum')],
      leftAnnotations: [{ value: maxAge, label: 'alarm' }],
      width: 8,
    }),
    new cloudwatch.GraphWidget({
      title: 'outbox: sweeper',
      left: [functionMetric(relay.function, 'Invocations'), functionMetric(relay.function, 'Errors')],
      right: [functionMetric(relay.function, 'Duration', 'p99')],
      width: 8,
    }),
  ];
}

/** Every alarm's state at a glance, at the foot of the dashboard. */
export function alarmStatusWidget(alarms: readonly cloudwatch.IAlarm[]): cloudwatch.IWidget {
  return new cloudwatch.AlarmStatusWidget({ title: 'Inbox alarms', alarms: [...alarms], width: 24 });
}
