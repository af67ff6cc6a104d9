import { Duration } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as events from 'aws-cdk-lib/aws-events';
import { describe, expect, it } from 'vitest';
import { InboxAlarms, InboxCleanup, InboxDatabase } from '../../../lib/index.js';
import { logicalId, testStack } from '../support.js';
import { alarmsStack, inboxMetric } from './support.js';

describe('the cleanup alarms', () => {
  it("alarms on the cleanup function's errors, hourly", () => {
    const { byId, stack, cleanup } = alarmsStack();
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
      /^InboxAlarms Test\/Alarms: `cleanupMaxSilence` must be longer than the cleanup schedule's interval \(rate\(6 hours\)\).*Fix: /,
    );
    expect(() => silence(events.Schedule.rate(Duration.hours(6)), Duration.minutes(90))).toThrow(/`cleanupMaxSilence` must be whole hours from 1 to 168, got/);
    expect(() => silence(events.Schedule.rate(Duration.days(7)))).toThrow(
      /the cleanup runs less often \(rate\(7 days\)\) than CloudWatch can watch for silence/,
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
});
