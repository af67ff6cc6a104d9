import type { DynamoDBRecord, KinesisStreamRecord } from 'aws-lambda';
import type { KafkaRecord } from '../../lambda/inbox/sources/kafka.js';
import { DynamoDbEventSource } from '../streams/dynamodb/event-source.js';
import { DynamoDbModel } from '../streams/dynamodb/model.js';
import { KafkaEventSource } from '../streams/kafka/event-source.js';
import { KafkaModel } from '../streams/kafka/model.js';
import { KinesisEventSource } from '../streams/kinesis/event-source.js';
import { KinesisModel } from '../streams/kinesis/model.js';
import type { StreamEventSourceOptions } from '../streams/options.js';
import type { StreamEventSource } from '../streams/stream-event-source.js';

/** The stream sources a stream scenario runs on. */
export const STREAM_SOURCES = ['kinesis', 'dynamodb', 'kafka'] as const;
/** One of {@link STREAM_SOURCES}. */
export type StreamSourceName = (typeof STREAM_SOURCES)[number];

/** One record as the producer writes it. */
export interface StreamWrite {
  /** The message's business id, sent as Kafka's `idempotency-key` header. */
  readonly key: string;
  /** Its lane: Kinesis's partition key, Kafka's record key, DynamoDB's partition key value. */
  readonly lane: string;
  /** Kinesis's data and Kafka's value (its JSON when an object); DynamoDB's item, which must be an object. */
  readonly body: string | object;
}

/** What a run needs of a stream: a producer, and an event source mapping for a handler. */
export interface StreamSource {
  /** Lanes (shards, partitions) the records spread over. */
  readonly lanes: number;
  /**
   * Whether a producer's retry shows on this stream as a second record with the same key and body:
   * Kinesis and Kafka append it again; DynamoDB writes no stream record for a write that changes nothing.
   */
  readonly resends: boolean;
  /** Writes one record (again, for a producer's retry). */
  put(write: StreamWrite): void;
  /** The event source mapping, not started, over `handler`. */
  eventSource(handler: (event: never, context: never) => unknown, options: CommonStreamOptions): StreamEventSource<unknown, unknown>;
  /** The id of a Lambda record, to decide faults by: lane and position. */
  recordId(record: unknown): string;
}

/** Where a user's DynamoDB items live: the table's partition key attribute. */
export interface StreamSourceSettings {
  /** The DynamoDB table's partition key attribute; an item without it gets its message's lane. @default 'pk' */
  readonly partitionKey?: string | undefined;
}

/** The event source mapping settings a run sets, the same for every source. */
export type CommonStreamOptions = Pick<
  StreamEventSourceOptions<unknown, unknown>,
  'batchSize' | 'functionTimeoutMs' | 'retryDelayMs' | 'beforeCheckpoint' | 'functionName'
>;

const LANES = 4;
/** A stream on a fresh in-process model: Kinesis, a DynamoDB table's stream, or a Kafka topic. */
export function streamSource(name: StreamSourceName, settings: StreamSourceSettings = {}): StreamSource {
  if (name === 'kinesis') return kinesisStream();
  if (name === 'dynamodb') return dynamoDbStream(settings.partitionKey ?? 'pk');
  return kafkaTopic();
}

const text = (body: string | object) => (typeof body === 'string' ? body : JSON.stringify(body));

function kinesisStream(): StreamSource {
  const model = new KinesisModel();
  model.createStream('records', { shardCount: LANES });
  return {
    lanes: LANES,
    resends: true,
    // The lane is the partition key: its records share a shard, in production order. A re-put is the same record again.
    put: ({ lane, body }) => void model.putRecord({ stream: 'records', partitionKey: lane, data: text(body) }),
    eventSource: (handler, options) =>
      new KinesisEventSource({ model, stream: 'records', startingPosition: 'TRIM_HORIZON', ...options, handler } as never) as never,
    recordId: (record) => (record as KinesisStreamRecord).eventID,
  };
}

function dynamoDbStream(partitionKey: string): StreamSource {
  const model = new DynamoDbModel();
  // One item per lane: its changes stay on one shard, in order.
  model.createTable('items', { partitionKey, shardCount: LANES });
  return {
    lanes: LANES,
    // A retried PutItem of the same item writes no stream record.
    resends: false,
    put: ({ lane, body }) => {
      if (typeof body !== 'object')
        throw new TypeError(`runStreamScenario: on dynamodb, message() must give an object body (the item); got ${JSON.stringify(body)}.`);
      model.putItem('items', { [partitionKey]: lane, ...(body as Record<string, never>) });
    },
    eventSource: (handler, options) =>
      new DynamoDbEventSource({ model, table: 'items', startingPosition: 'TRIM_HORIZON', ...options, handler } as never) as never,
    recordId: (record) => `${(record as DynamoDBRecord).dynamodb?.SequenceNumber}`,
  };
}

function kafkaTopic(): StreamSource {
  const model = new KafkaModel();
  model.createTopic('records', { partitions: LANES });
  return {
    lanes: LANES,
    resends: true,
    // The lane is the record key (murmur2 picks the partition); a re-send is the same record again.
    put: ({ key, lane, body }) => void model.produce('records', { key: lane, value: text(body), headers: { 'idempotency-key': key } }),
    eventSource: (handler, options) =>
      new KafkaEventSource({
        model,
        topic: 'records',
        startingPosition: 'TRIM_HORIZON',
        maximumBatchingWindowMs: 0,
        pollerMode: 'provisioned',
        reportBatchItemFailures: true,
        ...options,
        handler,
      } as never) as never,
    recordId: (record) => `${(record as KafkaRecord).topic}-${(record as KafkaRecord).partition}@${(record as KafkaRecord).offset}`,
  };
}
