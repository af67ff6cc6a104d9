import { Duration } from 'aws-cdk-lib';
import type { Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { expect } from 'vitest';
import { InboxAlarms, InboxCleanup, InboxConsumer, InboxDatabase, InboxOutboxRelay, InboxQueue, InboxSources } from '../../../lib/index.js';
import type { InboxAlarmsProps, InboxOutboxRelayProps } from '../../../lib/index.js';
import { FIXTURE_HANDLER, testStack } from '../support.js';
import type { StreamKind } from '../stream-support.js';
import { streamConsumer } from '../stream-support.js';

/** An alarm's CloudFormation resource. */
export type Alarm = { Properties: Record<string, any> };

/** The one alarm whose logical id contains `suffix` (fails the test unless there is exactly one). */
export function alarmIn(template: Template, suffix: string): Alarm {
  const found = Object.entries(template.findResources('AWS::CloudWatch::Alarm')).filter(([id]) => id.includes(suffix));
  expect(found, `one alarm matching ${suffix}`).toHaveLength(1);
  return found[0]![1] as Alarm;
}

/** An SQS consumer of an InboxQueue (with its dead-letter queue) and a cleanup keeping rows 20 days, watched by InboxAlarms. */
export function alarmsStack(props: Partial<InboxAlarmsProps> = {}) {
  const stack = testStack();
  const inboxQueue = new InboxQueue(stack, 'Orders');
  const database = new InboxDatabase(stack, 'Db');
  const consumer = new InboxConsumer(stack, 'Worker', {
    database,
    source: InboxSources.sqs(inboxQueue.queue),
    consumerName: 'order-worker',
    entry: FIXTURE_HANDLER,
  });
  const cleanup = new InboxCleanup(stack, 'Cleanup', { database, retention: Duration.days(20) });
  const alarms = new InboxAlarms(stack, 'Alarms', { consumers: [consumer], cleanup, ...props });
  const template = Template.fromStack(stack);
  return { stack, inboxQueue, consumer, cleanup, alarms, template, byId: (suffix: string) => alarmIn(template, suffix) };
}

/** A consumer sending to `invoices`, and the relay that sweeps what it leaves unsent. */
export function relayStack(props: Partial<InboxOutboxRelayProps> = {}) {
  const stack = testStack();
  const database = new InboxDatabase(stack, 'Db');
  const worker = new InboxConsumer(stack, 'Worker', {
    database,
    source: InboxSources.sqs(new InboxQueue(stack, 'Orders').queue),
    consumerName: 'worker',
    entry: FIXTURE_HANDLER,
    destinations: { invoices: new InboxQueue(stack, 'Invoices').queue },
  });
  const relay = new InboxOutboxRelay(stack, 'OutboxRelay', { database, consumers: [worker], ...props });
  return { stack, worker, relay };
}

/** A consumer of a stream of `kind`, watched by InboxAlarms with `props`; its alarms, by logical id. */
export function streamAlarms(kind: StreamKind, props: Partial<InboxAlarmsProps> = {}) {
  const { stack, consumer } = streamConsumer(kind);
  new InboxAlarms(stack, 'Alarms', { consumers: [consumer], ...props });
  const alarms = Template.fromStack(stack).findResources('AWS::CloudWatch::Alarm') as Record<string, Alarm>;
  return { stack, consumer, alarms: Object.entries(alarms).map(([id, alarm]) => ({ id, ...alarm.Properties })) };
}

/** A consumer metric has dimensions service and source (the runtime's EMF); the cleanup's, service alone. */
export const inboxMetric = (metricName: string, service: string, source: string | null = 'sqs') => ({
  Namespace: 'SqsInbox',
  MetricName: metricName,
  Dimensions: [{ Name: 'service', Value: service }, ...(source === null ? [] : [{ Name: 'source', Value: source }])],
});

/** The math expression of an alarm on a rate. */
export function expressionOf(alarm: Alarm): string {
  return alarm.Properties.Metrics.find((m: { Expression?: string }) => m.Expression !== undefined).Expression;
}

/** The metrics a rate alarm's expression reads, by id: [metric, period, statistic]. */
export function inputsOf(alarm: Alarm): Record<string, unknown> {
  return Object.fromEntries(
    alarm.Properties.Metrics.filter((m: { MetricStat?: unknown }) => m.MetricStat !== undefined).map((m: any) => [
      m.Id,
      [m.MetricStat.Metric, m.MetricStat.Period, m.MetricStat.Stat],
    ]),
  );
}

/** The logical id of a construct's CloudFormation resource, as a Ref. */
export const refOf = (stack: Stack, construct: { node: { defaultChild?: unknown } }) => ({ Ref: stack.getLogicalId(construct.node.defaultChild as never) });
