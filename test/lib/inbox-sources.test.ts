import { Duration } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as kinesis from 'aws-cdk-lib/aws-kinesis';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { describe, expect, it } from 'vitest';
import { InboxConstructError, InboxConsumer, InboxDatabase, InboxQueue, InboxSources } from '../../lib/index.js';
import type { InboxConsumerProps, InboxSource } from '../../lib/index.js';
import { FIXTURE_HANDLER, testStack } from './support.js';
import { MSK_CLUSTER_ARN } from './stream-support.js';

describe('InboxSources: each source with its own settings', () => {
  it('makes the source each factory names, which the consumer exposes with its kind', () => {
    // Arrange
    const stack = testStack();
    const database = new InboxDatabase(stack, 'Db');
    const queue = new InboxQueue(stack, 'Orders').queue;
    const stream = new kinesis.Stream(stack, 'Clicks');
    const vpc = new ec2.Vpc(stack, 'Brokers', { natGateways: 0, subnetConfiguration: [{ name: 'i', subnetType: ec2.SubnetType.PRIVATE_ISOLATED }] });
    const table = new dynamodb.Table(stack, 'Items', {
      partitionKey: { name: 'id', type: dynamodb.AttributeType.STRING },
      stream: dynamodb.StreamViewType.NEW_IMAGE,
    });
    const sources = {
      sqs: InboxSources.sqs(queue),
      kinesis: InboxSources.kinesis(stream),
      dynamodb: InboxSources.dynamoDb(table),
      msk: InboxSources.msk(MSK_CLUSTER_ARN, { topic: 'orders', topicRetention: Duration.days(7) }),
      selfManaged: InboxSources.selfManagedKafka(['b-1.example.com:9092'], {
        topic: 'orders',
        topicRetention: Duration.days(7),
        vpc,
        vpcSubnets: { subnetType: ec2.SubnetType.PRIVATE_ISOLATED },
        securityGroup: new ec2.SecurityGroup(stack, 'BrokerAccess', { vpc }),
      }),
    };

    // Act
    const consumers = Object.entries(sources).map(
      ([name, source]) => new InboxConsumer(stack, name, { database, source, consumerName: name, entry: FIXTURE_HANDLER }),
    );
    const template = Template.fromStack(stack);

    // Assess
    expect(consumers.map((c) => [c.source.kind, c.queue, c.stream, c.table])).toEqual([
      ['sqs', queue, undefined, undefined],
      ['kinesis', undefined, stream, undefined],
      ['dynamodb', undefined, undefined, table],
      ['kafka', undefined, undefined, undefined],
      ['kafka', undefined, undefined, undefined],
    ]);
    const mappings = Object.values(template.findResources('AWS::Lambda::EventSourceMapping')).map((m) => m.Properties);
    expect(
      mappings.map((m) =>
        Object.keys(m)
          .filter((key) => /Kafka|EventSourceArn|StartingPosition/.test(key))
          .sort(),
      ),
    ).toEqual([
      ['EventSourceArn'],
      ['EventSourceArn', 'StartingPosition'],
      ['EventSourceArn', 'StartingPosition'],
      ['AmazonManagedKafkaEventSourceConfig', 'EventSourceArn', 'StartingPosition'],
      ['SelfManagedKafkaEventSourceConfig', 'StartingPosition'],
    ]);
    // The self-managed brokers' VPC reaches the mapping; an MSK source takes none.
    expect(JSON.stringify(mappings[4]!.SourceAccessConfigurations)).toContain('VPC_SUBNET');
    expect(mappings[3]!.SourceAccessConfigurations).toBeUndefined();
  });

  it('binds one source given to two consumers twice: each its own event source and on-failure queue', () => {
    const stack = testStack();
    const database = new InboxDatabase(stack, 'Db');
    const source = InboxSources.kinesis(new kinesis.Stream(stack, 'Clicks'), { batchSize: 25 });
    const first = new InboxConsumer(stack, 'First', { database, source, consumerName: 'first', entry: FIXTURE_HANDLER });
    const second = new InboxConsumer(stack, 'Second', { database, source, consumerName: 'second', entry: FIXTURE_HANDLER });
    const template = Template.fromStack(stack);

    expect(first.eventSource).not.toBe(second.eventSource);
    expect(first.deadLetterQueue).toBeDefined();
    expect(second.deadLetterQueue).toBeDefined();
    expect(first.deadLetterQueue).not.toBe(second.deadLetterQueue);
    template.resourcePropertiesCountIs('AWS::Lambda::EventSourceMapping', { BatchSize: 25 }, 2);
  });

  it('refuses a source not made by InboxSources, or none, naming the factories', () => {
    const stack = testStack();
    const database = new InboxDatabase(stack, 'Db');
    const props = (source: unknown) => ({ database, consumerName: 'w', entry: FIXTURE_HANDLER, source }) as InboxConsumerProps;
    const refusal = (run: () => unknown) => {
      try {
        run();
      } catch (error) {
        return error;
      }
      throw new Error('expected a refusal');
    };

    const forged = refusal(() => new InboxConsumer(stack, 'Forged', props({ kind: 'sqs' } satisfies InboxSource)));
    const missing = refusal(() => new InboxConsumer(stack, 'Missing', props(undefined)));

    expect(forged).toBeInstanceOf(InboxConstructError);
    expect((forged as InboxConstructError).problems).toEqual([
      {
        problem: '`source` was not made by InboxSources: a consumer reads one source, made with its settings.',
        fix: expect.stringContaining('pass e.g. `source: InboxSources.sqs(queue)`, `InboxSources.kinesis(stream)`, `InboxSources.dynamoDb(table)`'),
      },
    ]);
    expect((missing as Error).message).toMatch(/^InboxConsumer Test\/Missing: `source` is missing: /);
  });

  it("refuses, by its type, a setting another source's options hold", () => {
    // The type checker (`tsc --noEmit`, part of `npm test`) fails here when a source takes a setting that is not its own:
    // each `@ts-expect-error` must find its error. These sources are only built, never bound.
    const stack = testStack();
    const queue = new sqs.Queue(stack, 'Q');
    const stream = new kinesis.Stream(stack, 'S');
    const table = new dynamodb.Table(stack, 'T', {
      partitionKey: { name: 'id', type: dynamodb.AttributeType.STRING },
      stream: dynamodb.StreamViewType.KEYS_ONLY,
    });
    const kafka = { topic: 't', topicRetention: Duration.days(1) };
    const vpc = new ec2.Vpc(stack, 'V', { natGateways: 0, subnetConfiguration: [{ name: 'i', subnetType: ec2.SubnetType.PRIVATE_ISOLATED }] });
    const built = [
      // @ts-expect-error retries are a stream's
      InboxSources.sqs(queue, { retryAttempts: 3 }),
      // @ts-expect-error a starting position is a stream's
      InboxSources.sqs(queue, { startingPosition: lambda.StartingPosition.LATEST }),
      // @ts-expect-error a stream's concurrency is its shards x parallelizationFactor
      InboxSources.kinesis(stream, { maxConcurrency: 5 }),
      // @ts-expect-error provisioned pollers on a stream are Kafka's (its own option)
      InboxSources.kinesis(stream, { provisionedPollers: { maximumPollers: 2 } }),
      // @ts-expect-error DynamoDB Streams cannot start at a timestamp
      InboxSources.dynamoDb(table, { startingPositionTimestamp: 1_700_000_000 }),
      // @ts-expect-error a topic runs one batch per partition at a time
      InboxSources.msk(MSK_CLUSTER_ARN, { ...kafka, parallelizationFactor: 2 }),
      // @ts-expect-error a topic's redelivery window is its topicRetention
      InboxSources.msk(MSK_CLUSTER_ARN, { ...kafka, redeliveryWindow: Duration.days(1) }),
      // @ts-expect-error Lambda reaches an MSK cluster through the cluster's own network settings
      InboxSources.msk(MSK_CLUSTER_ARN, { ...kafka, vpc }),
      // @ts-expect-error a topic's retention is required: the cleanup's retention check needs it
      InboxSources.selfManagedKafka(['b:9092'], { topic: 't' }),
    ];
    const consumerProps: Array<Partial<InboxConsumerProps>> = [
      // @ts-expect-error the queue is the source's
      { queue },
      // @ts-expect-error the batch size is the source's
      { batchSize: 10 },
      // @ts-expect-error the on-failure destination is a stream source's
      { onFailure: queue },
    ];
    expect(built.map((source) => source.kind)).toEqual(['sqs', 'sqs', 'kinesis', 'kinesis', 'dynamodb', 'kafka', 'kafka', 'kafka', 'kafka']);
    expect(consumerProps).toHaveLength(3);
  });
});
