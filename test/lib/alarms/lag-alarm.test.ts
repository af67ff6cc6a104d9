import { Duration } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { logicalId } from '../support.js';
import { alarmsStack, streamAlarms } from './support.js';

describe('the lag alarm', () => {
  it('alarms when the oldest message waits longer than maxMessageAge, 15 minutes by default', () => {
    const { byId, stack, inboxQueue } = alarmsStack({ maxMessageAge: Duration.minutes(30) });
    expect(byId('OldestMessageAge').Properties).toMatchObject({
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateAgeOfOldestMessage',
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [stack.getLogicalId(inboxQueue.queue.node.defaultChild as never), 'QueueName'] } }],
      Threshold: 1800,
      Statistic: 'Maximum',
      Period: 60,
      EvaluationPeriods: 5,
    });
    expect(alarmsStack().byId('OldestMessageAge').Properties.Threshold).toBe(900);
  });

  it('watches the iterator age of a Kinesis or DynamoDB consumer, and the offset lag of a Kafka consumer', () => {
    for (const kind of ['kinesis', 'dynamodb'] as const) {
      const { alarms, stack, consumer } = streamAlarms(kind, { maxMessageAge: Duration.minutes(10), maxOffsetLag: 500 });
      const iteratorAge = alarms.filter((a) => a.id.includes('IteratorAge'));
      expect(iteratorAge).toHaveLength(1);
      expect(iteratorAge[0]).toMatchObject({
        Namespace: 'AWS/Lambda',
        MetricName: 'IteratorAge',
        Dimensions: [{ Name: 'FunctionName', Value: { Ref: logicalId(stack, consumer.function) } }],
        Statistic: 'Maximum',
        Threshold: 10 * 60 * 1000,
        EvaluationPeriods: 5,
      });
      expect(alarms.some((a) => a.id.includes('OldestMessageAge') || a.id.includes('OffsetLag'))).toBe(false);
    }
    for (const kind of ['msk', 'self-managed-kafka'] as const) {
      const { alarms } = streamAlarms(kind, { maxMessageAge: Duration.minutes(10), maxOffsetLag: 500 });
      expect(alarms.filter((a) => a.id.includes('OffsetLag') || a.id.includes('IteratorAge'))).toEqual([
        expect.objectContaining({ Namespace: 'AWS/Lambda', MetricName: 'OffsetLag', Statistic: 'Maximum', Threshold: 500, EvaluationPeriods: 15 }),
      ]);
    }
    expect(streamAlarms('msk').alarms.find((a) => a.id.includes('OffsetLag'))).toMatchObject({ Threshold: 10_000 });
  });
});
