import type { DynamoDBRecord, KinesisStreamRecord } from 'aws-lambda';
import { dynamoDbInbox, kafkaHeaders, kafkaInbox, kinesisInbox } from '../../lambda/inbox/index.js';
import type { DataApiSession, DatabaseTarget, InboxLogger, InboxMetrics, InboxTransaction } from '../../lambda/inbox/index.js';
import { dynamoDbSource } from '../../lambda/inbox/sources/dynamodb.js';
import { kafkaSource } from '../../lambda/inbox/sources/kafka.js';
import type { KafkaRecord } from '../../lambda/inbox/sources/kafka.js';
import { kinesisSource } from '../../lambda/inbox/sources/kinesis.js';
import { shipOrder } from '../../demo/functions/ship-order.js';
import { batchHandler, consumeNaively } from '../naive.js';
import { DynamoDbEventSource } from '../streams/dynamodb/event-source.js';
import { DynamoDbModel } from '../streams/dynamodb/model.js';
import { KafkaEventSource } from '../streams/kafka/event-source.js';
import { KafkaModel } from '../streams/kafka/model.js';
import { KinesisEventSource } from '../streams/kinesis/event-source.js';
import { KinesisModel } from '../streams/kinesis/model.js';
import type { StreamEventSourceOptions } from '../streams/options.js';
import type { StreamEventSource } from '../streams/stream-event-source.js';
import { park } from '../../lambda/inbox/parked/index.js';

/** The stream sources the demo runs on. */
export const STREAM_SOURCES = ['kinesis', 'dynamodb', 'kafka'] as const;
/** One of {@link STREAM_SOURCES}. */
export type StreamSourceName = (typeof STREAM_SOURCES)[number];

/** The two consumers compared: the inbox (claim and effect in one transaction) and the naive check, apply, record. */
export type StreamPattern = 'inbox' | 'naive';

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

