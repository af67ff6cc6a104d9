import { Duration, Token } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as kinesis from 'aws-cdk-lib/aws-kinesis';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { S3OnFailureDestination } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { describe, expect, it } from 'vitest';
import { InboxConsumer, InboxDatabase, InboxSources } from '../../lib/index.js';
import type { InboxSource } from '../../lib/index.js';
import { FIXTURE_HANDLER, logicalId, policyStatements, testStack } from './support.js';
import { MSK_CLUSTER_ARN, STREAM_KINDS, streamConsumer } from './stream-support.js';

type Resources = Record<string, { Type: string; Properties: Record<string, any> }>;

function mappingOf(template: Template): Record<string, any> {
  const mappings = Object.values(template.findResources('AWS::Lambda::EventSourceMapping')) as Array<{ Properties: Record<string, any> }>;
  expect(mappings).toHaveLength(1);
  return mappings[0]!.Properties;
}

function environmentOf(template: Template, consumer: InboxConsumer): Record<string, unknown> {
  const resources = template.toJSON().Resources as Resources;
  return resources[logicalId(consumer.function.stack, consumer.function)]!.Properties.Environment.Variables;
}

const SOURCE_OF = { kinesis: 'kinesis', dynamodb: 'dynamodb', msk: 'kafka', 'self-managed-kafka': 'kafka' } as const;

