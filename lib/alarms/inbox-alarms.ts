import { Duration, Token } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as events from 'aws-cdk-lib/aws-events';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { createAlarmTopic } from './alarm-topic.js';
import type { InboxCleanup } from '../purge/inbox-cleanup.js';
import type { InboxConsumer } from '../consumer/inbox-consumer.js';

/**
 * What the alarms read of a consumer: an InboxConsumer, or any consumer that exposes the same (InboxDsqlConsumer).
 */
export type InboxWatchedConsumer = Pick<InboxConsumer, 'consumerName' | 'source' | 'queue' | 'deadLetterQueue' | 'function'> & {
  /** The consumer's database: on Aurora DSQL, the records that lost their optimistic-concurrency retries are watched too. */
  readonly database?: unknown;
};
import type { InboxOutboxRelay } from '../outbox/inbox-outbox-relay.js';
import { describeSeconds, durationSeconds, rateSeconds } from '../invariants.js';
import {
  CLEANUP_METRICS,
  CONSUMER_COUNT_METRICS,
  CONSUMER_LATENCY_METRICS,
  DSQL_CONFLICT_METRICS,
  METRIC_NAMESPACE,
  OUTBOX_RELAY_METRICS,
} from '../../lambda/inbox/contract.js';
import { InboxConstructError } from '../errors.js';
import { InboxDsqlDatabase } from '../dsql/inbox-dsql-database.js';

/** The metrics each function emits, as the runtime writes them (lambda/inbox/contract.ts). */
export { CLEANUP_METRICS, CONSUMER_COUNT_METRICS, CONSUMER_LATENCY_METRICS, OUTBOX_RELAY_METRICS };

