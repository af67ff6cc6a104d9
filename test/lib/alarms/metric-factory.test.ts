import { Duration, type Stack } from 'aws-cdk-lib';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as events from 'aws-cdk-lib/aws-events';
import { describe, expect, it } from 'vitest';
import { InboxConsumer, InboxDatabase, InboxOutboxRelay, InboxQueue, InboxSources } from '../../../lib/index.js';
import { ConsumerMetricFactory, outboxMetricPeriod } from '../../../lib/alarms/metric-factory.js';
import { FIXTURE_HANDLER, testStack } from '../support.js';
import { streamConsumer } from '../stream-support.js';

/** A metric as CloudWatch will read it: its config resolved in its stack. */
const resolved = (stack: Stack, metric: { toMetricConfig(): unknown }) => stack.resolve(metric.toMetricConfig());

describe('ConsumerMetricFactory', () => {
  it("makes the runtime's metrics under the consumer's service and source, 5-minute sums unless told otherwise", () => {
    const { stack, consumer } = streamConsumer('kinesis');
    const metrics = new ConsumerMetricFactory(consumer);
    expect(resolved(stack, metrics.inbox('Processed'))).toEqual({
      metricStat: {
        namespace: 'SqsInbox',
        metricName: 'Processed',
        dimensions: [
          { name: 'service', value: 'stream-worker' },
          { name: 'source', value: 'kinesis' },
        ],
        period: Duration.minutes(5),
        statistic: 'Sum',
        account: undefined,
        region: undefined,
      },
      renderingProperties: {},
    });
    expect(metrics.inbox('RecordLatencyMs', 'p99', Duration.minutes(1)).statistic).toBe('p99');
  });

  it('measures lag as the source tells it: the oldest message (SQS), the iterator age (streams), the offset lag (Kafka)', () => {
    const stack = testStack();
    const sqsConsumer = new InboxConsumer(stack, 'Queue', {
      database: new InboxDatabase(stack, 'Db'),
      source: InboxSources.sqs(new InboxQueue(stack, 'Orders').queue),
      consumerName: 'queue',
      entry: FIXTURE_HANDLER,
    });
    const lagOf = (consumer: InboxConsumer) => {
      const metric = new ConsumerMetricFactory(consumer).lag();
      return [metric.namespace, metric.metricName, metric.statistic, metric.period.toSeconds()];
    };
    expect(lagOf(sqsConsumer)).toEqual(['AWS/SQS', 'ApproximateAgeOfOldestMessage', 'Maximum', 60]);
    expect(lagOf(streamConsumer('kinesis').consumer)).toEqual(['AWS/Lambda', 'IteratorAge', 'Maximum', 60]);
    expect(lagOf(streamConsumer('dynamodb').consumer)).toEqual(['AWS/Lambda', 'IteratorAge', 'Maximum', 60]);
    expect(lagOf(streamConsumer('self-managed-kafka').consumer)).toEqual(['AWS/Lambda', 'OffsetLag', 'Maximum', 60]);
  });

  it('makes the rates the alarms judge, each 0 below its minimum volume', () => {
    const metrics = new ConsumerMetricFactory(streamConsumer('msk').consumer);
    const rate = (expression: cloudwatch.MathExpression) => [
      expression.expression,
      Object.fromEntries(Object.entries(expression.usingMetrics).map(([id, metric]) => [id, (metric as cloudwatch.Metric).metricName])),
    ];
    expect(rate(metrics.duplicateRate(7))).toEqual([
      'IF((FILL(dup, 0) + FILL(proc, 0)) >= 7, 100 * FILL(dup, 0) / (FILL(dup, 0) + FILL(proc, 0)), 0)',
      { dup: 'Duplicates', proc: 'Processed' },
    ]);
    expect(rate(metrics.batchFallbackRate(3))).toEqual([
      'IF(FILL(sets, 0) >= 3, 100 * FILL(fallbacks, 0) / FILL(sets, 0), 0)',
      { sets: 'BatchSets', fallbacks: 'BatchFallbacks' },
    ]);
    expect(rate(metrics.failureRate(9))[1]).toEqual({ fail: 'Failures', proc: 'Processed', dup: 'Duplicates', park: 'Parked' });
  });
});

describe('outboxMetricPeriod', () => {
  it("holds at least one sweep: the schedule's rate in whole minutes, 5 minutes at least, an hour for a cron", () => {
    const periodOf = (schedule: events.Schedule) => {
      const stack = testStack();
      const database = new InboxDatabase(stack, 'Db');
      return outboxMetricPeriod(new InboxOutboxRelay(stack, 'Relay', { database, consumers: [], schedule })).toSeconds();
    };
    expect(periodOf(events.Schedule.rate(Duration.minutes(1)))).toBe(300);
    expect(periodOf(events.Schedule.rate(Duration.minutes(20)))).toBe(1200);
    expect(periodOf(events.Schedule.rate(Duration.hours(2)))).toBe(7200);
    expect(periodOf(events.Schedule.cron({ minute: '0' }))).toBe(3600);
  });
});
