import { Duration, Validations } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { SqsDlq } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { ProvisionedPollerConfig } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { durationSeconds } from '../invariants.js';
import { SourceBinder } from './source.js';
import type { AttachedSource, SourceTarget } from './source.js';

/**
 * Options of a stream source: {@link InboxSources.kinesis} takes them all, {@link InboxSources.dynamoDb} all but
 * `startingPositionTimestamp`, and the Kafka sources all but `parallelizationFactor` and `redeliveryWindow`
 * ({@link InboxKafkaSourceOptions}). Every stream source reports failed records back (partial batch responses;
 * Kafka in provisioned mode), bisects a failing batch, retries it a bounded number of times and keeps what it
 * discards in its on-failure destination.
 */
export interface InboxStreamSourceOptions {
  /**
   * Records per batch (at most 10,000).
   * @default 100 (Lambda's default for streams)
   */
  readonly batchSize?: number | undefined;
  /**
   * How long the event source waits to fill a batch.
   * @default - no batching window (Kafka: Lambda's 500 ms)
   */
  readonly maxBatchingWindow?: Duration | undefined;
  /**
   * Where a new event source mapping starts reading.
   * @default lambda.StartingPosition.TRIM_HORIZON: every record the stream holds, none skipped
   */
  readonly startingPosition?: lambda.StartingPosition | undefined;
  /**
   * The Unix time in seconds to start from with `StartingPosition.AT_TIMESTAMP`. Kinesis and Kafka: DynamoDB
   * Streams cannot start at a timestamp, and its options do not take one.
   * @default - none
   */
  readonly startingPositionTimestamp?: number | undefined;
  /**
   * Retries of a failing batch (from its first failed record) before its records go to the on-failure destination.
   * -1 retries without bound, until the stream drops the record.
   * @default 10: the bound Lambda itself applies to Kafka with an on-failure destination; the destination keeps
   * what is discarded, and the inbox makes a replay from the stream safe
   */
  readonly retryAttempts?: number | undefined;
  /**
   * Split a batch in two when the invocation fails as a whole (a crash or a timeout), to isolate the record that
   * causes it.
   * @default true
   */
  readonly bisectBatchOnError?: boolean | undefined;
  /**
   * Records older than this are discarded to the on-failure destination (60 seconds to 7 days).
   * @default - no limit
   */
  readonly maxRecordAge?: Duration | undefined;
  /**
   * Batches of one shard processed at once (1 to 10); records of one partition key stay in order. Kinesis and
   * DynamoDB Streams: a Kafka topic runs one batch per partition at a time.
   * @default 1
   */
  readonly parallelizationFactor?: number | undefined;
  /**
   * Where the event source mapping sends the records it discards (after `retryAttempts`, or older than
   * `maxRecordAge`): a queue, which the dead-letter alarm (InboxAlarms) watches and the consumer exposes as its
   * `deadLetterQueue`, or another destination (`S3OnFailureDestination`, which also keeps the records themselves,
   * `SnsDlq`, or `KafkaDlq` for Kafka), which no alarm watches.
   * @default - a new queue, encrypted, TLS only, keeping messages 14 days
   */
  readonly onFailure?: sqs.IQueue | lambda.IEventSourceDlq | undefined;
  /**
   * The longest time after writing that the stream can still deliver a record to this consumer: the cleanup's
   * retention must exceed it. Kinesis and DynamoDB Streams: a Kafka topic's is its `topicRetention`.
   * @default - Kinesis: the stream's retention period, 365 days (Kinesis' maximum) for an imported stream;
   * DynamoDB Streams: 24 hours
   */
  readonly redeliveryWindow?: Duration | undefined;
  /**
   * The least time one record takes to claim and apply, used to check at synth that a full batch of one shard or
   * partition, whose records run one after another, can start within the function timeout.
   * @default Duration.millis(40): the four Data API calls of a per-record transaction at 10 ms each
   */
  readonly minRecordDuration?: Duration | undefined;
}

/** Lambda's default batch size for stream sources. */
export const STREAM_DEFAULT_BATCH_SIZE = 100;
/**
 * Retries of a failing batch before its records go to the on-failure destination. Lambda retries without bound by
 * default; 10 is the bound Lambda itself applies to a Kafka mapping with an on-failure destination and unbounded
 * retries (https://docs.aws.amazon.com/lambda/latest/dg/kafka-on-failure-destination.html). A discarded record is
 * kept by the destination and can be replayed while the stream holds it: the inbox makes that replay safe.
 */
export const STREAM_DEFAULT_RETRY_ATTEMPTS = 10;
/**
 * The least time one record of a stream batch is assumed to take: the four Data API calls of a per-record
 * transaction (BeginTransaction, claim, effect, CommitTransaction) at 10 ms each, an optimistic floor.
 */
export const DEFAULT_MIN_RECORD_DURATION = Duration.millis(40);

/** The stream options as the event source takes them, defaults resolved. */
export interface StreamSettings {
  readonly batchSize: number;
  readonly maxBatchingWindow?: Duration | undefined;
  readonly startingPosition: lambda.StartingPosition;
  readonly startingPositionTimestamp?: number | undefined;
  /** `undefined`: left unset (on-demand Kafka, which takes no error handling controls). */
  readonly retryAttempts?: number | undefined;
  /** `undefined`: left unset (on-demand Kafka). */
  readonly bisectBatchOnError?: boolean | undefined;
  readonly maxRecordAge?: Duration | undefined;
  readonly parallelizationFactor?: number | undefined;
  /** The on-failure destination. */
  readonly onFailure: lambda.IEventSourceDlq;
  /** The on-failure queue, when the destination is one (the one created here, or the queue given as `onFailure`). */
  readonly deadLetterQueue?: sqs.IQueue | undefined;
}