/** A stream of the demo, with the handler of each pattern. */
export interface StreamDemoSource extends StreamSource {
  /** The handler of `pattern` for this source. */
  handler(pattern: StreamPattern, environment: { database: DatabaseTarget; session: DataApiSession }): (event: never, context: never) => unknown;
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
const CONSUMER = 'stream-demo-orders';
const silentLogger: InboxLogger = { debug() {}, info() {}, warn() {}, error() {} };
const silentMetrics: InboxMetrics = { addMetric() {}, publishStoredMetrics() {} };
// As the SQS demo's inbox consumers: short calls, resume retries through an auto-pause, park a bad body.
const inboxSettings = {
  consumer: CONSUMER,
  onPermanentError: park,
  callTimeoutMs: 2000,
  deadlineMarginMs: 100,
  resumeDelaysMs: [100, 200, 300, 400, 500],
  logger: silentLogger,
  metrics: silentMetrics,
} as const;

/** Where the effect becomes durable for the naive consumer: shipOrder's autocommit upsert. */
export const NAIVE_SHIP_STATEMENT = (sql: string): boolean => sql.includes('INSERT INTO public.orders');

/** A stream on a fresh in-process model: Kinesis, a DynamoDB table's stream, or a Kafka topic. */
export function streamSource(name: StreamSourceName, settings: StreamSourceSettings = {}): StreamSource {
  if (name === 'kinesis') return kinesisStream();
  if (name === 'dynamodb') return dynamoDbStream(settings.partitionKey ?? 'pk');
  return kafkaTopic();
}

/** A source of the demo, on a fresh in-process model. */
export function streamDemoSource(name: StreamSourceName): StreamDemoSource {
  if (name === 'kinesis') return kinesis();
  if (name === 'dynamodb') return dynamodb();
  return kafka();
}

type OrderBody = { orderId?: unknown };

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
      if (typeof body !== 'object') throw new TypeError(`runStreamScenario: on dynamodb, message() must give an object body (the item); got ${JSON.stringify(body)}.`);
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

function kinesis(): StreamDemoSource {
  const orderOf = (record: KinesisStreamRecord) => JSON.parse(Buffer.from(record.kinesis.data, 'base64').toString('utf8')) as OrderBody;
  return {
    ...kinesisStream(),
    handler: (pattern, { database, session }) =>
      pattern === 'inbox'
        ? (kinesisInbox<OrderBody>({ ...inboxSettings, database, key: { field: 'orderId' }, apply: (tx, m) => shipOrder(tx, m.body.orderId, m.key) }) as never)
        : naive(session, kinesisSource, (record: KinesisStreamRecord) => String(orderOf(record).orderId), (record) => orderOf(record).orderId),
    recordId: (record) => (record as KinesisStreamRecord).eventID,
  };
}

function dynamodb(): StreamDemoSource {
  // The producer's key, from the new image. A function: the record's body is the change with its images
  // still marshalled, so a field path would be NewImage.orderId.S.
  const orderIdOf = (record: DynamoDBRecord) => record.dynamodb?.NewImage?.orderId?.S;
  const keyOf = (record: DynamoDBRecord) => String(orderIdOf(record));
  return {
    // One item per customer, rewritten by each order. A retried PutItem of the same item writes no stream
    // record. One that changed an attribute (a retry timestamp) would: the inbox would then see the
    // order's key with another body, and park it as a key collision, which is its rule, not a double effect.
    ...dynamoDbStream('customerId'),
    handler: (pattern, { database, session }) =>
      pattern === 'inbox'
        ? (dynamoDbInbox({
            ...inboxSettings,
            database,
            key: keyOf,
            apply: async (tx, { body, key }) => {
              if (body.eventName !== 'REMOVE') await shipOrder(tx, body.newImage?.orderId, key);
            },
          }) as never)
        : naive(session, dynamoDbSource, keyOf, (record: DynamoDBRecord) => (record.eventName === 'REMOVE' ? undefined : orderIdOf(record))),
  };
}

function kafka(): StreamDemoSource {
  const orderOf = (record: KafkaRecord) => JSON.parse(Buffer.from(record.value ?? '', 'base64').toString('utf8')) as OrderBody;
  const keyOf = (record: KafkaRecord) => kafkaHeaders(record)['idempotency-key'] ?? '';
  return {
    ...kafkaTopic(),
    handler: (pattern, { database, session }) =>
      pattern === 'inbox'
        ? (kafkaInbox<OrderBody>({
            ...inboxSettings,
            database,
            key: { header: 'idempotency-key' },
            reportBatchItemFailures: true,
            apply: (tx, m) => shipOrder(tx, m.body.orderId, m.key),
          }) as never)
        : naive(session, kafkaSource(true), keyOf, (record: KafkaRecord) => orderOf(record).orderId),
  };
}

/**
 * The naive baseline on a stream: the inbox's own batch planning and failure report for the source, and
 * per record check, ship, record, each an autocommit call. It ships with the same shipOrder as the inbox,
 * outside any transaction.
 */
function naive<Raw>(
  session: DataApiSession,
  source: Parameters<typeof batchHandler<Raw, unknown, unknown>>[2],
  keyOf: (record: Raw) => string,
  orderIdOf: (record: Raw) => unknown,
): (event: never, context: never) => unknown {
  const autocommit = { execute: (sql: string, params?: Record<string, unknown>) => session.execute(sql, params as never) } as unknown as InboxTransaction;
  return batchHandler<Raw, unknown, unknown>(
    (record) =>
      consumeNaively(
        {
          session,
          processedTable: 'public.naive_processed',
          keyOf,
          effect: async (r) => {
            const orderId = orderIdOf(r);
            if (orderId !== undefined) await shipOrder(autocommit, orderId, keyOf(r));
          },
        },
        record,
      ),
    { concurrency: LANES, mayStart: (context) => (context?.getRemainingTimeInMillis() ?? Infinity) > 100 },
    source,
  ) as never;
}