/** Props for {@link InboxAlarms}. */
export interface InboxAlarmsProps {
  /**
   * The consumers to watch: their queues or streams, dead-letter queues, functions and inbox metrics.
   * @default []
   */
  readonly consumers?: readonly InboxWatchedConsumer[] | undefined;
  /**
   * The cleanup to watch: failures, and whether it keeps the table within its retention.
   * @default - no cleanup alarms
   */
  readonly cleanup?: InboxCleanup | undefined;
  /**
   * The outbox relay to watch: its sweeper's errors, and whether messages stay unsent.
   * @default - no outbox alarms
   */
  readonly outboxRelay?: InboxOutboxRelay | undefined;
  /**
   * Alarm when the oldest outbox row still unsent after a sweep is older than this, or when the sweeper reports
   * nothing (it is not running, or dies before reporting). A row is normally sent by its own invocation right after
   * the commit, or by the sweeper once it is `minAge` old, at its next run; older than this, sends keep failing
   * (see the row's `last_error`) or the sweeper cannot keep up. It must exceed the relay's `minAge` plus its
   * schedule's interval, the longest a row normally waits.
   * @default Duration.minutes(15), or 5 minutes past the relay's `minAge` plus its schedule's interval when that is later
   */
  readonly maxOutboxAge?: Duration | undefined;
  /**
   * Where alarms (and their return to OK) are sent.
   * @default - a new topic when `createTopic` is true, otherwise no alarm actions
   */
  readonly topic?: sns.ITopic | undefined;
  /**
   * Create an SNS topic for alarm actions when no `topic` is given: KMS-encrypted, TLS-only, publishable by
   * this account's CloudWatch alarms.
   * @default false
   */
  readonly createTopic?: boolean | undefined;
  /**
   * The key that encrypts a topic created here.
   * @default - a new customer managed key with yearly rotation, usable by CloudWatch for this account's alarms
   */
  readonly topicEncryptionKey?: kms.IKey | undefined;
  /**
   * Alarm when more than this many records were parked in 5 minutes (`onPermanentError: park`). A parked
   * record is reported to SQS as succeeded and never reaches the dead-letter queue, so this alarm is what
   * tells anyone it needs a fix and a replay.
   * @default 0 (every parked record)
   */
  readonly parkedThreshold?: number | undefined;
  /**
   * Alarm when more than this percentage of the records a consumer ran failed (`Failures` over `Processed`,
   * `Duplicates`, `Failures` and `Parked`), in each of `failureRatePeriods` 5-minute periods in a row.
   * Failed records are retried, so a failure that heals on retry, or that SQS keeps retrying for hours,
   * never shows in the Lambda `Errors` metric or the dead-letter queue.
   * @default 10
   */
  readonly failureRatePercent?: number | undefined;
  /**
   * Records run in 5 minutes below which the failure rate is not judged, so one failed record of two does
   * not page anyone.
   * @default 10
   */
  readonly failureRateMinRecords?: number | undefined;
  /**
   * How many 5-minute periods in a row the failure rate must stay above `failureRatePercent`: sustained,
   * not a blip while Aurora resumes or a deploy rolls.
   * @default 3 (15 minutes)
   */
  readonly failureRatePeriods?: number | undefined;
  /**
   * Batch modes (`applyBatch`, `statementBatch`): alarm when more than this percentage of a consumer's batch
   * sets fell back to running each of their records alone (`BatchFallbacks` over `BatchSets`), in each of 3
   * 5-minute periods in a row. A fallback is correct (the record that broke the set fails alone) but costs
   * a few calls per record instead of a few per set; sustained, the batch mode no longer pays.
   * @default 10
   */
  readonly batchFallbackRatePercent?: number | undefined;
  /**
   * Batch sets in 5 minutes below which the fallback rate is not judged, so one fallback of two sets does
   * not page anyone.
   * @default 10
   */
  readonly batchFallbackRateMinSets?: number | undefined;
  /**
   * Alarm when the oldest message in a consumer's queue is older than this, or, for a Kinesis or DynamoDB stream,
   * when the last record of a batch was older than this when it was processed (Lambda's `IteratorAge`), for 5 minutes.
   * @default Duration.minutes(15)
   */
  readonly maxMessageAge?: Duration | undefined;
  /**
   * Kafka: alarm when the consumer group is more than this many records behind the topic (Lambda's `OffsetLag`),
   * for 15 minutes in a row: stuck on a failing record, or too slow.
   * @default 10000
   */
  readonly maxOffsetLag?: number | undefined;
  /**
   * Alarm when duplicates exceed this percentage of the records a consumer saw in 5 minutes:
   * a producer or upstream retry storm.
   * @default 20
   */
  readonly duplicateRatePercent?: number | undefined;
  /**
   * Records in 5 minutes below which the duplicate rate is not judged, so one duplicate of one message
   * does not page anyone.
   * @default 20
   */
  readonly duplicateRateMinRecords?: number | undefined;
  /**
   * How far past the retention the oldest inbox row may be before the cleanup counts as not keeping up.
   * @default Duration.hours(6)
   */
  readonly cleanupLagMargin?: Duration | undefined;
  /**
   * How long the cleanup may go without reporting its oldest row age before the NotKeepingUp alarm fires
   * (no run, or runs that die before publishing). Whole hours, longer than the schedule's interval, at most 7 days.
   * @default - the schedule's interval plus 1 hour for a `rate()` schedule (2 hours for the hourly default);
   * 25 hours for a `cron()` schedule
   */
  readonly cleanupMaxSilence?: Duration | undefined;
  /**
   * Name of the CloudWatch dashboard.
   * @default - generated by CloudFormation
   */
  readonly dashboardName?: string | undefined;
}

/** A metric the consumer's runtime publishes: namespace SqsInbox, dimensions service and source. */
type InboxMetric = (metricName: string, statistic?: string, period?: Duration) => cloudwatch.Metric;

/** The consumer's own metrics, by name. */
function consumerMetric(consumer: InboxWatchedConsumer): InboxMetric {
  return (metricName, statistic = 'Sum', period = Duration.minutes(5)) =>
    new cloudwatch.Metric({
      namespace: METRIC_NAMESPACE,
      metricName,
      dimensionsMap: { service: consumer.consumerName, source: consumer.source },
      statistic,
      period,
    });
}

/**
 * Alarms and a dashboard for inbox consumers and their cleanup.
 *
 * Per consumer: dead-letter queue (or a stream's on-failure queue) not empty, oldest message too old (a stream's
 * `IteratorAge`, a Kafka consumer group's `OffsetLag`), inbox key collisions above zero
 * (two different payloads under one key), a spike in the duplicate rate, function errors, parked records
 * (which never reach the dead-letter queue), a sustained rate of failed records (which Lambda's
 * `Errors` does not count), and a sustained rate of batch sets that fell back to one record at a time.
 * For the cleanup: function errors, and the oldest inbox row older than the retention plus a margin or not
 * reported at all for longer than the schedule's interval (the purge stopped running).
 * For the outbox relay: the oldest unsent outbox message older than `maxOutboxAge` or not reported (the sweeper
 * stopped running), and the sweeper failing for 15 minutes.
 *
 * @example
 * new InboxAlarms(this, 'Alarms', { consumers: [worker], cleanup, createTopic: true });
 */
