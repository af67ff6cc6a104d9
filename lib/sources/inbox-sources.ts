import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as kinesis from 'aws-cdk-lib/aws-kinesis';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { DynamoDbSource } from './dynamodb.js';
import { KafkaSource } from './kafka.js';
import type { InboxKafkaSourceOptions } from './kafka.js';
import { KinesisSource } from './kinesis.js';
import type { InboxSource } from './source.js';
import { SqsSource } from './sqs.js';
import type { InboxSqsSourceOptions } from './sqs.js';
import type { InboxStreamSourceOptions } from './stream.js';

/**
 * The sources a consumer can read (InboxConsumer's and InboxDsqlConsumer's `source`), each with its own settings and
 * no other source's, as aws-cdk-lib's `SqsEventSource`, `KinesisEventSource` and `ManagedKafkaEventSource` take
 * them. Every source reports failed records back (partial batch responses; for Kafka in provisioned mode); a stream
 * also bisects a failing batch, retries it a bounded number of times and keeps what it discards in an on-failure
 * queue.
 *
 * @example
 * new InboxConsumer(this, 'Orders', {
 *   database,
 *   source: InboxSources.sqs(queue.queue, { deadLetterQueue: queue.deadLetterQueue, maxConcurrency: 5 }),
 *   consumerName: 'orders',
 *   entry: 'src/orders.ts',
 * });
 * @example
 * source: InboxSources.kinesis(stream, { startingPosition: lambda.StartingPosition.LATEST, retryAttempts: 3 })
 */
export class InboxSources {
  /**
   * An SQS queue, standard or FIFO: batches of up to 10 records (a FIFO queue's limit), at most 5 concurrent
   * invocations unless told otherwise, partial batch responses. Synth checks the queue as it is synthesized: its
   * visibility timeout against the function's timeout, a FIFO queue's dead-letter queue, batch size and window.
   *
   * @example
   * InboxSources.sqs(queue.queue, { deadLetterQueue: queue.deadLetterQueue, batchSize: 10, maxConcurrency: 5 })
   */
  public static sqs(queue: sqs.IQueue, options: InboxSqsSourceOptions = {}): InboxSource {
    return new SqsSource(queue, options);
  }

  /**
   * A Kinesis data stream, from its trim horizon unless told otherwise.
   *
   * @example
   * InboxSources.kinesis(new kinesis.Stream(this, 'Clicks', { encryption: kinesis.StreamEncryption.MANAGED }))
   */
  public static kinesis(stream: kinesis.IStream, options: InboxStreamSourceOptions = {}): InboxSource {
    return new KinesisSource(stream, options);
  }

  /**
   * The stream of a DynamoDB table, which must have one (`stream` on `Table`, `dynamoStream` on `TableV2`, or
   * `tableStreamArn` when imported): refused with the fix otherwise.
   *
   * @example
   * InboxSources.dynamoDb(table, { retryAttempts: 5 })
   */
  public static dynamoDb(table: dynamodb.ITable, options: Omit<InboxStreamSourceOptions, 'startingPositionTimestamp'> = {}): InboxSource {
    return new DynamoDbSource(table, options);
  }

  /**
   * A topic of an Amazon MSK cluster (provisioned or serverless), by the cluster's ARN.
   *
   * @example
   * InboxSources.msk(cluster.attrArn, { topic: 'orders', topicRetention: Duration.days(7) })
   */
  public static msk(
    clusterArn: string,
    options: Omit<InboxKafkaSourceOptions, 'authenticationMethod' | 'rootCACertificate' | 'vpc' | 'vpcSubnets' | 'securityGroup'>,
  ): InboxSource {
    return new KafkaSource('InboxSources.msk', { clusterArn }, options);
  }

  /**
   * A topic on self-managed Kafka brokers, by their `host:port` bootstrap addresses.
   *
   * @example
   * InboxSources.selfManagedKafka(['broker-1.example.com:9096'], { topic: 'orders', topicRetention: Duration.days(7), secret })
   */
  public static selfManagedKafka(bootstrapServers: readonly string[], options: InboxKafkaSourceOptions): InboxSource {
    return new KafkaSource('InboxSources.selfManagedKafka', { bootstrapServers }, options);
  }

  private constructor() {}
}
