import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { InboxAlarms, InboxDsqlConsumer, InboxDsqlDatabase, InboxQueue, InboxSources } from '../../../lib/index.js';
import { FIXTURE_HANDLER, testStack } from '../support.js';
import { alarmsStack, inboxMetric } from './support.js';

describe('the DSQL conflict alarm', () => {
  it("alarms when a DSQL consumer's transactions lose their conflict retries (ConflictsExhausted), which an Aurora consumer has none of", () => {
    // Arrange
    const stack = testStack();
    const consumer = new InboxDsqlConsumer(stack, 'Worker', {
      database: new InboxDsqlDatabase(stack, 'Dsql'),
      source: InboxSources.sqs(new InboxQueue(stack, 'Orders').queue),
      consumerName: 'order-worker',
      entry: FIXTURE_HANDLER,
    });

    // Act
    new InboxAlarms(stack, 'Alarms', { consumers: [consumer] });

    // Assess
    const alarms = Template.fromStack(stack).findResources('AWS::CloudWatch::Alarm', { Properties: { MetricName: 'ConflictsExhausted' } });
    expect(Object.values(alarms).map((alarm) => alarm.Properties)).toEqual([
      expect.objectContaining({
        ...inboxMetric('ConflictsExhausted', 'order-worker'),
        Statistic: 'Sum',
        Threshold: 0,
        AlarmDescription: expect.stringContaining('raise dsql({ conflictRetries })'),
      }),
    ]);
    expect(Object.keys(alarmsStack().template.findResources('AWS::CloudWatch::Alarm', { Properties: { MetricName: 'ConflictsExhausted' } }))).toEqual([]);
  });
});