export class InboxAlarms extends Construct {
  /** Every alarm created. */
  public readonly alarms: cloudwatch.Alarm[] = [];
  /** The dashboard. */
  public readonly dashboard: cloudwatch.Dashboard;
  /** The topic alarm actions go to, when there is one. */
  public readonly topic?: sns.ITopic;
  /** The key of the topic created here. */
  public readonly topicKey?: kms.IKey;

  constructor(scope: Construct, id: string, props: InboxAlarmsProps = {}) {
    super(scope, id);
    validateProps(this.node.path, props);
    if (props.topic !== undefined) {
      this.topic = props.topic;
    } else if (props.createTopic === true) {
      const created = createAlarmTopic(this, props.topicEncryptionKey);
      this.topic = created.topic;
      this.topicKey = created.key;
    }
    this.dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      ...(props.dashboardName === undefined ? {} : { dashboardName: props.dashboardName }),
    });

    for (const consumer of props.consumers ?? []) this.#watchConsumer(consumer, props);
    if (props.cleanup !== undefined) this.#watchCleanup(props.cleanup, props);
    if (props.outboxRelay !== undefined) this.#watchOutboxRelay(props.outboxRelay, props);

    if (this.alarms.length > 0) {
      this.dashboard.addWidgets(new cloudwatch.AlarmStatusWidget({ title: 'Inbox alarms', alarms: this.alarms, width: 24 }));
    }
    if (this.topic !== undefined) {
      const action = new actions.SnsAction(this.topic);
      for (const alarm of this.alarms) {
        alarm.addAlarmAction(action);
        alarm.addOkAction(action);
      }
    }
  }

  /** Watches one consumer: one alarm family after the other, then its row of the dashboard. */
  #watchConsumer(consumer: InboxWatchedConsumer, props: InboxAlarmsProps): void {
    const scope = this.#consumerScope(consumer.consumerName);
    const inboxMetric = consumerMetric(consumer);
    this.#deadLetterAlarm(scope, consumer);
    const lag = this.#lagAlarm(scope, consumer, props);
    this.alarms.push(lag.alarm);
    const duplicateRate = this.#duplicateAlarms(scope, consumer, props, inboxMetric);
    const failureRate = this.#failureAlarms(scope, consumer, props, inboxMetric);
    const fallbackRate = this.#batchFallbackAlarm(scope, consumer, props, inboxMetric);
    if (consumer.database instanceof InboxDsqlDatabase) this.#conflictAlarm(scope, consumer, inboxMetric);
    this.#consumerDashboard(consumer, inboxMetric, lag.metric, { duplicateRate, failureRate, fallbackRate });
  }

  /** The consumer's own scope, named after it; a second consumer of the same name gets a numbered one. */
  #consumerScope(name: string): Construct {
    const base = `Consumer${sanitize(name)}`;
    let scopeId = base;
    for (let n = 2; this.node.tryFindChild(scopeId) !== undefined; n++) scopeId = `${base}${n}`;
    return new Construct(this, scopeId);
  }

  /** Messages in the dead-letter queue (SQS), or records the mapping sent to its on-failure destination (streams). */
  #deadLetterAlarm(scope: Construct, consumer: InboxWatchedConsumer): void {
    const name = consumer.consumerName;
    if (consumer.deadLetterQueue !== undefined) {
      this.#alarm(scope, 'DeadLetterQueueNotEmpty', {
        metric: queueMetric(consumer.deadLetterQueue, 'ApproximateNumberOfMessagesVisible', Duration.minutes(1)),
        threshold: 0,
        description:
          consumer.queue !== undefined
            ? `Messages of inbox consumer ${name} reached the dead-letter queue: inspect them, fix the cause, then redrive.`
            : `The event source mapping of inbox consumer ${name} discarded records after its retries: each message in the on-failure ` +
              'queue says which. Fix the cause, then replay them from the stream while it still holds them (the inbox skips any already applied).',
      });
    }
  }

  /** Key collisions (a producer reuses keys) and the duplicate rate (an upstream retry storm). */
  #duplicateAlarms(scope: Construct, consumer: InboxWatchedConsumer, props: InboxAlarmsProps, inboxMetric: InboxMetric): cloudwatch.MathExpression {
    const name = consumer.consumerName;
    this.#alarm(scope, 'KeyCollisions', {
      metric: inboxMetric('KeyCollisions'),
      threshold: 0,
      description: `Inbox consumer ${name} saw a message whose idempotency key was already used by a different payload: a producer reuses keys.`,
    });
    const minRecords = props.duplicateRateMinRecords ?? 20;
    const duplicateRate = new cloudwatch.MathExpression({
      expression: `IF((FILL(dup, 0) + FILL(proc, 0)) >= ${minRecords}, 100 * FILL(dup, 0) / (FILL(dup, 0) + FILL(proc, 0)), 0)`,
      usingMetrics: { dup: inboxMetric('Duplicates'), proc: inboxMetric('Processed') },
      label: 'Duplicate rate (%)',
      period: Duration.minutes(5),
    });
    this.#alarm(scope, 'DuplicateRate', {
      metric: duplicateRate,
      threshold: props.duplicateRatePercent ?? 20,
      description: `More than ${props.duplicateRatePercent ?? 20}% of the records inbox consumer ${name} saw were duplicates: an upstream retry storm.`,
    });
    return duplicateRate;
  }

  /** Failed invocations, parked records, and the rate of failed records. */
  #failureAlarms(scope: Construct, consumer: InboxWatchedConsumer, props: InboxAlarmsProps, inboxMetric: InboxMetric): cloudwatch.MathExpression {
    const name = consumer.consumerName;
    this.#alarm(scope, 'Errors', {
      metric: functionMetric(consumer.function, 'Errors'),
      threshold: 0,
      description: `Invocations of inbox consumer ${name} failed as a whole (crash or timeout): the whole batch is retried.`,
    });
    const parkedThreshold = props.parkedThreshold ?? 0;
    this.#alarm(scope, 'Parked', {
      metric: inboxMetric('Parked'),
      threshold: parkedThreshold,
      description:
        `Inbox consumer ${name} parked ${parkedThreshold === 0 ? 'a record' : `more than ${parkedThreshold} records`} in 5 minutes ` +
        '(a permanent error with onPermanentError: park): it never reaches the dead-letter queue. Fix the cause, then replay it ' +
        '(parkedMessages(handler).list() and replay(), from sqs-inbox/parked).',
    });
    const failurePercent = props.failureRatePercent ?? 10;
    const failureMinRecords = props.failureRateMinRecords ?? 10;
    const failurePeriods = props.failureRatePeriods ?? 3;
    const ran = '(FILL(fail, 0) + FILL(proc, 0) + FILL(dup, 0) + FILL(park, 0))';
    const failureRate = new cloudwatch.MathExpression({
      expression: `IF(${ran} >= ${failureMinRecords}, 100 * FILL(fail, 0) / ${ran}, 0)`,
      usingMetrics: { fail: inboxMetric('Failures'), proc: inboxMetric('Processed'), dup: inboxMetric('Duplicates'), park: inboxMetric('Parked') },
      label: 'Failure rate (%)',
      period: Duration.minutes(5),
    });
    this.#alarm(scope, 'FailureRate', {
      metric: failureRate,
      threshold: failurePercent,
      evaluationPeriods: failurePeriods,
      datapointsToAlarm: failurePeriods,
      description:
        `More than ${failurePercent}% of the records inbox consumer ${name} ran failed, for ${failurePeriods * 5} minutes: they are ` +
        'retried (partial batch failures are not Lambda Errors), and reach the dead-letter queue only after ' +
        `${consumer.queue !== undefined ? 'maxReceiveCount' : 'retryAttempts'}. See its logs for the failed records.`,
    });
    return failureRate;
  }

  /**
   * Aurora DSQL: transactions that lost an optimistic-concurrency conflict after every retry (the runtime's
   * `ConflictsExhausted`, lambda/inbox/contract.ts `DSQL_CONFLICT_METRICS`). Each such record was reported failed and
   * comes back; a steady count means contention the retries cannot absorb (hot keys, or writers touching the same rows).
   */
  #conflictAlarm(scope: Construct, consumer: InboxWatchedConsumer, inboxMetric: InboxMetric): void {
    const [, exhausted] = DSQL_CONFLICT_METRICS;
    this.#alarm(scope, exhausted, {
      metric: inboxMetric(exhausted),
      threshold: 0,
      description:
        `Transactions of inbox consumer ${consumer.consumerName} on Aurora DSQL lost an optimistic-concurrency conflict (40001) after every retry: ` +
        'their records were reported failed and are redelivered. Look for writers touching the same rows, or raise dsql({ conflictRetries }).',
    });
  }

  /** The batch modes' sets that fell back to running each record alone. */
  #batchFallbackAlarm(scope: Construct, consumer: InboxWatchedConsumer, props: InboxAlarmsProps, inboxMetric: InboxMetric): cloudwatch.MathExpression {
    const name = consumer.consumerName;
    const fallbackPercent = props.batchFallbackRatePercent ?? 10;
    const fallbackMinSets = props.batchFallbackRateMinSets ?? 10;
    const fallbackPeriods = 3;
    const fallbackRate = new cloudwatch.MathExpression({
      expression: `IF(FILL(sets, 0) >= ${fallbackMinSets}, 100 * FILL(fallbacks, 0) / FILL(sets, 0), 0)`,
      usingMetrics: { sets: inboxMetric('BatchSets'), fallbacks: inboxMetric('BatchFallbacks') },
      label: 'Batch fallback rate (%)',
      period: Duration.minutes(5),
    });
    this.#alarm(scope, 'BatchFallbackRate', {
      metric: fallbackRate,
      threshold: fallbackPercent,
      evaluationPeriods: fallbackPeriods,
      datapointsToAlarm: fallbackPeriods,
      description:
        `More than ${fallbackPercent}% of the batch sets of inbox consumer ${name} fell back to running each record alone, for ` +
        `${fallbackPeriods * 5} minutes: each fallback costs a few Data API calls per record instead of a few per set. Its logs ` +
        'say why ("the batch failed as a whole"): a record the set statement refuses, a key collision, an effect that throws for ' +
        'one record. Fix the cause, or use the per-record mode (apply, statement) if such records are common.',
    });
    return fallbackRate;
  }

  /** The consumer's row of the dashboard: outcomes, anomalies and rates, latency, its queue or stream, its function. */
  #consumerDashboard(
    consumer: InboxWatchedConsumer,
    inboxMetric: InboxMetric,
    lagMetric: cloudwatch.Metric,
    { duplicateRate, failureRate, fallbackRate }: Readonly<Record<'duplicateRate' | 'failureRate' | 'fallbackRate', cloudwatch.MathExpression>>,
  ): void {
    const name = consumer.consumerName;
    const counts = (names: readonly string[]) => names.map((metricName) => inboxMetric(metricName));
    this.dashboard.addWidgets(
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
        right: [duplicateRate, failureRate, fallbackRate],
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: `${name}: latency (ms)`,
        left: CONSUMER_LATENCY_METRICS.flatMap((metricName) => [inboxMetric(metricName, 'p50'), inboxMetric(metricName, 'p99')]),
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: `${name}: ${consumer.queue !== undefined ? 'queue' : consumer.source}`,
        left: [
          ...(consumer.queue === undefined ? [] : [queueMetric(consumer.queue, 'ApproximateNumberOfMessagesVisible', Duration.minutes(1))]),
          ...(consumer.deadLetterQueue === undefined
            ? []
            : [queueMetric(consumer.deadLetterQueue, 'ApproximateNumberOfMessagesVisible', Duration.minutes(1), 'Dead-letter queue')]),
        ],
        right: [lagMetric],
        width: 12,
      }),
      new cloudwatch.GraphWidget({
        title: `${name}: function`,
        left: [functionMetric(consumer.function, 'Invocations'), functionMetric(consumer.function, 'Errors'), functionMetric(consumer.function, 'Throttles')],
        right: [functionMetric(consumer.function, 'Duration', 'p99')],
        width: 12,
      }),
    );
  }

  /**
   * How far behind the consumer is: the age of the oldest queued message (SQS), the age of the last record of a
   * processed batch (Kinesis, DynamoDB: `IteratorAge`), or the records the consumer group has not committed (Kafka:
   * `OffsetLag`), as Lambda names them (https://docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-types.html).
   */
  #lagAlarm(scope: Construct, consumer: InboxWatchedConsumer, props: InboxAlarmsProps): { alarm: cloudwatch.Alarm; metric: cloudwatch.Metric } {
    const name = consumer.consumerName;
    const maxAge = props.maxMessageAge ?? Duration.minutes(15);
    if (consumer.queue !== undefined) {
      const metric = queueMetric(consumer.queue, 'ApproximateAgeOfOldestMessage', Duration.minutes(1));
      const alarm = this.#newAlarm(scope, 'OldestMessageAge', {
        metric,
        threshold: maxAge.toSeconds(),
        evaluationPeriods: 5,
        description: `The oldest message waiting for inbox consumer ${name} is older than ${maxAge.toHumanString()}: the consumer is stuck or too slow.`,
      });
      return { alarm, metric };
    }
    if (consumer.source === 'kafka') {
      const maxLag = props.maxOffsetLag ?? 10_000;
      const metric = functionMetric(consumer.function, 'OffsetLag', 'Maximum', Duration.minutes(1));
      const alarm = this.#newAlarm(scope, 'OffsetLag', {
        metric,
        threshold: maxLag,
        evaluationPeriods: 15,
        description:
          `The consumer group of inbox consumer ${name} stayed more than ${maxLag} records behind its topic for 15 minutes: ` +
          'a partition is stuck on a failing record, or the consumer is too slow.',
      });
      return { alarm, metric };
    }
    const metric = functionMetric(consumer.function, 'IteratorAge', 'Maximum', Duration.minutes(1));
    const alarm = this.#newAlarm(scope, 'IteratorAge', {
      metric,
      threshold: maxAge.toMilliseconds(),
      evaluationPeriods: 5,
      description:
        `Inbox consumer ${name} processed records older than ${maxAge.toHumanString()} (IteratorAge): a shard is stuck on a ` +
        'failing record, or the consumer is too slow. Past the stream retention, records are lost.',
    });
    return { alarm, metric };
  }

  #watchCleanup(cleanup: InboxCleanup, props: InboxAlarmsProps): void {
    const scope = new Construct(this, 'Cleanup');
    const cleanupMetric = (metricName: string, statistic: string) =>
      new cloudwatch.Metric({
        namespace: METRIC_NAMESPACE,
        metricName,
        dimensionsMap: { service: cleanup.serviceName },
        statistic,
        period: Duration.hours(1),
      });
    this.#alarm(scope, 'Errors', {
      metric: functionMetric(cleanup.function, 'Errors', 'Sum', Duration.hours(1)),
      threshold: 0,
      description: 'The inbox purge failed: old inbox rows are not being deleted.',
    });
    const margin = props.cleanupLagMargin ?? Duration.hours(6);
    const retention = cleanup.retention.toSeconds();
    const threshold = Token.isUnresolved(retention) ? undefined : retention + margin.toSeconds();
    if (threshold !== undefined) {
      const silenceHours = maxSilenceHours(this.node.path, cleanup.schedule, props.cleanupMaxSilence);
      this.#alarm(scope, 'NotKeepingUp', {
        metric: cleanupMetric('OldestRowAgeSeconds', 'Maximum'),
        threshold,
        // Every run reports the age, so hours without a report mean the purge is not running (or dies before
        // reporting): that must page too, not look like "all fine". The window is longer than the schedule's
        // interval, so one late or skipped run does not.
        evaluationPeriods: silenceHours,
        datapointsToAlarm: silenceHours,
        treatMissingData: cloudwatch.TreatMissingData.BREACHING,
        description:
          `The oldest inbox row is older than the retention (${cleanup.retention.toHumanString()}) plus ` +
          `${margin.toHumanString()}, or the purge reported nothing for ${silenceHours} hours: it is not keeping up ` +
          '(see PurgeMoreRemaining; raise its batch size or frequency) or not running (see its Invocations and logs).',
      });
    }
    this.dashboard.addWidgets(
      new cloudwatch.TextWidget({ markdown: '## Inbox cleanup', width: 24, height: 1 }),
      new cloudwatch.GraphWidget({
        title: 'cleanup: purged rows',
        left: [cleanupMetric('PurgedRows', 'Sum')],
        right: [cleanupMetric('PurgeMoreRemaining', 'Maximum')],
        width: 12,
      }),
      new cloudwatch.GraphWidget({
        title: 'cleanup: oldest row age (s)',
        left: [cleanupMetric('OldestRowAgeSeconds', 'Maximum')],
        ...(threshold === undefined ? {} : { leftAnnotations: [{ value: threshold, label: 'alarm' }] }),
        width: 12,
      }),
    );
  }

  #watchOutboxRelay(relay: InboxOutboxRelay, props: InboxAlarmsProps): void {
    const scope = new Construct(this, 'OutboxRelay');
    const interval = rateSeconds(relay.schedule.expressionString);
    // One period holds at least one run, so a period without a report means the sweeper did not report.
    const period = Duration.seconds(interval === undefined ? HOUR_SECONDS : Math.max(5 * 60, Math.ceil(interval / 60) * 60));
    const relayMetric = (metricName: string, statistic: string) =>
      new cloudwatch.Metric({
        namespace: METRIC_NAMESPACE,
        metricName,
        dimensionsMap: { service: relay.serviceName },
        statistic,
        period,
      });
    const maxAge = outboxAgeThreshold(this.node.path, relay, interval, props.maxOutboxAge);
    this.#alarm(scope, 'OldestUnsentAge', {
      metric: relayMetric('OutboxOldestUnsentAgeSeconds', 'Maximum'),
      threshold: maxAge,
      // Every run reports the age (0 when nothing is left), so a period without a report means the sweeper is not
      // running or dies before it reports: messages a crash leaves unsent would wait forever, so that pages too.
      treatMissingData: cloudwatch.TreatMissingData.BREACHING,
      description:
        `An outbox message has waited more than ${describeSeconds(maxAge)} to be sent, or the outbox sweeper reported nothing ` +
        `for ${describeSeconds(period.toSeconds())}: sends keep failing (see last_error of the unsent rows in ` +
        "inbox.outbox_message, and the sweeper's logs) or the sweeper is not running (see its Invocations and Errors).",
    });
    const errorPeriods = 3;
    this.#alarm(scope, 'Errors', {
      metric: functionMetric(relay.function, 'Errors', 'Sum', Duration.minutes(5)),
      threshold: 0,
      // A failed run leaves its rows unsent for the next one, which is at most one interval away: one error is no
      // reason to page anyone, failing runs for 15 minutes are.
      evaluationPeriods: errorPeriods,
      datapointsToAlarm: errorPeriods,
      description: `The outbox sweeper failed in each of the last ${errorPeriods * 5} minutes: messages left unsent are not being sent.`,
    });
    this.dashboard.addWidgets(
      new cloudwatch.TextWidget({ markdown: '## Outbox relay', width: 24, height: 1 }),
      new cloudwatch.GraphWidget({
        title: 'outbox: swept messages',
        left: [relayMetric('OutboxSwept', 'Sum'), relayMetric('OutboxSweepDeferred', 'Sum')],
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'outbox: oldest unsent message age (s)',
        left: [relayMetric('OutboxOldestUnsentAgeSeconds', 'Maximum')],
        leftAnnotations: [{ value: maxAge, label: 'alarm' }],
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'outbox: sweeper',
        left: [functionMetric(relay.function, 'Invocations'), functionMetric(relay.function, 'Errors')],
        right: [functionMetric(relay.function, 'Duration', 'p99')],
        width: 8,
      }),
    );
  }

  #alarm(scope: Construct, id: string, options: AlarmOptions): void {
    this.alarms.push(this.#newAlarm(scope, id, options));
  }

  #newAlarm(scope: Construct, id: string, options: AlarmOptions): cloudwatch.Alarm {
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
}

