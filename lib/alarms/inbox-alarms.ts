import { Token } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { Duration } from 'aws-cdk-lib';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type * as sns from 'aws-cdk-lib/aws-sns';
import { Construct } from 'constructs';
import type { InboxConsumer } from '../consumer/inbox-consumer.js';
import { InboxDsqlDatabase } from '../dsql/inbox-dsql-database.js';
import type { InboxDsqlConsumer } from '../dsql/inbox-dsql-consumer.js';
import type { InboxOutboxRelay } from '../outbox/inbox-outbox-relay.js';
import type { InboxCleanup } from '../purge/inbox-cleanup.js';
import { CLEANUP_METRICS, CONSUMER_COUNT_METRICS, CONSUMER_LATENCY_METRICS, OUTBOX_RELAY_METRICS } from '../../lambda/inbox/contract.js';
import { InboxConstructError } from '../errors.js';
import type { WatchedConsumer } from './alarm.js';
import { createAlarmTopic } from './alarm-topic.js';
import { batchFallbackAlarm } from './batch-fallback-alarm.js';
import { cleanupAlarms } from './cleanup-alarms.js';
import { alarmStatusWidget, cleanupWidgets, consumerWidgets, outboxWidgets } from './dashboard.js';
import { deadLetterAlarm } from './dead-letter-alarm.js';
import { dsqlConflictAlarm } from './dsql-conflict-alarm.js';
import { duplicateRateAlarm, keyCollisionAlarm } from './duplicate-alarms.js';
import { errorsAlarm, failureRateAlarm } from './failure-alarms.js';
import { lagAlarm } from './lag-alarm.js';
import { ConsumerMetricFactory } from './metric-factory.js';
import { outboxAlarms } from './outbox-alarms.js';
import { parkedAlarm } from './parked-alarm.js';

/** The metrics each function emits, as the runtime writes them (lambda/inbox/contract.ts). */
export { CLEANUP_METRICS, CONSUMER_COUNT_METRICS, CONSUMER_LATENCY_METRICS, OUTBOX_RELAY_METRICS };

/** Props for {@link InboxAlarms}. */
export interface InboxAlarmsProps {
  /**
   * The consumers to watch: their queues or streams, dead-letter queues, functions and inbox metrics.
   * @default []
   */
  readonly consumers?: readonly (InboxConsumer | InboxDsqlConsumer)[] | undefined;
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
   * Alarm when more than this many records were parked in 5 minutes (`onPermanentError: 'park'`). A parked
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

/**
 * Alarms and a dashboard for inbox consumers and their cleanup.
 *
 * Per consumer: dead-letter queue (or a stream's on-failure queue) not empty, oldest message too old (a stream's
 * `IteratorAge`, a Kafka consumer group's `OffsetLag`), inbox key collisions above zero
 * (two different payloads under one key), a spike in the duplicate rate, function errors, parked records
 * (which never reach the dead-letter queue), a sustained rate of failed records (which Lambda's
 * `Errors` does not count), a sustained rate of batch sets that fell back to one record at a time, and on Aurora
 * DSQL the transactions that lost their optimistic-concurrency retries.
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
    const owner = `InboxAlarms ${this.node.path}`;
    validateProps(owner, props);
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
    if (props.cleanup !== undefined) {
      const watched = cleanupAlarms(new Construct(this, 'Cleanup'), owner, props.cleanup, {
        lagMargin: props.cleanupLagMargin,
        maxSilence: props.cleanupMaxSilence,
      });
      this.alarms.push(...watched.alarms);
      this.dashboard.addWidgets(...cleanupWidgets(props.cleanup, watched.threshold));
    }
    if (props.outboxRelay !== undefined) {
      const watched = outboxAlarms(new Construct(this, 'OutboxRelay'), owner, props.outboxRelay, props.maxOutboxAge);
      this.alarms.push(...watched.alarms);
      this.dashboard.addWidgets(...outboxWidgets(props.outboxRelay, watched.maxAge));
    }

    if (this.alarms.length > 0) this.dashboard.addWidgets(alarmStatusWidget(this.alarms));
    if (this.topic !== undefined) {
      const action = new actions.SnsAction(this.topic);
      for (const alarm of this.alarms) {
        alarm.addAlarmAction(action);
        alarm.addOkAction(action);
      }
    }
  }

  /** Watches one consumer: one alarm family after the other, then its row of the dashboard. */
  #watchConsumer(consumer: WatchedConsumer, props: InboxAlarmsProps): void {
    const scope = this.#consumerScope(consumer.consumerName);
    const metrics = new ConsumerMetricFactory(consumer);
    const rates = {
      duplicateRate: metrics.duplicateRate(props.duplicateRateMinRecords ?? 20),
      failureRate: metrics.failureRate(props.failureRateMinRecords ?? 10),
      fallbackRate: metrics.batchFallbackRate(props.batchFallbackRateMinSets ?? 10),
    };
    const alarms = [
      deadLetterAlarm(scope, consumer),
      lagAlarm(scope, consumer, metrics, { maxMessageAge: props.maxMessageAge, maxOffsetLag: props.maxOffsetLag }),
      keyCollisionAlarm(scope, consumer, metrics),
      duplicateRateAlarm(scope, consumer, rates.duplicateRate, props.duplicateRatePercent ?? 20),
      errorsAlarm(scope, consumer, metrics),
      parkedAlarm(scope, consumer, metrics, props.parkedThreshold ?? 0),
      failureRateAlarm(scope, consumer, rates.failureRate, { percent: props.failureRatePercent ?? 10, periods: props.failureRatePeriods ?? 3 }),
      batchFallbackAlarm(scope, consumer, rates.fallbackRate, props.batchFallbackRatePercent ?? 10),
      consumer.database instanceof InboxDsqlDatabase ? dsqlConflictAlarm(scope, consumer, metrics) : undefined,
    ];
    this.alarms.push(...alarms.filter((alarm) => alarm !== undefined));
    this.dashboard.addWidgets(...consumerWidgets(consumer, metrics, rates));
  }

  /** The consumer's own scope, named after it; a second consumer of the same name gets a numbered one. */
  #consumerScope(name: string): Construct {
    const base = `Consumer${sanitize(name)}`;
    let scopeId = base;
    for (let n = 2; this.node.tryFindChild(scopeId) !== undefined; n++) scopeId = `${base}${n}`;
    return new Construct(this, scopeId);
  }
}

/** Thresholds that cannot work, all at once. */
function validateProps(owner: string, props: InboxAlarmsProps): void {
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
  if (problems.length > 0) throw InboxConstructError.of(owner, problems);
}

function sanitize(name: string): string {
  return Token.isUnresolved(name) ? 'Consumer' : name.replace(/[^A-Za-z0-9]/g, '');
}