describe('InboxConsumer on a stream', () => {
  it.each(STREAM_KINDS)('%s: starts at the trim horizon with partial batch responses, bisect, 10 retries and an on-failure queue', (kind) => {
    // Arrange + Act
    const { consumer, stack, template: build } = streamConsumer(kind);
    const template = build();

    // Assess
    const mapping = mappingOf(template);
    const queueArn = { 'Fn::GetAtt': [stack.getLogicalId(consumer.deadLetterQueue!.node.defaultChild as never), 'Arn'] };
    expect(mapping).toMatchObject({
      StartingPosition: 'TRIM_HORIZON',
      BatchSize: 100,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BisectBatchOnFunctionError: true,
      MaximumRetryAttempts: 10,
      DestinationConfig: { OnFailure: { Destination: queueArn } },
    });
    expect(mapping.ScalingConfig).toBeUndefined();
    expect(consumer.source.kind).toBe(SOURCE_OF[kind]);
    expect(consumer.queue).toBeUndefined();
    // The on-failure queue: encrypted, TLS only, 14 days.
    template.hasResourceProperties('AWS::SQS::Queue', { SqsManagedSseEnabled: true, MessageRetentionPeriod: 14 * 86400 });
    template.hasResourceProperties('AWS::SQS::QueuePolicy', {
      PolicyDocument: { Statement: Match.arrayWith([Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]) },
    });
    // The function may send the discarded records' details there.
    expect(policyStatements(template)).toContainEqual(expect.objectContaining({ Action: expect.arrayContaining(['sqs:SendMessage']), Resource: queueArn }));
  });

  it.each(STREAM_KINDS)('%s: tells the handler its source, and Kafka whether the mapping reads partial batch responses', (kind) => {
    const { consumer, template } = streamConsumer(kind);
    const env = environmentOf(template(), consumer);
    expect(env.INBOX_SOURCE).toBe(SOURCE_OF[kind]);
    expect(env.INBOX_CONSUMER).toBe('stream-worker');
    expect(env.INBOX_REPORT_BATCH_ITEM_FAILURES).toBe(SOURCE_OF[kind] === 'kafka' ? 'true' : undefined);
  });

  it('Kafka: runs in provisioned mode with one poller and joins the consumer group named after the consumer', () => {
    const msk = mappingOf(streamConsumer('msk').template());
    expect(msk).toMatchObject({
      EventSourceArn: MSK_CLUSTER_ARN,
      Topics: ['orders'],
      ProvisionedPollerConfig: { MinimumPollers: 1, MaximumPollers: 1 },
      AmazonManagedKafkaEventSourceConfig: { ConsumerGroupId: 'stream-worker' },
    });
    const selfManaged = mappingOf(streamConsumer('self-managed-kafka').template());
    expect(selfManaged).toMatchObject({
      SelfManagedEventSource: { Endpoints: { KafkaBootstrapServers: ['kafka-1.example.com:9096'] } },
      Topics: ['orders'],
      ProvisionedPollerConfig: { MinimumPollers: 1, MaximumPollers: 1 },
      SelfManagedKafkaEventSourceConfig: { ConsumerGroupId: 'stream-worker' },
      SourceAccessConfigurations: [{ Type: 'SASL_SCRAM_512_AUTH', URI: expect.anything() }],
    });
  });

  it('Kafka on demand: no error handling controls (Lambda ignores them there), and the handler fails whole invocations', () => {
    // Arrange + Act
    const { consumer, template: build } = streamConsumer('msk', {}, { provisionedPollers: false });
    const template = build();

    // Assess
    const mapping = mappingOf(template);
    expect(mapping.ProvisionedPollerConfig).toBeUndefined();
    expect(mapping.FunctionResponseTypes).toBeUndefined();
    expect(mapping.MaximumRetryAttempts).toBeUndefined();
    expect(mapping.BisectBatchOnFunctionError).toBeUndefined();
    expect(mapping.DestinationConfig).toBeDefined();
    expect(consumer.reportBatchItemFailures).toBe(false);
    expect(environmentOf(template, consumer).INBOX_REPORT_BATCH_ITEM_FAILURES).toBe('false');
  });

  it('MSK: grants exactly what the mapping needs on this cluster, topic and group, and no AWS managed policy', () => {
    const { consumer, stack, template: build } = streamConsumer('msk');
    const template = build();
    const role = (template.toJSON().Resources as Resources)[stack.getLogicalId(consumer.function.role!.node.defaultChild as never)]!;
    expect(role.Properties.ManagedPolicyArns).toBeUndefined();
    const byAction = new Map<string, unknown>();
    for (const statement of policyStatements(template)) for (const action of [statement.Action].flat() as string[]) byAction.set(action, statement.Resource);
    expect(byAction.get('kafka:DescribeClusterV2')).toBe(MSK_CLUSTER_ARN);
    expect(byAction.get('kafka:GetBootstrapBrokers')).toBe(MSK_CLUSTER_ARN);
    expect(byAction.get('kafka-cluster:Connect')).toBe(MSK_CLUSTER_ARN);
    expect(byAction.get('kafka-cluster:ReadData')).toBe(`${MSK_CLUSTER_ARN.replace(':cluster/', ':topic/')}/orders`);
    expect(byAction.get('kafka-cluster:AlterGroup')).toBe(`${MSK_CLUSTER_ARN.replace(':cluster/', ':group/')}/stream-worker`);
    expect(byAction.get('ec2:CreateNetworkInterface')).toBe('*');
    expect([...byAction.keys()].filter((action) => action.startsWith('kafka') || action.startsWith('ec2')).sort()).toEqual([
      'ec2:CreateNetworkInterface',
      'ec2:DeleteNetworkInterface',
      'ec2:DescribeNetworkInterfaces',
      'ec2:DescribeSecurityGroups',
      'ec2:DescribeSubnets',
      'ec2:DescribeVpcs',
      'kafka-cluster:AlterGroup',
      'kafka-cluster:Connect',
      'kafka-cluster:DescribeClusterDynamicConfiguration',
      'kafka-cluster:DescribeGroup',
      'kafka-cluster:DescribeTopic',
      'kafka-cluster:ReadData',
      'kafka:DescribeClusterV2',
      'kafka:GetBootstrapBrokers',
    ]);
  });

  it('MSK: scopes the topic and group grants of a cluster ARN known only at deploy time', () => {
    const stack = testStack();
    const clusterArn = Token.asString({ Ref: 'ClusterArnParameter' });
    new InboxConsumer(stack, 'W', {
      database: new InboxDatabase(stack, 'Db'),
      consumerName: 'w',
      entry: FIXTURE_HANDLER,
      source: InboxSources.msk(clusterArn, { topic: 'orders', topicRetention: Duration.days(1) }),
    });
    const part = (index: number) => ({ 'Fn::Select': [index, { 'Fn::Split': [':cluster/', { Ref: 'ClusterArnParameter' }] }] });
    const statements = policyStatements(Template.fromStack(stack));
    expect(statements).toContainEqual(
      expect.objectContaining({
        Action: ['kafka-cluster:DescribeTopic', 'kafka-cluster:ReadData'],
        Resource: { 'Fn::Join': ['', [part(0), ':topic/', part(1), '/orders']] },
      }),
    );
    expect(statements).toContainEqual(
      expect.objectContaining({
        Action: ['kafka-cluster:AlterGroup', 'kafka-cluster:DescribeGroup'],
        Resource: { 'Fn::Join': ['', [part(0), ':group/', part(1), '/w']] },
      }),
    );
  });

  it('Kinesis and DynamoDB: may read their stream, and the Data API as for SQS', () => {
    for (const [kind, action] of [
      ['kinesis', 'kinesis:GetRecords'],
      ['dynamodb', 'dynamodb:GetRecords'],
    ] as const) {
      const { template } = streamConsumer(kind);
      const actions = policyStatements(template()).flatMap((s) => [s.Action].flat() as string[]);
      expect(actions).toEqual(expect.arrayContaining([action, 'rds-data:BeginTransaction', 'rds-data:CommitTransaction', 'secretsmanager:GetSecretValue']));
    }
  });

  it('takes the stream options it is given', () => {
    const stack = testStack();
    new InboxConsumer(stack, 'Worker', {
      database: new InboxDatabase(stack, 'Db'),
      consumerName: 'w',
      entry: FIXTURE_HANDLER,
      source: InboxSources.kinesis(new kinesis.Stream(stack, 'Events'), {
        batchSize: 50,
        maxBatchingWindow: Duration.seconds(5),
        startingPosition: lambda.StartingPosition.LATEST,
        retryAttempts: 3,
        bisectBatchOnError: false,
        maxRecordAge: Duration.hours(1),
        parallelizationFactor: 2,
      }),
    });
    expect(mappingOf(Template.fromStack(stack))).toMatchObject({
      BatchSize: 50,
      MaximumBatchingWindowInSeconds: 5,
      StartingPosition: 'LATEST',
      MaximumRetryAttempts: 3,
      BisectBatchOnFunctionError: false,
      MaximumRecordAgeInSeconds: 3600,
      ParallelizationFactor: 2,
    });
  });

  it('sends discarded records to the onFailure queue given, which it watches, or to another destination (then no queue is made)', () => {
    const stack = testStack();
    const mine = new sqs.Queue(stack, 'Mine', { enforceSSL: true });
    const database = new InboxDatabase(stack, 'Db');
    const stream = new kinesis.Stream(stack, 'Events');
    const withQueue = new InboxConsumer(stack, 'A', {
      database,
      source: InboxSources.kinesis(stream, { onFailure: mine }),
      consumerName: 'a',
      entry: FIXTURE_HANDLER,
    });
    const bucket = new s3.Bucket(stack, 'Failed');
    const withBucket = new InboxConsumer(stack, 'B', {
      database,
      source: InboxSources.kinesis(stream, { onFailure: new S3OnFailureDestination(bucket) }),
      consumerName: 'b',
      entry: FIXTURE_HANDLER,
    });
    const template = Template.fromStack(stack);
    expect(withQueue.deadLetterQueue).toBe(mine);
    expect(withBucket.deadLetterQueue).toBeUndefined();
    template.resourceCountIs('AWS::SQS::Queue', 1);
    const destinations = Object.values(template.findResources('AWS::Lambda::EventSourceMapping')).map(
      (m) => (m as { Properties: { DestinationConfig: { OnFailure: { Destination: unknown } } } }).Properties.DestinationConfig.OnFailure.Destination,
    );
    expect(destinations).toEqual(
      expect.arrayContaining([
        { 'Fn::GetAtt': [stack.getLogicalId(mine.node.defaultChild as never), 'Arn'] },
        { 'Fn::GetAtt': [stack.getLogicalId(bucket.node.defaultChild as never), 'Arn'] },
      ]),
    );
  });

  it('knows how long each source can deliver a record again: the stream or topic retention', () => {
    const stack = testStack();
    const database = new InboxDatabase(stack, 'Db');
    const make = (id: string, source: InboxSource) =>
      new InboxConsumer(stack, id, { database, consumerName: id.toLowerCase(), entry: FIXTURE_HANDLER, source });
    const kept = make('Kept', InboxSources.kinesis(new kinesis.Stream(stack, 'S1', { retentionPeriod: Duration.hours(48) })));
    const imported = make('Imported', InboxSources.kinesis(kinesis.Stream.fromStreamArn(stack, 'S2', 'arn:aws:kinesis:eu-west-1:123456789012:stream/clicks')));
    const told = make(
      'Told',
      InboxSources.kinesis(kinesis.Stream.fromStreamArn(stack, 'S3', 'arn:aws:kinesis:eu-west-1:123456789012:stream/views'), {
        redeliveryWindow: Duration.days(3),
      }),
    );
    const table = new dynamodb.Table(stack, 'T', {
      partitionKey: { name: 'id', type: dynamodb.AttributeType.STRING },
      stream: dynamodb.StreamViewType.KEYS_ONLY,
    });
    const fromTable = make('Table', InboxSources.dynamoDb(table));
    const toldTable = make('ToldTable', InboxSources.dynamoDb(table, { redeliveryWindow: Duration.hours(30) }));
    const topic = make('Topic', InboxSources.msk(MSK_CLUSTER_ARN, { topic: 't', topicRetention: Duration.days(5) }));
    expect([kept, imported, told, fromTable, toldTable, topic].map((c) => c.redeliveryWindowSeconds)).toEqual([
      48 * 3600,
      365 * 86400,
      3 * 86400,
      24 * 3600,
      30 * 3600,
      5 * 86400,
    ]);
  });

  it('refuses a table without a stream, naming the fix', () => {
    const stack = testStack();
    const table = new dynamodb.Table(stack, 'Plain', { partitionKey: { name: 'id', type: dynamodb.AttributeType.STRING } });
    expect(() => InboxSources.dynamoDb(table)).toThrow(
      'InboxSources.dynamoDb: the table Test/Plain has no stream. Fix: create it with `stream: dynamodb.StreamViewType.NEW_AND_OLD_IMAGES`',
    );
  });

  it("refuses a Kafka topic retention that is not one: the cleanup's retention check needs it", () => {
    for (const topicRetention of [Duration.seconds(0), Duration.millis(0)]) {
      expect(() => InboxSources.msk(MSK_CLUSTER_ARN, { topic: 't', topicRetention })).toThrow(
        "InboxSources.msk: `topicRetention` must be the topic's retention.ms as a positive Duration. Fix: pass e.g. Duration.days(7).",
      );
      expect(() => InboxSources.selfManagedKafka(['b:9092'], { topic: 't', topicRetention })).toThrow(
        /^InboxSources\.selfManagedKafka: `topicRetention` must be/,
      );
    }
  });
});