interface AlarmOptions {
  readonly metric: cloudwatch.IMetric;
  readonly threshold: number;
  readonly description: string;
  readonly evaluationPeriods?: number | undefined;
  readonly datapointsToAlarm?: number | undefined;
  readonly treatMissingData?: cloudwatch.TreatMissingData | undefined;
}

function validateProps(path: string, props: InboxAlarmsProps): void {
  const problems: string[] = [];
  const check = (name: keyof InboxAlarmsProps, value: number | undefined, valid: (n: number) => boolean, rule: string, example: string) => {
    if (value === undefined || Token.isUnresolved(value) || valid(value)) return;
    problems.push(`\`${name}\` must be ${rule}, got ${value}. Fix: pass e.g. ${example}, or leave it unset for the default.`);
  };
  check('parkedThreshold', props.parkedThreshold, (n) => Number.isInteger(n) && n >= 0, 'a whole number >= 0', '0');
  check('maxOffsetLag', props.maxOffsetLag, (n) => Number.isInteger(n) && n >= 0, 'a whole number of records >= 0', '10000');
  check('failureRatePercent', props.failureRatePercent, (n) => n >= 0 && n < 100, 'a percentage from 0 to below 100', '10');
  check('failureRateMinRecords', props.failureRateMinRecords, (n) => Number.isInteger(n) && n >= 1, 'a whole number >= 1', '10');
  check('batchFallbackRatePercent', props.batchFallbackRatePercent, (n) => n >= 0 && n < 100, 'a percentage from 0 to below 100', '10');
  check('batchFallbackRateMinSets', props.batchFallbackRateMinSets, (n) => Number.isInteger(n) && n >= 1, 'a whole number >= 1', '10');
  check(
    'failureRatePeriods',
    props.failureRatePeriods,
    (n) => Number.isInteger(n) && n >= 1 && n <= 288,
    'a whole number of 5-minute periods from 1 to 288 (one day)',
    '3',
  );
  if (props.topic !== undefined && props.topicEncryptionKey !== undefined) {
    problems.push(
      '`topicEncryptionKey` only applies to a topic created here, but `topic` was given. Fix: encrypt your topic yourself and remove `topicEncryptionKey`.',
    );
  }
  if (problems.length > 0) throw InboxConstructError.of(`InboxAlarms ${path}`, problems);
}

