import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type { Construct } from 'constructs';
import type { InboxConsumer } from '../consumer/inbox-consumer.js';
import type { InboxDsqlConsumer } from '../dsql/inbox-dsql-consumer.js';

/** A consumer InboxAlarms watches: its source, queues, function and inbox metrics. */
export type WatchedConsumer = InboxConsumer | InboxDsqlConsumer;

/** One alarm of InboxAlarms: above `threshold` for `evaluationPeriods` periods. */
export interface AlarmOptions {
  readonly metric: cloudwatch.IMetric;
  readonly threshold: number;
  /** What happened, and what to do about it: the text the page carries. */
  readonly description: string;
  /** @default 1 */
  readonly evaluationPeriods?: number | undefined;
  /** @default - every evaluation period */
  readonly datapointsToAlarm?: number | undefined;
  /** @default TreatMissingData.NOT_BREACHING */
  readonly treatMissingData?: cloudwatch.TreatMissingData | undefined;
}

/** An alarm the way every InboxAlarms alarm is made: greater than its threshold, quiet without data unless told. */
export function inboxAlarm(scope: Construct, id: string, options: AlarmOptions): cloudwatch.Alarm {
  return new cloudwatch.Alarm(scope, id, {
    metric: options.metric,
    threshold: options.threshold,
    evaluationPeriods: options.evaluationPeriods ?? 1,
    ...(options.datapointsToAlarm === undefined ? {} : { datapointsToAlarm: options.datapointsToAlarm }),
    comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    // Unless said otherwise, no data means nothing happened (no messages): not a reason to page.
    treatMissingData: options.treatMissingData ?? cloudwatch.TreatMissingData.NOT_BREACHING,
    alarmDescription: options.description,
  });
}
