import { Match, Template } from 'aws-cdk-lib/assertions';
import * as kms from 'aws-cdk-lib/aws-kms';
import { describe, expect, it } from 'vitest';
import { createAlarmTopic } from '../../../lib/alarms/alarm-topic.js';
import { testStack } from '../support.js';

describe('createAlarmTopic', () => {
  it("makes a KMS-encrypted, TLS-only topic that this account's CloudWatch alarms may publish to", () => {
    // Arrange + Act
    const stack = testStack();
    const { topic, key } = createAlarmTopic(stack);
    const template = Template.fromStack(stack);

    // Assess
    const keyId = stack.getLogicalId(key.node.defaultChild as never);
    template.resourceCountIs('AWS::SNS::Topic', 1);
    template.hasResourceProperties('AWS::SNS::Topic', { KmsMasterKeyId: { 'Fn::GetAtt': [keyId, 'Arn'] } });
    template.hasResourceProperties('AWS::KMS::Key', { EnableKeyRotation: true });
    template.hasResourceProperties('AWS::SNS::TopicPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
          Match.objectLike({
            Principal: { Service: 'cloudwatch.amazonaws.com' },
            Action: 'sns:Publish',
            Resource: { Ref: stack.getLogicalId(topic.node.defaultChild as never) },
            Condition: { StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } } },
          }),
        ]),
      },
    });
    // CloudWatch encrypts what it publishes with the topic's key: without this grant no alarm would arrive.
    const statements = template.toJSON().Resources[keyId].Properties.KeyPolicy.Statement as Array<Record<string, unknown>>;
    expect(statements).toContainEqual(
      expect.objectContaining({
        Principal: { Service: 'cloudwatch.amazonaws.com' },
        Action: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        Condition: { StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } } },
      }),
    );
  });

  it('encrypts with a key passed in, and leaves its policy alone', () => {
    const stack = testStack();
    const imported = kms.Key.fromKeyArn(stack, 'Key', 'arn:aws:kms:eu-west-1:123456789012:key/0a1b2c3d-1111-2222-3333-444455556666');
    const { key } = createAlarmTopic(stack, imported);
    const template = Template.fromStack(stack);
    expect(key).toBe(imported);
    template.resourceCountIs('AWS::KMS::Key', 0);
    template.hasResourceProperties('AWS::SNS::Topic', { KmsMasterKeyId: 'arn:aws:kms:eu-west-1:123456789012:key/0a1b2c3d-1111-2222-3333-444455556666' });
  });
});
