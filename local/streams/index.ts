/**
 * The local runtime for stream sources (package export `sqs-inbox/local/streams`): in-process models of
 * Kinesis Data Streams, a DynamoDB table with its stream, and Kafka (MSK or self-managed), and Lambda's
 * event source mappings for them, on an injectable clock with fault hooks, as SqsEventSource is for SQS.
 */
// First: before any module below makes an SDK client.
import '../quiet-sdk.js';

export { ChangeSignal } from './change-signal.js';
export { StreamModelError } from './errors.js';
export { MAX_PAYLOAD_BYTES } from './batch-collector.js';
export { StreamEventSource } from './stream-event-source.js';
export type { OnFailureDestination } from './destination.js';
export type { StreamEventSourceOptions } from './options.js';
export type {
  DiscardCondition,
  PendingCheckpoint,
  StartingPosition,
  StreamDiscard,
  StreamEventSourceStats,
  StreamHandler,
  StreamInvocationOutcome,
  StreamInvocationResult,
} from './types.js';

export { KinesisModel } from './kinesis/model.js';
export type { KinesisDataRecord, KinesisModelOptions, KinesisShardInfo, KinesisStreamInfo, PutRecordInput, PutRecordResult } from './kinesis/model.js';
export { MAX_HASH_KEY, evenHashKeyRanges, hashKeyOf } from './kinesis/hash-keys.js';
export type { HashKeyRange } from './kinesis/hash-keys.js';
export { KinesisEventSource } from './kinesis/event-source.js';
export type { KinesisEventSourceOptions } from './kinesis/event-source.js';

export { DynamoDbModel } from './dynamodb/model.js';
export type { CreateTableOptions, DynamoDbModelOptions, DynamoDbStreamRecord, DynamoDbTableInfo, StreamViewType } from './dynamodb/model.js';
export { DynamoDbEventSource } from './dynamodb/event-source.js';
export type { DynamoDbEventSourceOptions } from './dynamodb/event-source.js';

export { KafkaModel } from './kafka/model.js';
export type { KafkaBytes, KafkaClusterKind, KafkaMessage, KafkaModelOptions, KafkaStoredRecord } from './kafka/model.js';
export { murmur2, partitionForKey } from './kafka/murmur2.js';
export { KafkaEventSource } from './kafka/event-source.js';
export type { KafkaBatchResponse, KafkaEvent, KafkaEventSourceOptions, KafkaPollerMode, KafkaRecord } from './kafka/event-source.js';
