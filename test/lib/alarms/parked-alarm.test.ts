import { describe, expect, it } from 'vitest';
import { alarmsStack, inboxMetric } from './support.js';

describe('the parked alarm', () => {
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
      AlarmDescription: expect.stringMatching(/^Inbox consumer order-worker parked a record in 5 minutes/),
    });
  });

  it('takes a threshold, and says it', () => {
    const { Properties } = alarmsStack({ parkedThreshold: 4 }).byId('ConsumerorderworkerParked');
    expect(Properties.Threshold).toBe(4);
    expect(Properties.AlarmDescription).toMatch(/^Inbox consumer order-worker parked more than 4 records in 5 minutes/);
  });
});
