import { Duration } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { InboxAlarms } from '../../../lib/index.js';
import { CLEANUP_METRICS, CONSUMER_COUNT_METRICS, CONSUMER_LATENCY_METRICS } from '../../../lib/alarms/inbox-alarms.js';
import { testStack } from '../support.js';
import { alarmsStack, relayStack } from './support.js';
import { streamConsumer } from '../stream-support.js';

/** The dashboard's widgets, as CloudWatch reads its body. */
function widgetsOf(template: Template): Array<{ type: string; properties: Record<string, any> }> {
  const dashboard = Object.values(template.findResources('AWS::CloudWatch::Dashboard'))[0] as { Properties: { DashboardBody: unknown } };
  const body = dashboard.Properties.DashboardBody as { 'Fn::Join': [string, unknown[]] } | string;
  // The body is a Fn::Join of JSON text and references; the references are left as placeholders.
  const text = typeof body === 'string' ? body : body['Fn::Join'][1].map((part) => (typeof part === 'string' ? part : 'REF')).join('');
  return JSON.parse(text).widgets;
}

describe('the dashboard', () => {
  it('puts every inbox metric on the dashboard', () => {
    const { template, cleanup } = alarmsStack();
    const dashboard = Object.values(template.findResources('AWS::CloudWatch::Dashboard'))[0] as { Properties: { DashboardBody: unknown } };
    const body = JSON.stringify(dashboard.Properties.DashboardBody);
    for (const name of [...CONSUMER_COUNT_METRICS, ...CONSUMER_LATENCY_METRICS]) {
      expect(body, name).toContain(`\\"SqsInbox\\",\\"${name}\\",\\"service\\",\\"order-worker\\"`);
    }
    for (const name of CLEANUP_METRICS) expect(body, name).toContain(`\\"SqsInbox\\",\\"${name}\\",\\"service\\",\\"${cleanup.serviceName}\\"`);
  });

  it('gives each consumer a row: its title, its outcomes, anomalies and latency, its queue or stream, its function', () => {
    const { template } = alarmsStack();
    const titles = widgetsOf(template).map((widget) => widget.properties.title ?? widget.properties.markdown);
    expect(titles).toEqual([
      '## Inbox consumer `order-worker`',
      'order-worker: outcomes',
      'order-worker: anomalies',
      'order-worker: latency (ms)',
      'order-worker: queue',
      'order-worker: function',
      '## Inbox cleanup',
      'cleanup: purged rows',
      'cleanup: oldest row age (s)',
      'Inbox alarms',
    ]);
    const { stack, consumer } = streamConsumer('dynamodb');
    new InboxAlarms(stack, 'Alarms', { consumers: [consumer] });
    expect(widgetsOf(Template.fromStack(stack)).map((widget) => widget.properties.title)).toContain('stream-worker: dynamodb');
  });

  it("marks the cleanup's alarm threshold on its oldest row age", () => {
    const { template } = alarmsStack({ cleanupLagMargin: Duration.hours(1) });
    const oldest = widgetsOf(template).find((widget) => widget.properties.title === 'cleanup: oldest row age (s)')!;
    expect(oldest.properties.annotations).toEqual({ horizontal: [{ value: 20 * 86400 + 3600, label: 'alarm', yAxis: 'left' }] });
  });

  it('puts the sweep on the dashboard, with the alarm threshold', () => {
    const { stack, worker, relay } = relayStack();
    new InboxAlarms(stack, 'Alarms', { consumers: [worker], outboxRelay: relay, maxOutboxAge: Duration.minutes(20) });
    const widgets = widgetsOf(Template.fromStack(stack));
    const body = JSON.stringify(widgets);
    for (const text of ['## Outbox relay', 'OutboxSwept', 'OutboxSweepDeferred', 'outbox: sweeper']) expect(body).toContain(text);
    const oldest = widgets.find((widget) => widget.properties.title === 'outbox: oldest unsent message age (s)')!;
    expect(oldest.properties.annotations).toEqual({ horizontal: [{ value: 1200, label: 'alarm', yAxis: 'left' }] });
  });

  it('lists every alarm at the foot of the dashboard, and has no such widget without alarms', () => {
    const { template, alarms } = alarmsStack();
    const status = widgetsOf(template).at(-1)!;
    expect(status.type).toBe('alarm');
    expect(status.properties.alarms).toHaveLength(alarms.alarms.length);
    const empty = testStack();
    new InboxAlarms(empty, 'Alarms');
    expect(widgetsOf(Template.fromStack(empty))).toEqual([]);
  });
});
