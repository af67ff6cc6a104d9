import { Duration } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { describe, expect, it } from 'vitest';
import { InboxQueue } from '../../lib/index.js';
import { testStack } from './support.js';

describe('InboxQueue', () => {
  it('creates a FIFO queue that redrives to a FIFO dead-letter queue after 5 receives', () => {
    // Prepare
    const stack = testStack();

    // Act
    const inboxQueue = new InboxQueue(stack, 'Orders');
    const template = Template.fromStack(stack);

    // Assess
    template.resourceCountIs('AWS::SQS::Queue', 2);
    const dlqId = stack.getLogicalId(inboxQueue.deadLetterQueue!.node.defaultChild as sqs.CfnQueue);
    template.hasResourceProperties('AWS::SQS::Queue', {
      FifoQueue: true,
      ContentBasedDeduplication: false,
      MessageRetentionPeriod: 4 * 86400,
      VisibilityTimeout: 180,
      SqsManagedSseEnabled: true,
      RedrivePolicy: { deadLetterTargetArn: { 'Fn::GetAtt': [dlqId, 'Arn'] }, maxReceiveCount: 5 },
    });
    template.hasResource('AWS::SQS::Queue', {
      Properties: { FifoQueue: true, MessageRetentionPeriod: 14 * 86400, SqsManagedSseEnabled: true },
    });
    expect(template.toJSON().Resources[dlqId].Properties.FifoQueue).toBe(true);
  });

  it('denies every request that is not over TLS, on both queues', () => {
    const stack = testStack();
    new InboxQueue(stack, 'Orders');
    const template = Template.fromStack(stack);

    const policies = template.findResources('AWS::SQS::QueuePolicy', {
      Properties: {
        PolicyDocument: {
          Statement: Match.arrayWith([
            Match.objectLike({
              Effect: 'Deny',
              Action: 'sqs:*',
              Condition: { Bool: { 'aws:SecureTransport': 'false' } },
            }),
          ]),
        },
      },
    });
    expect(Object.keys(policies)).toHaveLength(2);
  });

  it('applies the retention, visibility timeout, receive count and encryption props', () => {
    const stack = testStack();
    new InboxQueue(stack, 'Orders', {
      maxReceiveCount: 7,
      retentionPeriod: Duration.days(2),
      deadLetterRetentionPeriod: Duration.days(10),
      visibilityTimeout: Duration.minutes(10),
      encryption: sqs.QueueEncryption.KMS_MANAGED,
      contentBasedDeduplication: true,
    });
    const template = Template.fromStack(stack);
    template.hasResourceProperties('AWS::SQS::Queue', {
      MessageRetentionPeriod: 2 * 86400,
      VisibilityTimeout: 600,
      ContentBasedDeduplication: true,
      KmsMasterKeyId: 'alias/aws/sqs',
      RedrivePolicy: Match.objectLike({ maxReceiveCount: 7 }),
    });
    template.hasResourceProperties('AWS::SQS::Queue', { MessageRetentionPeriod: 10 * 86400, KmsMasterKeyId: 'alias/aws/sqs' });
  });

  it('creates standard queues when fifo is false', () => {
    const stack = testStack();
    new InboxQueue(stack, 'Events', { fifo: false });
    const template = Template.fromStack(stack);
    template.allResourcesProperties('AWS::SQS::Queue', { FifoQueue: Match.absent() });
  });

  it('wraps an existing queue and dead-letter queue without creating any', () => {
    const stack = testStack();
    const queue = sqs.Queue.fromQueueArn(stack, 'Existing', 'arn:aws:sqs:eu-west-1:123456789012:orders.fifo');
    const deadLetterQueue = sqs.Queue.fromQueueArn(stack, 'ExistingDlq', 'arn:aws:sqs:eu-west-1:123456789012:orders-dlq.fifo');

    const inboxQueue = new InboxQueue(stack, 'Orders', { queue, deadLetterQueue });

    expect(inboxQueue.queue).toBe(queue);
    expect(inboxQueue.deadLetterQueue).toBe(deadLetterQueue);
    Template.fromStack(stack).resourceCountIs('AWS::SQS::Queue', 0);
  });

  it('refuses a dead-letter queue without the existing queue it belongs to', () => {
    const stack = testStack();
    const deadLetterQueue = sqs.Queue.fromQueueArn(stack, 'ExistingDlq', 'arn:aws:sqs:eu-west-1:123456789012:dlq.fifo');
    expect(() => new InboxQueue(stack, 'Orders', { deadLetterQueue })).toThrow(/`deadLetterQueue` is only used with an existing `queue`\. Fix: /);
  });

  it('refuses new-queue props next to an existing queue, all named at once', () => {
    const stack = testStack();
    const queue = sqs.Queue.fromQueueArn(stack, 'Existing', 'arn:aws:sqs:eu-west-1:123456789012:orders.fifo');
    let message = '';
    try {
      new InboxQueue(stack, 'Orders', {
        queue,
        fifo: true,
        contentBasedDeduplication: true,
        maxReceiveCount: 3,
        retentionPeriod: Duration.days(1),
        deadLetterRetentionPeriod: Duration.days(2),
        visibilityTimeout: Duration.minutes(6),
        encryption: sqs.QueueEncryption.KMS_MANAGED,
      });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toBe(
      'InboxQueue Test/Orders: `fifo`, `contentBasedDeduplication`, `maxReceiveCount`, `retentionPeriod`, ' +
        '`deadLetterRetentionPeriod`, `visibilityTimeout`, `encryption` only apply to new queues, but an existing ' +
        '`queue` was given. Fix: configure the existing queue (and its dead-letter queue) directly and remove these ' +
        'props, or remove `queue` to create new queues with them.',
    );
    expect(() => new InboxQueue(stack, 'Other', { queue, visibilityTimeout: Duration.minutes(6) })).toThrow(/`visibilityTimeout` only apply to new queues/);
  });
});
