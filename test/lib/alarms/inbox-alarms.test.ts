import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Duration } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { describe, expect, it } from 'vitest';
import { InboxAlarms, InboxConsumer, InboxDatabase, InboxSources } from '../../../lib/index.js';
import { CLEANUP_METRICS, CONSUMER_COUNT_METRICS, CONSUMER_LATENCY_METRICS } from '../../../lib/alarms/inbox-alarms.js';
import { publishSummary } from '../../../lambda/inbox/telemetry/telemetry.js';
import { FIXTURE_HANDLER, testStack } from '../support.js';
import { alarmsStack, refOf } from './support.js';

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
    [],
  );
  return names;
}

/** The metric names the cleanup runtime publishes: its handler needs a database, so read them from its source. */
function cleanupRuntimeMetrics(): Set<string> {
  const source = readFileSync(fileURLToPath(new URL('../../../lambda/functions/purge/cleanup.ts', import.meta.url)), 'utf8');
  return new Set([...source.matchAll(/addMetric\(\s*'([A-Za-z]+)'/g)].map((match) => match[1]!));
}

/** Every (service, metric name) of namespace SqsInbox the template uses, in alarms and on the dashboard. */
function inboxMetricsUsed(template: Template): Array<{ service: string; name: string }> {
  const used: Array<{ service: string; name: string }> = [];
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) {
      for (const item of value) walk(item);
      return;
    }
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

describe('InboxAlarms', () => {
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

  it('has no alarm actions without a topic', () => {
    const { template } = alarmsStack();
    template.allResourcesProperties('AWS::CloudWatch::Alarm', { AlarmActions: Match.absent() });
    template.resourceCountIs('AWS::SNS::Topic', 0);
  });

  it('creates a topic on request, with its key, and sends every alarm and recovery to it', () => {
    const { template, alarms, stack } = alarmsStack({ createTopic: true });
    template.resourceCountIs('AWS::SNS::Topic', 1);
    template.hasResourceProperties('AWS::SNS::Topic', {
      KmsMasterKeyId: { 'Fn::GetAtt': [stack.getLogicalId(alarms.topicKey!.node.defaultChild as never), 'Arn'] },
    });
    expect(alarms.alarms).toHaveLength(10);
    template.allResourcesProperties('AWS::CloudWatch::Alarm', { AlarmActions: [refOf(stack, alarms.topic!)], OKActions: [refOf(stack, alarms.topic!)] });
  });

  it('refuses a key for a topic it does not create', () => {
    const stack = testStack();
    const topic = sns.Topic.fromTopicArn(stack, 'Pager', 'arn:aws:sns:eu-west-1:123456789012:pager');
    expect(() => new InboxAlarms(stack, 'Alarms', { topic, topicEncryptionKey: new kms.Key(stack, 'Key') })).toThrow(
      'InboxAlarms Test/Alarms:\n  - `topicEncryptionKey` only applies to a topic created here, but `topic` was given. Fix: encrypt your topic yourself and remove `topicEncryptionKey`.',
    );
  });

  it("creates a consumer's alarms family by family, in its own scope; a second consumer of the same name gets its own", () => {
    // Arrange: two consumers named alike on two databases.
    const stack = testStack();
    const consumer = (id: string, database: InboxDatabase) =>
      new InboxConsumer(stack, id, {
        database,
        source: InboxSources.sqs(new sqs.Queue(stack, `${id}Queue`, { visibilityTimeout: Duration.minutes(3) })),
        consumerName: 'orders.eu',
        entry: FIXTURE_HANDLER,
      });
    const first = consumer('First', new InboxDatabase(stack, 'One'));
    const second = consumer('Second', new InboxDatabase(stack, 'Two'));

    // Act
    const alarms = new InboxAlarms(stack, 'Alarms', { consumers: [first, second] });

    // Assess: no dead-letter queue on these queues; then lag, duplicates, failures, parked, fallbacks, in that order.
    const family = ['OldestMessageAge', 'KeyCollisions', 'DuplicateRate', 'Errors', 'Parked', 'FailureRate', 'BatchFallbackRate'];
    expect(alarms.alarms.map((alarm) => alarm.node.path)).toEqual([
      ...family.map((id) => `Test/Alarms/Consumerorderseu/${id}`),
      ...family.map((id) => `Test/Alarms/Consumerorderseu2/${id}`),
    ]);
  });

  it('sends to a topic passed in', () => {
    const stack = testStack();
    const topic = sns.Topic.fromTopicArn(stack, 'Pager', 'arn:aws:sns:eu-west-1:123456789012:pager');
    const queue = new sqs.Queue(stack, 'Q', { visibilityTimeout: Duration.minutes(3) });
    const consumer = new InboxConsumer(stack, 'W', {
      database: new InboxDatabase(stack, 'Db'),
      source: InboxSources.sqs(queue),
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
