import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Duration } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as events from 'aws-cdk-lib/aws-events';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { describe, expect, it } from 'vitest';
import { InboxAlarms, InboxCleanup, InboxConsumer, InboxDatabase, InboxQueue } from '../../lib/index.js';
import { CLEANUP_METRICS, CONSUMER_COUNT_METRICS, CONSUMER_LATENCY_METRICS } from '../../lib/alarms/inbox-alarms.js';
import type { InboxAlarmsProps } from '../../lib/index.js';
import { publishSummary } from '../../lambda/inbox/telemetry/telemetry.js';
import { FIXTURE_HANDLER, logicalId, testStack } from './support.js';

/** The metric names the consumer runtime publishes, recorded from the real publishSummary(). */
function consumerRuntimeMetrics(): Set<string> {
  const names = new Set<string>();
  const recording = {
    addMetric: (name: string) => void names.add(name),
    publishStoredMetrics: () => undefined,
  };
  publishSummary(
    recording,
    {
      records: 1,
      processed: 1,
      duplicates: 0,
      collisions: 0,
      parked: 0,
      failures: 0,
      shortCircuited: 0,
      deferredByDeadline: 0,
      resumeRetries: 0,
      batchSets: 0,
      batchFallbacks: 0,
      outboxSent: 0,
      outboxDeferred: 0,
      recordLatenciesMs: [5],
      batchLatencyMs: 7,
      failedMessageIds: [],
    },
    'sqs',
  );
  return names;
}

/** The metric names the cleanup runtime publishes: its handler needs a database, so read them from its source. */
function cleanupRuntimeMetrics(): Set<string> {
  const source = readFileSync(fileURLToPath(new URL('../../lambda/functions/purge/cleanup.ts', import.meta.url)), 'utf8');
  return new Set([...source.matchAll(/addMetric\(\s*'([A-Za-z]+)'/g)].map((match) => match[1]!));
}

/** Every (service, metric name) of namespace SqsInbox the template uses, in alarms and on the dashboard. */
function inboxMetricsUsed(template: Template): Array<{ service: string; name: string }> {
  const used: Array<{ service: string; name: string }> = [];
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(walk);
    if (value === null || typeof value !== 'object') return;
    const record = value as Record<string, any>;
    if (record.Namespace === 'SqsInbox') {
      used.push({ service: record.Dimensions.find((d: { Name: string }) => d.Name === 'service').Value, name: String(record.MetricName) });
    }
    Object.values(record).forEach(walk);
  };
  walk(template.findResources('AWS::CloudWatch::Alarm'));
  const dashboard = JSON.stringify(template.findResources('AWS::CloudWatch::Dashboard'));
  for (const match of dashboard.matchAll(/\\"SqsInbox\\",\\"([A-Za-z]+)\\",\\"service\\",\\"([^\\]+)\\"/g)) {
    used.push({ service: match[2]!, name: match[1]! });
  }
  return used;
}

type Alarm = { Properties: Record<string, any> };

function alarmsStack(props: Partial<InboxAlarmsProps> = {}) {
  const stack = testStack();
  const inboxQueue = new InboxQueue(stack, 'Orders');
  const database = new InboxDatabase(stack, 'Db');
  const consumer = new InboxConsumer(stack, 'Worker', {
    database,
    queue: inboxQueue.queue,
    consumerName: 'order-worker',
    entry: FIXTURE_HANDLER,
  });
  const cleanup = new InboxCleanup(stack, 'Cleanup', { database, retention: Duration.days(20) });
  const alarms = new InboxAlarms(stack, 'Alarms', { consumers: [consumer], cleanup, ...props });
  const template = Template.fromStack(stack);
  const byId = (suffix: string) => {
    const found = Object.entries(template.findResources('AWS::CloudWatch::Alarm')).filter(([id]) => id.includes(suffix));
    expect(found, `one alarm matching ${suffix}`).toHaveLength(1);
    return found[0]![1] as Alarm;
  };
  return { stack, inboxQueue, consumer, cleanup, alarms, template, byId };
}

/** A consumer metric has dimensions service and source (the runtime's EMF); the cleanup's, service alone. */
const inboxMetric = (metricName: string, service: string, source: string | null = 'sqs') => ({
  Namespace: 'SqsInbox',
  MetricName: metricName,
  Dimensions: [{ Name: 'service', Value: service }, ...(source === null ? [] : [{ Name: 'source', Value: source }])],
});

