import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type { Construct } from 'constructs';
import { inboxAlarm } from './alarm.js';
import type { WatchedConsumer } from './alarm.js';

/** 5-minute periods in a row the fallback rate must stay above its threshold. */
const FALLBACK_PERIODS = 3;

/**
 * The batch modes (`applyBatch`, `statementBatch`): more than `percent` of the batch sets fell back to running each
 * of their records alone, for 15 minutes. A fallback is correct (the record that broke the set fails alone) but costs
 * a few calls per record instead of a few per set; sustained, the batch mode no longer pays.
 */
export function batchFallbackAlarm(scope: Construct, consumer: WatchedConsumer, rate: cloudwatch.MathExpression, percent: number): cloudwatch.Alarm {
  return inboxAlarm(scope, 'BatchFallbackRate', {
    metric: rate,
    threshold: percent,
    evaluationPeriods: FALLBACK_PERIODS,
    datapointsToAlarm: FALLBACK_PERIODS,
    description:
      `More than ${percent}% of the batch sets of inbox consumer ${consumer.consumerName} fell back to running each record alone, for ` +
      `${FALLBACK_PERIODS * 5} minutes: each fallback costs a few Data API calls per record instead of a few per set. Its logs ` +
      'say why ("the batch failed as a whole"): a record the set statement refuses, a key collision, an effect that throws for ' +
      'one record. Fix the cause, or use the per-record mode (apply, statement) if such records are common.',
  });
}
