import { Duration } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { describe, expect, it } from 'vitest';
import {
  CLEANUP_METRICS,
  CONSUMER_COUNT_METRICS,
  CONSUMER_LATENCY_METRICS,
  InboxAlarms,
  InboxCleanup,
  InboxConsumer,
  InboxDatabase,
  InboxQueue,
} from '../../lib/index.js';
import type { InboxAlarmsProps } from '../../lib/index.js';
import { FIXTURE_HANDLER, logicalId, testStack } from './support.js';

type Alarm = { Properties: Record<string, any> };

function alarmsStack(props: Partial<InboxAlarmsProps> = {}) {
  const stack = testStack();
  const inboxQueue = new InboxQueue(stack, 'Orders');
  const database = new InboxDatabase(stack, 'Db');
  const consumer = new InboxConsumer(stack, 'Worker', {
    database, queue: inboxQueue.queue, consumerName: 'order-worker', entry: FIXTURE_HANDLER,
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

const inboxMetric = (metricName: string, service: string) => ({
  Namespace: 'SqsInbox',
  MetricName: metricName,
  Dimensions: [{ Name: 'service', Value: service }],
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
    const inputs = Object.fromEntries(
      Metrics.filter((m: { MetricStat?: unknown }) => m.MetricStat !== undefined).map((m: any) => [m.Id, m.MetricStat.Metric]),
    );
    expect(inputs).toEqual({ dup: inboxMetric('Duplicates', 'order-worker'), proc: inboxMetric('Processed', 'order-worker') });
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
    const { byId } = alarmsStack({ cleanupLagMargin: Duration.hours(2) });
    expect(byId('NotKeepingUp').Properties).toMatchObject({
      ...inboxMetric('OldestRowAgeSeconds', 'inbox-cleanup'),
      Statistic: 'Maximum',
      Threshold: 20 * 86400 + 2 * 3600,
      ComparisonOperator: 'GreaterThanThreshold',
    });
  });

  it('uses only metrics the runtime emits', () => {
    const { template } = alarmsStack();
    const emitted = new Set<string>([...CONSUMER_COUNT_METRICS, ...CONSUMER_LATENCY_METRICS, ...CLEANUP_METRICS]);
    const used: string[] = [];
    const walk = (value: unknown): void => {
      if (Array.isArray(value)) return value.forEach(walk);
      if (value === null || typeof value !== 'object') return;
      const record = value as Record<string, unknown>;
      if (record.Namespace === 'SqsInbox') used.push(String(record.MetricName));
      Object.values(record).forEach(walk);
    };
    walk(template.toJSON().Resources);
    const dashboard = JSON.stringify(template.findResources('AWS::CloudWatch::Dashboard'));
    for (const match of dashboard.matchAll(/\\"SqsInbox\\",\\"([A-Za-z]+)\\"/g)) used.push(match[1]!);
    expect(new Set(used).size).toBe(emitted.size);
    for (const name of used) expect(emitted, name).toContain(name);
  });

  it('puts every inbox metric on the dashboard', () => {
    const { template } = alarmsStack();
    const dashboard = Object.values(template.findResources('AWS::CloudWatch::Dashboard'))[0] as Alarm;
    const body = JSON.stringify(dashboard.Properties.DashboardBody);
    for (const name of [...CONSUMER_COUNT_METRICS, ...CONSUMER_LATENCY_METRICS]) {
      expect(body, name).toContain(`\\"SqsInbox\\",\\"${name}\\",\\"service\\",\\"order-worker\\"`);
    }
    for (const name of CLEANUP_METRICS) expect(body, name).toContain(`\\"SqsInbox\\",\\"${name}\\",\\"service\\",\\"inbox-cleanup\\"`);
  });

  it('has no alarm actions without a topic', () => {
    const { template } = alarmsStack();
    template.allResourcesProperties('AWS::CloudWatch::Alarm', { AlarmActions: Match.absent() });
    template.resourceCountIs('AWS::SNS::Topic', 0);
  });

  it('creates a TLS-only topic on request and sends every alarm and recovery to it', () => {
    const { template, alarms, stack } = alarmsStack({ createTopic: true });
    const topicRef = { Ref: stack.getLogicalId(alarms.topic!.node.defaultChild as never) };
    template.resourceCountIs('AWS::SNS::Topic', 1);
    template.hasResourceProperties('AWS::SNS::TopicPolicy', {
      PolicyDocument: { Statement: Match.arrayWith([Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]) },
    });
    expect(alarms.alarms).toHaveLength(7);
    template.allResourcesProperties('AWS::CloudWatch::Alarm', { AlarmActions: [topicRef], OKActions: [topicRef] });
  });

  it('sends to a topic passed in', () => {
    const stack = testStack();
    const topic = sns.Topic.fromTopicArn(stack, 'Pager', 'arn:aws:sns:eu-west-1:123456789012:pager');
    const queue = new sqs.Queue(stack, 'Q', { visibilityTimeout: Duration.minutes(3) });
    const consumer = new InboxConsumer(stack, 'W', {
      database: new InboxDatabase(stack, 'Db'), queue, consumerName: 'w', entry: FIXTURE_HANDLER,
    });
    new InboxAlarms(stack, 'Alarms', { consumers: [consumer], topic });
    const template = Template.fromStack(stack);
    template.allResourcesProperties('AWS::CloudWatch::Alarm', { AlarmActions: ['arn:aws:sns:eu-west-1:123456789012:pager'] });
    // No dead-letter queue on this queue: no alarm for it.
    expect(Object.keys(template.findResources('AWS::CloudWatch::Alarm')).some((id) => id.includes('DeadLetter'))).toBe(false);
  });
});
