import { Duration } from 'aws-cdk-lib';
import type { Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as kinesis from 'aws-cdk-lib/aws-kinesis';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { InboxConsumer, InboxDatabase, InboxSources } from '../../lib/index.js';
import type { InboxConsumerProps, InboxKafkaSourceOptions, InboxSource, InboxStreamSourceOptions } from '../../lib/index.js';
import { FIXTURE_HANDLER, testStack } from './support.js';

export const MSK_CLUSTER_ARN = 'arn:aws:kafka:eu-west-1:123456789012:cluster/orders/0a1b2c3d-1111-2222-3333-444455556666-1';

/** The four stream sources, each built in a stack of its own: one table of cases runs against all of them. */
export type StreamKind = 'kinesis' | 'dynamodb' | 'msk' | 'self-managed-kafka';
export const STREAM_KINDS: readonly StreamKind[] = ['kinesis', 'dynamodb', 'msk', 'self-managed-kafka'];

/** The options every stream source takes. */
export type CommonStreamOptions = Omit<InboxStreamSourceOptions, 'parallelizationFactor' | 'redeliveryWindow' | 'startingPositionTimestamp'>;

/** A source of one kind, its stream or table created in `stack`, with `options` and, for Kafka, `kafka`. */
export function streamSource(stack: Stack, kind: StreamKind, options: CommonStreamOptions = {}, kafka: Partial<InboxKafkaSourceOptions> = {}): InboxSource {
  switch (kind) {
    case 'kinesis':
      return InboxSources.kinesis(new kinesis.Stream(stack, 'Events', { encryption: kinesis.StreamEncryption.MANAGED }), options);
    case 'dynamodb':
      return InboxSources.dynamoDb(
        new dynamodb.Table(stack, 'Orders', {
          partitionKey: { name: 'id', type: dynamodb.AttributeType.STRING },
          stream: dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
        }),
        options,
      );
    case 'msk':
      return InboxSources.msk(MSK_CLUSTER_ARN, { topic: 'orders', topicRetention: Duration.days(7), ...options, ...kafka });
    case 'self-managed-kafka':
      return InboxSources.selfManagedKafka(['kafka-1.example.com:9096'], {
        topic: 'orders',
        topicRetention: Duration.days(7),
        secret: secretsmanager.Secret.fromSecretNameV2(stack, 'KafkaCredentials', 'kafka-credentials'),
        ...options,
        ...kafka,
      });
  }
}

/**
 * A consumer of one stream kind, with the source's `options` (and Kafka's `kafka`) and the consumer's `overrides`;
 * the template is built by the caller (it may expect an error).
 */
export function streamConsumer(
  kind: StreamKind,
  options: CommonStreamOptions = {},
  kafka: Partial<InboxKafkaSourceOptions> = {},
  overrides: Partial<InboxConsumerProps> = {},
) {
  const stack = testStack();
  const database = new InboxDatabase(stack, 'Db');
  const consumer = new InboxConsumer(stack, 'Worker', {
    database,
    consumerName: 'stream-worker',
    entry: FIXTURE_HANDLER,
    source: streamSource(stack, kind, options, kafka),
    ...overrides,
  });
  return { stack, database, consumer, template: () => Template.fromStack(stack) };
}
