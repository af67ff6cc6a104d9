import { Duration, Validations } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { SqsDlq } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct, IConstruct } from 'constructs';
import type { InvariantViolation, RedeliveryWindowSource } from '../invariants.js';
import type { InboxSourceKind } from './stream-invariants.js';
import { InboxConstructError } from '../errors.js';

/**
 * One source of an InboxConsumer, wired to its function: the event source, what the handler is told about it,
 * and what can be known at synth about how long a record may come back.
 */
export interface ConsumerSource {
  readonly kind: InboxSourceKind;
  /** The event source added to the function. */
  readonly eventSource: lambda.IEventSource;
  /** Where records that fail past the retries go, when it is a queue (alarmed): SQS's dead-letter queue, or a stream's on-failure queue. */
  readonly deadLetterQueue?: sqs.IQueue | undefined;
  /** How the redelivery window is made up, for the retention check. */
  readonly window: RedeliveryWindowSource;
  /** The longest time a record can still be delivered after it was written, in seconds; `undefined` for a token. */
  redeliveryWindowSeconds(): number | undefined;
  /** Source-specific invariants, checked at synth. */
  violations(): InvariantViolation[];
}

/** The stream options of InboxConsumerProps, resolved. */
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
  /** The on-failure queue, when the destination is one (the one created here, or `deadLetterQueue`). */
  readonly deadLetterQueue?: sqs.IQueue | undefined;
}

/** The stream options InboxConsumer takes, as given. */
export interface StreamOptions {
  readonly batchSize?: number | undefined;
  readonly maxBatchingWindow?: Duration | undefined;
  readonly startingPosition?: lambda.StartingPosition | undefined;
  readonly startingPositionTimestamp?: number | undefined;
  readonly retryAttempts?: number | undefined;
  readonly bisectBatchOnError?: boolean | undefined;
  readonly maxRecordAge?: Duration | undefined;
  readonly parallelizationFactor?: number | undefined;
  readonly deadLetterQueue?: sqs.IQueue | undefined;
  readonly onFailure?: lambda.IEventSourceDlq | undefined;
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
 * Resolves the stream options with their defaults, creating the on-failure queue when no destination is given:
 * encrypted, TLS only, 14 days (SQS's longest), acknowledged for cdk-nag as what it is, a dead-letter queue.
 */
export function streamSettings(scope: Construct, options: StreamOptions, forKafkaOnDemand = false): StreamSettings {
  let deadLetterQueue = options.deadLetterQueue;
  if (deadLetterQueue === undefined && options.onFailure === undefined) {
    const created = new sqs.Queue(scope, 'DeadLetterQueue', {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    acknowledgeDeadLetterQueue(created);
    deadLetterQueue = created;
  }
  return {
    batchSize: options.batchSize ?? STREAM_DEFAULT_BATCH_SIZE,
    ...(options.maxBatchingWindow === undefined ? {} : { maxBatchingWindow: options.maxBatchingWindow }),
    startingPosition: options.startingPosition ?? lambda.StartingPosition.TRIM_HORIZON,
    ...(options.startingPositionTimestamp === undefined ? {} : { startingPositionTimestamp: options.startingPositionTimestamp }),
    // On-demand Kafka takes no error handling controls: left unset unless given (and then refused at synth).
    ...(options.retryAttempts !== undefined || !forKafkaOnDemand ? { retryAttempts: options.retryAttempts ?? STREAM_DEFAULT_RETRY_ATTEMPTS } : {}),
    ...(options.bisectBatchOnError !== undefined || !forKafkaOnDemand ? { bisectBatchOnError: options.bisectBatchOnError ?? true } : {}),
    ...(options.maxRecordAge === undefined ? {} : { maxRecordAge: options.maxRecordAge }),
    ...(options.parallelizationFactor === undefined ? {} : { parallelizationFactor: options.parallelizationFactor }),
    onFailure: options.onFailure ?? new SqsDlq(deadLetterQueue!),
    ...(deadLetterQueue === undefined ? {} : { deadLetterQueue }),
  };
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

/** The one event source mapping of a consumer's function. */
export function mappingOf(fn: IConstruct): lambda.CfnEventSourceMapping {
  const mappings = fn.node.findAll().filter((c): c is lambda.CfnEventSourceMapping => c instanceof lambda.CfnEventSourceMapping);
  if (mappings.length !== 1) {
    throw InboxConstructError.of(`InboxConsumer ${fn.node.path}`, [`expected one event source mapping on the function, found ${mappings.length}.`], 'line');
  }
  return mappings[0]!;
}
