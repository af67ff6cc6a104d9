import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type { Construct } from 'constructs';
import { DSQL_CONFLICT_METRICS } from '../../lambda/inbox/contract.js';
import { inboxAlarm } from './alarm.js';
import type { WatchedConsumer } from './alarm.js';
import type { ConsumerMetricFactory } from './metric-factory.js';

/**
 * Aurora DSQL: transactions that lost an optimistic-concurrency conflict after every retry (the runtime's
 * `ConflictsExhausted`, lambda/inbox/contract.ts `DSQL_CONFLICT_METRICS`). Each such record was reported failed and
 * comes back; a steady count means contention the retries cannot absorb (hot keys, or writers touching the same rows).
 */
export function dsqlConflictAlarm(scope: Construct, consumer: WatchedConsumer, metrics: ConsumerMetricFactory): cloudwatch.Alarm {
  const [, exhausted] = DSQL_CONFLICT_METRICS;
  return inboxAlarm(scope, exhausted, {
    metric: metrics.inbox(exhausted),
    threshold: 0,
    description:
      `Transactions of inbox consumer ${consumer.consumerName} on Aurora DSQL lost an optimistic-concurrency conflict (40001) after every retry: ` +
      'their records were reported failed and are redelivered. Look for writers touching the same rows, or raise dsql({ conflictRetries }).',
  });
}
