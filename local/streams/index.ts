/**
 * The local runtime for stream sources (package export `sqs-inbox/local/streams`): in-process models of
 * Kinesis Data Streams, a DynamoDB table with its stream, and Kafka (MSK or self-managed), and Lambda's
 * event source mappings for them, on an injectable clock with fault hooks, as SqsEventSource is for SQS.
 * What a scenario of your own writes and runs; how a mapping reads a model (shard reads, offsets, change
 * signals) is internal.
 */
// First: before any module below makes an SDK client.
import '../quiet-sdk.js';

export { StreamEventSource } from './stream-event-source.js';
export type { StreamEventSourceOptions } from './options.js';
export type { StreamEventSourceStats } from './types.js';
// The clock a stream source's options name.
export type { Clock } from '../sqs/clock.js';

export { KinesisModel } from './kinesis/model.js';
export { KinesisEventSource } from './kinesis/event-source.js';

export { DynamoDbModel } from './dynamodb/model.js';
export { DynamoDbEventSource } from './dynamodb/event-source.js';

export { KafkaModel } from './kafka/model.js';
export { KafkaEventSource } from './kafka/event-source.js';