function queueMetric(queue: sqs.IQueue, metricName: string, period: Duration, label?: string): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace: 'AWS/SQS',
    metricName,
    dimensionsMap: { QueueName: queue.queueName },
    statistic: 'Maximum',
    period,
    ...(label === undefined ? {} : { label }),
  });
}

function functionMetric(fn: lambda.IFunction, metricName: string, statistic = 'Sum', period = Duration.minutes(5)): cloudwatch.Metric {
  return fn.metric(metricName, { statistic, period });
}

const HOUR_SECONDS = 3600;
/** CloudWatch evaluates hourly periods over at most 7 days. */
const MAX_SILENCE_HOURS = 7 * 24;

/** Hourly periods the cleanup may stay silent: longer than its schedule's interval. */
function maxSilenceHours(path: string, schedule: events.Schedule, maxSilence: Duration | undefined): number {
  if (maxSilence !== undefined && !maxSilence.isUnresolved()) {
    const hours = maxSilence.toSeconds() / HOUR_SECONDS;
    const interval = rateSeconds(schedule.expressionString);
    const problems = [
      ...(Number.isInteger(hours) && hours >= 1 && hours <= MAX_SILENCE_HOURS
        ? []
        : [`must be whole hours from 1 to ${MAX_SILENCE_HOURS}, got ${maxSilence.toHumanString()}`]),
      ...(interval !== undefined && hours * HOUR_SECONDS <= interval
        ? [`must be longer than the cleanup schedule's interval (${schedule.expressionString}), or every gap between runs would page`]
        : []),
    ];
    if (problems.length > 0) {
      throw InboxConstructError.of(
        `InboxAlarms ${path}`,
        [`\`cleanupMaxSilence\` ${problems.join('; ')}. Fix: set it to whole hours longer than the schedule's interval.`],
        'line',
      );
    }
    return hours;
  }
  const interval = rateSeconds(schedule.expressionString);
  if (interval === undefined) return 25;
  const hours = Math.ceil(interval / HOUR_SECONDS) + 1;
  if (hours > MAX_SILENCE_HOURS) {
    throw InboxConstructError.of(
      `InboxAlarms ${path}`,
      [
        `the cleanup runs less often (${schedule.expressionString}) than CloudWatch can watch for ` +
          `silence (${MAX_SILENCE_HOURS} hours). Fix: run the cleanup at least every 6 days.`,
      ],
      'line',
    );
  }
  return hours;
}

