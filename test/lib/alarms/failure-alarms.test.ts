import { describe, expect, it } from 'vitest';
import { logicalId } from '../support.js';
import { alarmsStack, expressionOf, inboxMetric, inputsOf, streamAlarms } from './support.js';

describe('the failure alarms', () => {
  it("alarms on the consumer function's errors: a crash or a timeout fails the whole batch", () => {
    const { byId, stack, consumer } = alarmsStack();
    expect(byId('ConsumerorderworkerErrors').Properties).toMatchObject({
      Namespace: 'AWS/Lambda',
      MetricName: 'Errors',
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: logicalId(stack, consumer.function) } }],
      Threshold: 0,
      Period: 300,
    });
  });

  it('alarms on a failure rate sustained over several periods, judged only above a minimum volume', () => {
    // Arrange + Act: defaults, then every threshold as a prop.
    const defaults = alarmsStack().byId('ConsumerorderworkerFailureRate');
    const tuned = alarmsStack({ failureRatePercent: 25, failureRateMinRecords: 40, failureRatePeriods: 6 }).byId('ConsumerorderworkerFailureRate');

    // Assess
    const ran = '(FILL(fail, 0) + FILL(proc, 0) + FILL(dup, 0) + FILL(park, 0))';
    expect(defaults.Properties).toMatchObject({ Threshold: 10, EvaluationPeriods: 3, DatapointsToAlarm: 3, ComparisonOperator: 'GreaterThanThreshold' });
    expect(expressionOf(defaults)).toBe(`IF(${ran} >= 10, 100 * FILL(fail, 0) / ${ran}, 0)`);
    expect(tuned.Properties).toMatchObject({ Threshold: 25, EvaluationPeriods: 6, DatapointsToAlarm: 6 });
    expect(expressionOf(tuned)).toBe(`IF(${ran} >= 40, 100 * FILL(fail, 0) / ${ran}, 0)`);
    expect(inputsOf(tuned)).toEqual({
      fail: [inboxMetric('Failures', 'order-worker'), 300, 'Sum'],
      proc: [inboxMetric('Processed', 'order-worker'), 300, 'Sum'],
      dup: [inboxMetric('Duplicates', 'order-worker'), 300, 'Sum'],
      park: [inboxMetric('Parked', 'order-worker'), 300, 'Sum'],
    });
  });

  it("says when failed records give up: after the queue's maxReceiveCount, or a stream's retryAttempts", () => {
    expect(alarmsStack().byId('FailureRate').Properties.AlarmDescription).toContain('reach the dead-letter queue only after maxReceiveCount');
    expect(streamAlarms('dynamodb').alarms.find((a) => a.id.includes('FailureRate'))).toMatchObject({
      AlarmDescription: expect.stringContaining('only after retryAttempts'),
    });
  });
});
