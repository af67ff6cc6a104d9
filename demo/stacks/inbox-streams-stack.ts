import { Aws, CfnOutput, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import type { StackProps } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as kinesis from 'aws-cdk-lib/aws-kinesis';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';
import type { InboxTableGrant } from '../../lib/database/database-grants.js';
import { InboxAlarms } from '../../lib/alarms/index.js';
import { InboxConsumer } from '../../lib/consumer/inbox-consumer.js';
import { InboxDatabase } from '../../lib/database/inbox-database.js';
import { runtimeFile } from '../../lib/runtime-files.js';
import { InboxSources } from '../../lib/sources/inbox-sources.js';
import { EXAMPLE_ORDER_MIGRATIONS } from '../functions/example-migrations.js';

/** A placeholder ARN in this stack's account and region; deploying needs the real cluster's (`mskClusterArn`). */
const PLACEHOLDER_MSK_CLUSTER = `arn:${Aws.PARTITION}:kafka:${Aws.REGION}:${Aws.ACCOUNT_ID}:cluster/sqs-inbox-example/00000000-0000-0000-0000-000000000000-1`;

/** Props for {@link InboxStreamsStack}. */
export interface InboxStreamsStackProps extends StackProps {
  /** The inbox database to share, e.g. `InboxStack`'s: its cluster, master secret and database name. */
  readonly database: InboxDatabase;
  /**
   * ARN of the Amazon MSK cluster (provisioned or serverless, IAM access control) the MSK consumer reads.
   * @default - a placeholder in this account and region: it synthesizes, but deploying needs a real cluster
   */
  readonly mskClusterArn?: string | undefined;
  /**
   * `host:port` of the self-managed Kafka brokers the Kafka consumer reads (SASL/SCRAM-512 over the internet).
   * @default ['kafka-1.example.com:9096'] (a placeholder)
   */
  readonly kafkaBootstrapServers?: readonly string[] | undefined;
  /**
   * Name of the Secrets Manager secret with the self-managed brokers' SASL/SCRAM credentials.
   * @default 'sqs-inbox/kafka'
   */
  readonly kafkaSecretName?: string | undefined;
  /**
   * The topic both Kafka consumers read.
   * @default 'orders'
   */
  readonly topic?: string | undefined;
  /**
   * The topic's `retention.ms`, which synth cannot see: the shared cleanup's retention must exceed it.
   * @default Duration.days(7) (Kafka's default retention.ms)
   */
  readonly topicRetention?: Duration | undefined;
  /**
   * Where the alarms go, e.g. `InboxStack`'s `alarms.topic`.
   * @default - a new encrypted topic
   */
  readonly alarmTopic?: sns.ITopic | undefined;
}

/**
 * The stream example, one inbox consumer per stream source, each shipping the orders its records name into the
 * shared database's `public.orders` exactly once (demo/functions/kinesis-worker.ts, dynamodb-worker.ts,
 * kafka-worker.ts): a Kinesis data stream, a DynamoDB table's stream, a topic on Amazon MSK and one on
 * self-managed Kafka. It shares the database of another stack (the cleanup there purges their inbox rows too,
 * and its retention is checked against these streams' retention), with alarms and a dashboard of its own.
 *
 * @example
 * const inbox = new InboxStack(app, 'InboxStack');
 * new InboxStreamsStack(app, 'InboxStreamsStack', {
 *   database: inbox.database,
 *   mskClusterArn: 'arn:aws:kafka:eu-west-1:123456789012:cluster/orders/...',
 *   alarmTopic: inbox.alarms.topic,
 * });
 */
export class InboxStreamsStack extends Stack {
  /** The shared database, as this stack signs in to it (its own migration function, the consumers' roles). */
  public readonly database: InboxDatabase;
  /** The Kinesis data stream. */
  public readonly stream: kinesis.Stream;
  /** The DynamoDB table whose stream is consumed (partition key `orderId`). */
  public readonly table: dynamodb.Table;
  /** The consumers: Kinesis, DynamoDB Streams, MSK and self-managed Kafka, in this order. */
  public readonly consumers: readonly InboxConsumer[];
  /** Alarms and dashboard. */
  public readonly alarms: InboxAlarms;

  constructor(scope: Construct, id: string, props: InboxStreamsStackProps) {
    super(scope, id, {
      description: 'sqs-inbox: exactly-once effects from Kinesis, DynamoDB Streams, Amazon MSK and Kafka through the transactional inbox',
      ...props,
    });

    // The other stack's cluster, so the inbox table is recognised as the same one; the master secret imported by
    // ARN, as an existing cluster's: this stack only signs in with it to create its consumers' roles.
    this.database = new InboxDatabase(this, 'Database', {
      cluster: props.database.cluster,
      secret: secretsmanager.Secret.fromSecretCompleteArn(this, 'MasterSecret', props.database.secret.secretArn),
      databaseName: props.database.databaseName,
      migrations: [EXAMPLE_ORDER_MIGRATIONS],
      // The consumers' role secrets rotate like InboxStack's, in the cluster's VPC.
      ...(props.database.rotation === undefined ? {} : { rotation: props.database.rotation }),
    });
    this.stream = new kinesis.Stream(this, 'Orders', { encryption: kinesis.StreamEncryption.MANAGED });
    this.table = new dynamodb.Table(this, 'OrdersTable', {
      partitionKey: { name: 'orderId', type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      stream: dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      removalPolicy: RemovalPolicy.RETAIN,
    });

    const topic = props.topic ?? 'orders';
    const topicRetention = props.topicRetention ?? Duration.days(7);
    // shipOrder's upsert (INSERT ... ON CONFLICT DO UPDATE) reads and updates the row.
    const databaseGrants: InboxTableGrant[] = [{ table: 'public.orders', privileges: ['SELECT', 'INSERT', 'UPDATE'] }];
    const common = { database: this.database, databaseGrants };
    const kafkaWorker = runtimeFile('../demo/functions/kafka-worker', 'the example Kafka consumer');
    this.consumers = [
      new InboxConsumer(this, 'KinesisWorker', {
        ...common,
        source: InboxSources.kinesis(this.stream),
        consumerName: 'kinesis-worker',
        entry: runtimeFile('../demo/functions/kinesis-worker', 'the example Kinesis consumer'),
      }),
      new InboxConsumer(this, 'DynamoDbWorker', {
        ...common,
        source: InboxSources.dynamoDb(this.table),
        consumerName: 'dynamodb-worker',
        entry: runtimeFile('../demo/functions/dynamodb-worker', 'the example DynamoDB Streams consumer'),
      }),
      new InboxConsumer(this, 'MskWorker', {
        ...common,
        source: InboxSources.msk(props.mskClusterArn ?? PLACEHOLDER_MSK_CLUSTER, { topic, topicRetention }),
        consumerName: 'msk-worker',
        entry: kafkaWorker,
      }),
      new InboxConsumer(this, 'KafkaWorker', {
        ...common,
        source: InboxSources.selfManagedKafka(props.kafkaBootstrapServers ?? ['kafka-1.example.com:9096'], {
          topic,
          topicRetention,
          secret: secretsmanager.Secret.fromSecretNameV2(this, 'KafkaCredentials', props.kafkaSecretName ?? 'sqs-inbox/kafka'),
        }),
        consumerName: 'kafka-worker',
        entry: kafkaWorker,
      }),
    ];
    this.alarms = new InboxAlarms(this, 'Alarms', {
      consumers: this.consumers,
      ...(props.alarmTopic === undefined ? { createTopic: true } : { topic: props.alarmTopic }),
      dashboardName: `${this.stackName}-inbox`,
    });

    new CfnOutput(this, 'StreamName', { value: this.stream.streamName, description: 'Put {"orderId": "..."} records here.' });
    new CfnOutput(this, 'TableName', { value: this.table.tableName, description: 'Insert items with an orderId here.' });
  }
}
