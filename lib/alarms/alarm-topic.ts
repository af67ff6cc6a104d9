import { Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as sns from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';

/**
 * The alarm topic: encrypted with a customer managed KMS key (rotated yearly) that CloudWatch may use to
 * publish, TLS-only, and publishable by CloudWatch alarms of this account only.
 */
export function createAlarmTopic(scope: Construct, key?: kms.IKey): { topic: sns.Topic; key: kms.IKey } {
  const account = Stack.of(scope).account;
  const masterKey =
    key ??
    new kms.Key(scope, 'TopicKey', {
      description: 'sqs-inbox alarm topic encryption',
      enableKeyRotation: true,
    });
  const cloudwatch = new iam.ServicePrincipal('cloudwatch.amazonaws.com');
  if (masterKey instanceof kms.Key) {
    // CloudWatch encrypts what it publishes to an SSE topic with the topic's key; only for this account's alarms.
    masterKey.addToResourcePolicy(
      new iam.PolicyStatement({
        principals: [cloudwatch],
        actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        resources: ['*'],
        conditions: { StringEquals: { 'aws:SourceAccount': account } },
      }),
    );
  }
  const topic = new sns.Topic(scope, 'Topic', { enforceSSL: true, masterKey });
  topic.addToResourcePolicy(
    new iam.PolicyStatement({
      principals: [cloudwatch],
      actions: ['sns:Publish'],
      resources: [topic.topicArn],
      conditions: { StringEquals: { 'aws:SourceAccount': account } },
    }),
  );
  return { topic, key: masterKey };
}