describe('InboxAlarms', () => {
  it('alarms when a message reaches the dead-letter queue', () => {
    const { byId, stack, inboxQueue } = alarmsStack();
    expect(byId('DeadLetterQueueNotEmpty').Properties).toMatchObject({
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [stack.getLogicalId(inboxQueue.deadLetterQueue!.node.defaultChild as never), 'QueueName'] } }],
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
    });
  });

  it('alarms when the oldest message waits longer than maxMessageAge', () => {
    const { byId, stack, inboxQueue } = alarmsStack({ maxMessageAge: Duration.minutes(30) });
    expect(byId('OldestMessageAge').Properties).toMatchObject({
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateAgeOfOldestMessage',
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [stack.getLogicalId(inboxQueue.queue.node.defaultChild as never), 'QueueName'] } }],
      Threshold: 1800,
      Statistic: 'Maximum',
    });
  });

  it('alarms on any key collision', () => {
    const { byId } = alarmsStack();
    expect(byId('KeyCollisions').Properties).toMatchObject({
      ...inboxMetric('KeyCollisions', 'order-worker'),
      Statistic: 'Sum',
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
    });
  });

  it('alarms on a spike in the duplicate rate, judged only above a minimum volume', () => {
    const { byId } = alarmsStack({ duplicateRatePercent: 35, duplicateRateMinRecords: 50 });
    const { Metrics, Threshold } = byId('DuplicateRate').Properties;
    expect(Threshold).toBe(35);
    const expression = Metrics.find((m: { Expression?: string }) => m.Expression !== undefined);
    expect(expression.Expression).toBe('IF((FILL(dup, 0) + FILL(proc, 0)) >= 50, 100 * FILL(dup, 0) / (FILL(dup, 0) + FILL(proc, 0)), 0)');
    const inputs = Object.fromEntries(Metrics.filter((m: { MetricStat?: unknown }) => m.MetricStat !== undefined).map((m: any) => [m.Id, m.MetricStat.Metric]));
    expect(inputs).toEqual({ dup: inboxMetric('Duplicates', 'order-worker'), proc: inboxMetric('Processed', 'order-worker') });
  });

  it('alarms on every parked record by default: a parked record never reaches the dead-letter queue', () => {
    const { byId } = alarmsStack();
    expect(byId('ConsumerorderworkerParked').Properties).toMatchObject({
      ...inboxMetric('Parked', 'order-worker'),
      Statistic: 'Sum',
      Period: 300,
      Threshold: 0,
      EvaluationPeriods: 1,
      ComparisonOperator: 'GreaterThanThreshold',
      TreatMissingData: 'notBreaching',
    });
    expect(alarmsStack({ parkedThreshold: 4 }).byId('ConsumerorderworkerParked').Properties.Threshold).toBe(4);
  });

  it('alarms on a failure rate sustained over several periods, judged only above a minimum volume', () => {
    // Arrange + Act: defaults, then every threshold as a prop.
    const defaults = alarmsStack().byId('ConsumerorderworkerFailureRate').Properties;
    const tuned = alarmsStack({ failureRatePercent: 25, failureRateMinRecords: 40, failureRatePeriods: 6 }).byId('ConsumerorderworkerFailureRate').Properties;

    // Assess
    const ran = '(FILL(fail, 0) + FILL(proc, 0) + FILL(dup, 0) + FILL(park, 0))';
    expect(defaults).toMatchObject({ Threshold: 10, EvaluationPeriods: 3, DatapointsToAlarm: 3, ComparisonOperator: 'GreaterThanThreshold' });
    expect(defaults.Metrics.find((m: { Expression?: string }) => m.Expression !== undefined).Expression).toBe(
      `IF(${ran} >= 10, 100 * FILL(fail, 0) / ${ran}, 0)`,
    );
    expect(tuned).toMatchObject({ Threshold: 25, EvaluationPeriods: 6, DatapointsToAlarm: 6 });
    expect(tuned.Metrics.find((m: { Expression?: string }) => m.Expression !== undefined).Expression).toBe(`IF(${ran} >= 40, 100 * FILL(fail, 0) / ${ran}, 0)`);
    const inputs = Object.fromEntries(
      tuned.Metrics.filter((m: { MetricStat?: unknown }) => m.MetricStat !== undefined).map((m: any) => [
        m.Id,
        [m.MetricStat.Metric, m.MetricStat.Period, m.MetricStat.Stat],
      ]),
    );
    expect(inputs).toEqual({
      fail: [inboxMetric('Failures', 'order-worker'), 300, 'Sum'],
      proc: [inboxMetric('Processed', 'order-worker'), 300, 'Sum'],
      dup: [inboxMetric('Duplicates', 'order-worker'), 300, 'Sum'],
      park: [inboxMetric('Parked', 'order-worker'), 300, 'Sum'],
    });
  });

  it('alarms on a sustained rate of batch sets that fell back to one record at a time, judged only above a minimum of sets', () => {
    // Arrange + Act: defaults, then both thresholds as props.
    const defaults = alarmsStack().byId('ConsumerorderworkerBatchFallbackRate').Properties;
    const tuned = alarmsStack({ batchFallbackRatePercent: 30, batchFallbackRateMinSets: 50 }).byId('ConsumerorderworkerBatchFallbackRate').Properties;

    // Assess
    const expression = (props: Record<string, any>) => props.Metrics.find((m: { Expression?: string }) => m.Expression !== undefined).Expression;
    expect(defaults).toMatchObject({
      Threshold: 10,
      EvaluationPeriods: 3,
      DatapointsToAlarm: 3,
      ComparisonOperator: 'GreaterThanThreshold',
      TreatMissingData: 'notBreaching',
    });
    expect(expression(defaults)).toBe('IF(FILL(sets, 0) >= 10, 100 * FILL(fallbacks, 0) / FILL(sets, 0), 0)');
    expect(tuned).toMatchObject({ Threshold: 30 });
    expect(expression(tuned)).toBe('IF(FILL(sets, 0) >= 50, 100 * FILL(fallbacks, 0) / FILL(sets, 0), 0)');
    const inputs = Object.fromEntries(
      tuned.Metrics.filter((m: { MetricStat?: unknown }) => m.MetricStat !== undefined).map((m: any) => [
        m.Id,
        [m.MetricStat.Metric, m.MetricStat.Period, m.MetricStat.Stat],
      ]),
    );
    expect(inputs).toEqual({
      sets: [inboxMetric('BatchSets', 'order-worker'), 300, 'Sum'],
      fallbacks: [inboxMetric('BatchFallbacks', 'order-worker'), 300, 'Sum'],
    });
    expect(defaults.AlarmDescription).toContain('fell back to running each record alone');
  });

  it('refuses alarm thresholds that cannot work, naming each prop and the fix, all at once', () => {
    const stack = testStack();
    const topic = sns.Topic.fromTopicArn(stack, 'Pager', 'arn:aws:sns:eu-west-1:123456789012:pager');
    let message = '';
    try {
      new InboxAlarms(stack, 'Alarms', {
        parkedThreshold: -1,
        failureRatePercent: 100,
        failureRateMinRecords: 0,
        failureRatePeriods: 1.5,
        batchFallbackRatePercent: -5,
        batchFallbackRateMinSets: 2.5,
        topic,
        topicEncryptionKey: new kms.Key(stack, 'Key'),
      });
    } catch (error) {
      message = (error as Error).message;
    }
    for (const expected of [
      '`parkedThreshold` must be a whole number >= 0, got -1. Fix:',
      '`failureRatePercent` must be a percentage from 0 to below 100, got 100. Fix:',
      '`failureRateMinRecords` must be a whole number >= 1, got 0. Fix:',
      '`failureRatePeriods` must be a whole number of 5-minute periods from 1 to 288 (one day), got 1.5. Fix:',
      '`batchFallbackRatePercent` must be a percentage from 0 to below 100, got -5. Fix:',
      '`batchFallbackRateMinSets` must be a whole number >= 1, got 2.5. Fix:',
      '`topicEncryptionKey` only applies to a topic created here, but `topic` was given. Fix:',
    ]) {
      expect(message).toContain(expected);
    }
  });

  it('alarms on consumer and cleanup function errors', () => {
    const { byId, stack, consumer, cleanup } = alarmsStack();
    expect(byId('ConsumerorderworkerErrors').Properties).toMatchObject({
      Namespace: 'AWS/Lambda',
      MetricName: 'Errors',
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: logicalId(stack, consumer.function) } }],
      Threshold: 0,
    });
    expect(byId('CleanupErrors').Properties).toMatchObject({
      Namespace: 'AWS/Lambda',
      MetricName: 'Errors',
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: logicalId(stack, cleanup.function) } }],
      Period: 3600,
    });
  });

  it('alarms when the oldest inbox row outlives the retention plus the margin', () => {
    const { byId, cleanup } = alarmsStack({ cleanupLagMargin: Duration.hours(2) });
    expect(byId('NotKeepingUp').Properties).toMatchObject({
      ...inboxMetric('OldestRowAgeSeconds', cleanup.serviceName, null),
      Statistic: 'Maximum',
      Threshold: 20 * 86400 + 2 * 3600,
      ComparisonOperator: 'GreaterThanThreshold',
    });
  });

  it('alarms when the cleanup reports nothing for longer than its schedule interval, not just when it lags', () => {
    // Hourly by default: two silent hours page, one late run does not.
    const { byId } = alarmsStack();
    expect(byId('NotKeepingUp').Properties).toMatchObject({
      TreatMissingData: 'breaching',
      Period: 3600,
      EvaluationPeriods: 2,
      DatapointsToAlarm: 2,
    });
    // The consumer alarms stay quiet without traffic.
    expect(byId('KeyCollisions').Properties.TreatMissingData).toBe('notBreaching');
  });

  it('sizes the silence window to the cleanup schedule, or to cleanupMaxSilence', () => {
    const silence = (schedule: events.Schedule, cleanupMaxSilence?: Duration) => {
      const stack = testStack();
      const database = new InboxDatabase(stack, 'Db');
      const cleanup = new InboxCleanup(stack, 'Cleanup', { database, schedule });
      new InboxAlarms(stack, 'Alarms', { cleanup, ...(cleanupMaxSilence === undefined ? {} : { cleanupMaxSilence }) });
      const alarm = Object.entries(Template.fromStack(stack).findResources('AWS::CloudWatch::Alarm')).find(([id]) => id.includes('NotKeepingUp'))!;
      return [alarm[1].Properties.EvaluationPeriods, alarm[1].Properties.DatapointsToAlarm, alarm[1].Properties.TreatMissingData];
    };
    expect(silence(events.Schedule.rate(Duration.hours(6)))).toEqual([7, 7, 'breaching']);
    expect(silence(events.Schedule.cron({ minute: '15', hour: '3' }))).toEqual([25, 25, 'breaching']);
    expect(silence(events.Schedule.cron({ minute: '15', hour: '3' }), Duration.hours(30))).toEqual([30, 30, 'breaching']);
    expect(() => silence(events.Schedule.rate(Duration.hours(6)), Duration.hours(6))).toThrow(
      /`cleanupMaxSilence` must be longer than the cleanup schedule's interval \(rate\(6 hours\)\).*Fix: /,
    );
  });

  it('watches each cleanup on its own metric, so two cleanups never share one', () => {
    const stack = testStack();
    const first = new InboxCleanup(stack, 'OrdersCleanup', { database: new InboxDatabase(stack, 'Orders'), retention: Duration.days(20) });
    const second = new InboxCleanup(stack, 'PaymentsCleanup', { database: new InboxDatabase(stack, 'Payments'), retention: Duration.days(40) });
    new InboxAlarms(stack, 'OrdersAlarms', { cleanup: first });
    new InboxAlarms(stack, 'PaymentsAlarms', { cleanup: second });
    const template = Template.fromStack(stack);

    expect(first.serviceName).not.toBe(second.serviceName);
    const notKeepingUp = Object.entries(template.findResources('AWS::CloudWatch::Alarm'))
      .filter(([id]) => id.includes('NotKeepingUp'))
      .map(([id, alarm]) => [id.replace(/CleanupNotKeepingUp.*/, ''), alarm.Properties.Dimensions, alarm.Properties.Threshold]);
    expect(notKeepingUp).toEqual([
      ['OrdersAlarms', [{ Name: 'service', Value: first.serviceName }], 20 * 86400 + 6 * 3600],
      ['PaymentsAlarms', [{ Name: 'service', Value: second.serviceName }], 40 * 86400 + 6 * 3600],
    ]);
  });

  it('uses only metrics the runtime emits, and watches every one of them', () => {
    // Arrange: what the runtime really publishes.
    const consumerEmits = consumerRuntimeMetrics();
    const cleanupEmits = cleanupRuntimeMetrics();
    expect(consumerEmits.size).toBeGreaterThan(5);
    expect(cleanupEmits.size).toBeGreaterThan(1);

    // Act
    const { template, cleanup } = alarmsStack();
    const used = inboxMetricsUsed(template);

    // Assess
    const names = (service: string) => new Set(used.filter((u) => u.service === service).map((u) => u.name));
    expect(new Set(used.map((u) => u.service))).toEqual(new Set(['order-worker', cleanup.serviceName]));
    expect(names('order-worker')).toEqual(consumerEmits);
    expect(names(cleanup.serviceName)).toEqual(cleanupEmits);
    expect(new Set([...CONSUMER_COUNT_METRICS, ...CONSUMER_LATENCY_METRICS])).toEqual(consumerEmits);
    expect(new Set(CLEANUP_METRICS)).toEqual(cleanupEmits);
  });

  it('puts every inbox metric on the dashboard', () => {
    const { template, cleanup } = alarmsStack();
    const dashboard = Object.values(template.findResources('AWS::CloudWatch::Dashboard'))[0] as Alarm;
    const body = JSON.stringify(dashboard.Properties.DashboardBody);
    for (const name of [...CONSUMER_COUNT_METRICS, ...CONSUMER_LATENCY_METRICS]) {
      expect(body, name).toContain(`\\"SqsInbox\\",\\"${name}\\",\\"service\\",\\"order-worker\\"`);
    }
    for (const name of CLEANUP_METRICS) expect(body, name).toContain(`\\"SqsInbox\\",\\"${name}\\",\\"service\\",\\"${cleanup.serviceName}\\"`);
  });

  it('has no alarm actions without a topic', () => {
    const { template } = alarmsStack();
    template.allResourcesProperties('AWS::CloudWatch::Alarm', { AlarmActions: Match.absent() });
    template.resourceCountIs('AWS::SNS::Topic', 0);
  });

  it('creates a KMS-encrypted, TLS-only topic on request and sends every alarm and recovery to it', () => {
    const { template, alarms, stack } = alarmsStack({ createTopic: true });
    const topicRef = { Ref: stack.getLogicalId(alarms.topic!.node.defaultChild as never) };
    const keyId = stack.getLogicalId(alarms.topicKey!.node.defaultChild as never);
    template.resourceCountIs('AWS::SNS::Topic', 1);
    template.hasResourceProperties('AWS::SNS::Topic', { KmsMasterKeyId: { 'Fn::GetAtt': [keyId, 'Arn'] } });
    template.hasResourceProperties('AWS::KMS::Key', { EnableKeyRotation: true });
    template.hasResourceProperties('AWS::SNS::TopicPolicy', {
      PolicyDocument: { Statement: Match.arrayWith([Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]) },
    });
    // CloudWatch encrypts what it publishes with the topic's key: without this grant no alarm would arrive.
    const key = template.toJSON().Resources[keyId].Properties.KeyPolicy.Statement as Array<Record<string, unknown>>;
    expect(key).toContainEqual(
      expect.objectContaining({
        Principal: { Service: 'cloudwatch.amazonaws.com' },
        Action: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        Condition: { StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } } },
      }),
    );
    expect(alarms.alarms).toHaveLength(10);
    template.allResourcesProperties('AWS::CloudWatch::Alarm', { AlarmActions: [topicRef], OKActions: [topicRef] });
  });

  it('sends to a topic passed in', () => {
    const stack = testStack();
    const topic = sns.Topic.fromTopicArn(stack, 'Pager', 'arn:aws:sns:eu-west-1:123456789012:pager');
    const queue = new sqs.Queue(stack, 'Q', { visibilityTimeout: Duration.minutes(3) });
    const consumer = new InboxConsumer(stack, 'W', {
      database: new InboxDatabase(stack, 'Db'),
      queue,
      consumerName: 'w',
      entry: FIXTURE_HANDLER,
    });
    new InboxAlarms(stack, 'Alarms', { consumers: [consumer], topic });
    const template = Template.fromStack(stack);
    template.allResourcesProperties('AWS::CloudWatch::Alarm', { AlarmActions: ['arn:aws:sns:eu-west-1:123456789012:pager'] });
    // No dead-letter queue on this queue: no alarm for it.
    expect(Object.keys(template.findResources('AWS::CloudWatch::Alarm')).some((id) => id.includes('DeadLetter'))).toBe(false);
  });
});
