import { Template } from 'aws-cdk-lib/assertions';
import * as kinesis from 'aws-cdk-lib/aws-kinesis';
import { S3OnFailureDestination } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Duration } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { InboxAlarms, InboxConsumer, InboxDatabase, InboxSources } from '../../../lib/index.js';
import { FIXTURE_HANDLER, testStack } from '../support.js';
import { alarmsStack, streamAlarms } from './support.js';

describe('the dead-letter alarm', () => {
  it('alarms when a message reaches the dead-letter queue', () => {
    const { byId, stack, inboxQueue } = alarmsStack();
    expect(byId('DeadLetterQueueNotEmpty').Properties).toMatchObject({
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [stack.getLogicalId(inboxQueue.deadLetterQueue!.node.defaultChild as never), 'QueueName'] } }],
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
      AlarmDescription: 'Messages of inbox consumer order-worker reached the dead-letter queue: inspect them, fix the cause, then redrive.',
    });
  });

  it("alarms when a stream's on-failure queue holds a discarded record, saying to replay it from the stream", () => {
    const { alarms, stack, consumer } = streamAlarms('kinesis');
    expect(alarms.find((a) => a.id.includes('DeadLetterQueueNotEmpty'))).toMatchObject({
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [stack.getLogicalId(consumer.deadLetterQueue!.node.defaultChild as never), 'QueueName'] } }],
      Threshold: 0,
      AlarmDescription: expect.stringContaining('replay them from the stream while it still holds them'),
    });
  });

  it('has no alarm where there is no queue to watch: a queue without a dead-letter queue, a stream discarding to S3', () => {
    // Arrange
    const stack = testStack();
    const database = new InboxDatabase(stack, 'Db');
    const queue = new sqs.Queue(stack, 'PlainQueue', { visibilityTimeout: Duration.minutes(3) });
    const plain = new InboxConsumer(stack, 'Plain', { database, source: InboxSources.sqs(queue), consumerName: 'plain', entry: FIXTURE_HANDLER });
    const toS3 = new InboxConsumer(stack, 'ToS3', {
      database,
      source: InboxSources.kinesis(new kinesis.Stream(stack, 'S'), { onFailure: new S3OnFailureDestination(new s3.Bucket(stack, 'Failed')) }),
      consumerName: 'to-s3',
      entry: FIXTURE_HANDLER,
    });

    // Act
    new InboxAlarms(stack, 'Alarms', { consumers: [plain, toS3] });

    // Assess
    const ids = Object.keys(Template.fromStack(stack).findResources('AWS::CloudWatch::Alarm'));
    expect(ids.filter((id) => id.includes('OldestMessageAge') || id.includes('IteratorAge'))).toHaveLength(2);
    expect(ids.filter((id) => id.includes('DeadLetter'))).toEqual([]);
  });
});