/**
 * The oldest unsent age that pages, in seconds: it must exceed the longest a row normally waits (the relay's `minAge`
 * plus the schedule's interval), or every crash would page although the sweeper sends its rows.
 */
function outboxAgeThreshold(path: string, relay: InboxOutboxRelay, interval: number | undefined, maxAge: Duration | undefined): number {
  const wait = (durationSeconds(relay.minAge) ?? 0) + (interval ?? 0);
  const given = durationSeconds(maxAge);
  if (given === undefined) return Math.max(15 * 60, wait + 5 * 60);
  if (given <= wait) {
    throw InboxConstructError.of(
      `InboxAlarms ${path}`,
      [
        `\`maxOutboxAge\` (${describeSeconds(given)}) does not exceed the longest an outbox row normally waits ` +
          `for the sweeper: its \`minAge\` (${relay.minAge.toHumanString()}) plus its schedule's interval (${relay.schedule.expressionString}). ` +
          `Every crash would page although the sweeper sends its rows. Fix: set \`maxOutboxAge\` above ${describeSeconds(wait)}, or ` +
          'run the sweeper more often.',
      ],
      'line',
    );
  }
  return given;
}

function sanitize(name: string): string {
  return Token.isUnresolved(name) ? 'Consumer' : name.replace(/[^A-Za-z0-9]/g, '');
}