/**
 * The settings as aws-cdk-lib's stream event sources take them: partial batch responses unless `mode` says otherwise,
 * and a Kafka mapping's provisioned pollers.
 */
export function streamEventSourceProps(
  settings: StreamSettings,
  mode: { readonly pollers?: ProvisionedPollerConfig | undefined; readonly reportBatchItemFailures: boolean } = { reportBatchItemFailures: true },
) {
  return {
    batchSize: settings.batchSize,
    startingPosition: settings.startingPosition,
    ...(settings.startingPositionTimestamp === undefined ? {} : { startingPositionTimestamp: settings.startingPositionTimestamp }),
    ...(settings.maxBatchingWindow === undefined ? {} : { maxBatchingWindow: settings.maxBatchingWindow }),
    ...(mode.pollers === undefined ? {} : { provisionedPollerConfig: mode.pollers }),
    reportBatchItemFailures: mode.reportBatchItemFailures,
    ...(settings.bisectBatchOnError === undefined ? {} : { bisectBatchOnError: settings.bisectBatchOnError }),
    ...(settings.retryAttempts === undefined ? {} : { retryAttempts: settings.retryAttempts }),
    ...(settings.maxRecordAge === undefined ? {} : { maxRecordAge: settings.maxRecordAge }),
    ...(settings.parallelizationFactor === undefined ? {} : { parallelizationFactor: settings.parallelizationFactor }),
    onFailure: settings.onFailure,
  };
}

/**
 * A stream source: Kinesis, DynamoDB Streams, Kafka. Its on-failure queue is made for each consumer it binds to,
 * in the consumer's scope, unless the options name a destination.
 */
export abstract class StreamSource extends SourceBinder {
  constructor(protected readonly options: InboxStreamSourceOptions) {
    super();
  }

  protected override get recordSeconds(): number | undefined {
    return durationSeconds(this.options.minRecordDuration ?? DEFAULT_MIN_RECORD_DURATION);
  }

  /**
   * Kafka on demand takes no error handling controls: retries and bisect are then left unset unless given (and then
   * refused at synth).
   */
  protected get takesErrorHandling(): boolean {
    return true;
  }

  protected attach(target: SourceTarget): AttachedSource {
    const settings = this.#settings(target.consumer);
    return { ...this.attachStream(target, settings), deadLetterQueue: settings.deadLetterQueue };
  }

  /** Creates the stream's event source from `settings` and adds it to `target.fn`. */
  protected abstract attachStream(target: SourceTarget, settings: StreamSettings): Omit<AttachedSource, 'deadLetterQueue'>;

  /**
   * Resolves the options with their defaults, creating the on-failure queue when no destination is given:
   * encrypted, TLS only, 14 days (SQS's longest), acknowledged for cdk-nag as what it is, a dead-letter queue.
   */
  #settings(scope: Construct): StreamSettings {
    const options = this.options;
    const given = options.onFailure;
    let deadLetterQueue = given === undefined || isDestination(given) ? undefined : given;
    if (given === undefined) {
      const created = new sqs.Queue(scope, 'DeadLetterQueue', {
        encryption: sqs.QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
        retentionPeriod: Duration.days(14),
      });
      acknowledgeDeadLetterQueue(created);
      deadLetterQueue = created;
    }
    const errorHandling = this.takesErrorHandling;
    return {
      batchSize: options.batchSize ?? STREAM_DEFAULT_BATCH_SIZE,
      ...(options.maxBatchingWindow === undefined ? {} : { maxBatchingWindow: options.maxBatchingWindow }),
      startingPosition: options.startingPosition ?? lambda.StartingPosition.TRIM_HORIZON,
      ...(options.startingPositionTimestamp === undefined ? {} : { startingPositionTimestamp: options.startingPositionTimestamp }),
      ...(options.retryAttempts !== undefined || errorHandling ? { retryAttempts: options.retryAttempts ?? STREAM_DEFAULT_RETRY_ATTEMPTS } : {}),
      ...(options.bisectBatchOnError !== undefined || errorHandling ? { bisectBatchOnError: options.bisectBatchOnError ?? true } : {}),
      ...(options.maxRecordAge === undefined ? {} : { maxRecordAge: options.maxRecordAge }),
      ...(options.parallelizationFactor === undefined ? {} : { parallelizationFactor: options.parallelizationFactor }),
      onFailure: given !== undefined && isDestination(given) ? given : new SqsDlq(deadLetterQueue!),
      ...(deadLetterQueue === undefined ? {} : { deadLetterQueue }),
    };
  }
}

/** An on-failure destination other than a bare queue: an event source's DLQ binds itself to the mapping. */
function isDestination(onFailure: sqs.IQueue | lambda.IEventSourceDlq): onFailure is lambda.IEventSourceDlq {
  return typeof (onFailure as Partial<lambda.IEventSourceDlq>).bind === 'function';
}

/** cdk-nag's SQS3 counts only queues named in a redrive policy or a function's DLQ config as dead-letter queues. */
function acknowledgeDeadLetterQueue(queue: sqs.Queue): void {
  Validations.of(queue).acknowledge({
    id: 'AwsSolutions-SQS3',
    reason:
      "This queue is the on-failure destination of the consumer's event source mapping: it is itself the dead-letter queue " +
      '(cdk-nag recognises only redrive policies and function DLQ configs as such).',
  });
}
