import { Duration } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as events from 'aws-cdk-lib/aws-events';
import * as sns from 'aws-cdk-lib/aws-sns';
import { describe, expect, it } from 'vitest';
import { InboxAlarms } from '../../../lib/index.js';
import type { InboxOutboxRelayProps } from '../../../lib/index.js';
import { logicalId } from '../support.js';
import { refOf, relayStack } from './support.js';

/** The relay's stack watched by InboxAlarms, paging a topic; its relay alarms by name. */
function watched(props: { relay?: Partial<InboxOutboxRelayProps>; maxOutboxAge?: Duration } = {}) {
  const s = relayStack(props.relay);
  const topic = new sns.Topic(s.stack, 'Pager', { enforceSSL: true });
  new InboxAlarms(s.stack, 'Alarms', {
    consumers: [s.worker],
    outboxRelay: s.relay,
    topic,
    ...(props.maxOutboxAge === undefined ? {} : { maxOutboxAge: props.maxOutboxAge }),
  });
  const template = Template.fromStack(s.stack);
  const alarm = (name: string) => {
    const found = Object.entries(template.findResources('AWS::CloudWatch::Alarm')).filter(([id]) => id.startsWith(`AlarmsOutboxRelay${name}`));
    expect(found, name).toHaveLength(1);
    return found[0]![1].Properties as Record<string, any>;
  };
  return { ...s, topic, template, alarm };
}

describe('the outbox relay alarms', () => {
  it('pages when the oldest unsent message is older than 15 minutes, or the sweeper reports nothing for a 5-minute period', () => {
    const { alarm, relay, stack, topic } = watched();
    expect(alarm('OldestUnsentAge')).toMatchObject({
      Namespace: 'SqsInbox',
      MetricName: 'OutboxOldestUnsentAgeSeconds',
      Dimensions: [{ Name: 'service', Value: relay.serviceName }],
      Statistic: 'Maximum',
      Period: 300,
      EvaluationPeriods: 1,
      Threshold: 900,
      ComparisonOperator: 'GreaterThanThreshold',
      TreatMissingData: 'breaching',
      AlarmActions: [refOf(stack, topic)],
      OKActions: [refOf(stack, topic)],
    });
  });

  it('pages when the sweeper failed in each of 3 consecutive 5-minute periods', () => {
    const { alarm, relay, stack } = watched();
    expect(alarm('Errors')).toMatchObject({
      Namespace: 'AWS/Lambda',
      MetricName: 'Errors',
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: logicalId(stack, relay.function) } }],
      Statistic: 'Sum',
      Period: 300,
      EvaluationPeriods: 3,
      DatapointsToAlarm: 3,
      Threshold: 0,
      TreatMissingData: 'notBreaching',
    });
  });

  it('takes another maximum age, and follows a slower schedule with its period and a later default', () => {
    expect(watched({ maxOutboxAge: Duration.minutes(30) }).alarm('OldestUnsentAge').Threshold).toBe(1800);
    const slow = watched({ relay: { schedule: events.Schedule.rate(Duration.minutes(20)) } }).alarm('OldestUnsentAge');
    // 60 s of minAge + 20 minutes between runs + 5 minutes; one run per 20-minute period.
    expect(slow).toMatchObject({ Threshold: 60 + 1200 + 300, Period: 1200 });
  });

  it('refuses a maximum age that a row reaches while it normally waits for the sweeper', () => {
    const s = relayStack({ schedule: events.Schedule.rate(Duration.minutes(10)) });
    expect(() => new InboxAlarms(s.stack, 'Alarms', { outboxRelay: s.relay, maxOutboxAge: Duration.minutes(11) })).toThrow(
      /^InboxAlarms Test\/Alarms: `maxOutboxAge` \(11 minutes\) does not exceed .* `minAge` \(1 minute\) plus its schedule's interval \(rate\(10 minutes\)\)\. .* Fix: set `maxOutboxAge` above 11 minutes, or run the sweeper more often\./,
    );
    expect(() => new InboxAlarms(s.stack, 'Alarms2', { outboxRelay: s.relay, maxOutboxAge: Duration.seconds(661) })).not.toThrow();
  });
});
