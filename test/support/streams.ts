import type { AttributeValue, DynamoDBRecord, DynamoDBStreamEvent, KinesisStreamEvent, KinesisStreamRecord, MSKEvent, MSKRecord } from 'aws-lambda';

// Builders of stream events as Lambda delivers them (shapes from the Lambda developer guide's samples).

let sequence = 0n;
/** A fresh sequence number of Kinesis' shape: 56 digits, increasing. */
export function nextSequenceNumber(): string {
  sequence += 1n;
  return (49590338271490256608559692538361571095921575989136588898n + sequence * 1000n).toString();
}

/** A Kinesis record of `shard` whose data is `body` (JSON unless a string). */
export function kinesisRecord(options: { body?: unknown; shard?: string; sequenceNumber?: string; partitionKey?: string } = {}): KinesisStreamRecord {
  const sequenceNumber = options.sequenceNumber ?? nextSequenceNumber();
  const shard = options.shard ?? 'shardId-000000000000';
  const text = typeof options.body === 'string' ? options.body : JSON.stringify(options.body ?? {});
  return {
    kinesis: {
      kinesisSchemaVersion: '1.0',
      partitionKey: options.partitionKey ?? 'pk-1',
      sequenceNumber,
      data: Buffer.from(text, 'utf8').toString('base64'),
      approximateArrivalTimestamp: 1_796_000_000.123,
    },
    eventSource: 'aws:kinesis',
    eventVersion: '1.0',
    eventID: `${shard}:${sequenceNumber}`,
    eventName: 'aws:kinesis:record',
    invokeIdentityArn: 'arn:aws:iam::123456789012:role/consumer',
    awsRegion: 'us-east-1',
    eventSourceARN: 'arn:aws:kinesis:us-east-1:123456789012:stream/orders',
  };
}

export const kinesisEvent = (records: KinesisStreamRecord[]): KinesisStreamEvent => ({ Records: records });

/** Marshals a plain object as a stream image, as DynamoDB does. */
export function marshall(item: Record<string, unknown>): Record<string, AttributeValue> {
  return Object.fromEntries(Object.entries(item).map(([name, value]) => [name, attribute(value)]));
}

function attribute(value: unknown): AttributeValue {
  if (value === null) return { NULL: true };
  if (typeof value === 'string') return { S: value };
  if (typeof value === 'number') return { N: String(value) };
  if (typeof value === 'boolean') return { BOOL: value };
  if (Array.isArray(value)) return { L: value.map(attribute) };
  return { M: marshall(value as Record<string, unknown>) };
}

let eventIds = 0;
/** A DynamoDB Streams record of a change to the item with key `{ id }`. */
export function dynamoDbRecord(options: {
  id: string;
  eventName?: 'INSERT' | 'MODIFY' | 'REMOVE';
  newImage?: Record<string, unknown>;
  oldImage?: Record<string, unknown>;
  sequenceNumber?: string;
  eventID?: string;
}): DynamoDBRecord {
  const eventName = options.eventName ?? 'INSERT';
  return {
    eventID: options.eventID ?? `${(++eventIds).toString(16).padStart(8, '0')}c4ca4238a0b923820dcc509a6f75849b`.slice(0, 32),
    eventName,
    eventVersion: '1.1',
    eventSource: 'aws:dynamodb',
    awsRegion: 'us-east-1',
    dynamodb: {
      ApproximateCreationDateTime: 1_796_000_000,
      Keys: marshall({ id: options.id }),
      ...(eventName !== 'REMOVE' ? { NewImage: marshall({ id: options.id, ...options.newImage }) } : {}),
      ...(eventName !== 'INSERT' ? { OldImage: marshall({ id: options.id, ...options.oldImage }) } : {}),
      SequenceNumber: options.sequenceNumber ?? nextDynamoDbSequenceNumber(),
      SizeBytes: 59,
      StreamViewType: 'NEW_AND_OLD_IMAGES',
    },
    eventSourceARN: 'arn:aws:dynamodb:us-east-1:123456789012:table/orders/stream/2026-11-30T00:00:00.000',
  };
}

export const dynamoDbEvent = (records: DynamoDBRecord[]): DynamoDBStreamEvent => ({ Records: records });

/** A Kafka record of `topic`/`partition` at `offset` whose value is `body` (JSON unless a string; null for a tombstone). */
export function kafkaRecord(options: {
  topic?: string;
  partition?: number;
  offset: number;
  body?: unknown;
  key?: string;
  headers?: Record<string, string>;
}): MSKRecord {
  const text = options.body === null ? null : typeof options.body === 'string' ? options.body : JSON.stringify(options.body ?? {});
  return {
    topic: options.topic ?? 'orders',
    partition: options.partition ?? 0,
    offset: options.offset,
    timestamp: 1_796_000_000_000,
    timestampType: 'CREATE_TIME',
    key: Buffer.from(options.key ?? 'k', 'utf8').toString('base64'),
    value: text === null ? (null as never) : Buffer.from(text, 'utf8').toString('base64'),
    headers: Object.entries(options.headers ?? {}).map(([name, value]) => ({ [name]: [...Buffer.from(value, 'utf8')] })),
  };
}

/** An MSK event holding `records`, grouped by topic-partition as Lambda groups them. */
export function kafkaEvent(records: MSKRecord[]): MSKEvent {
  const grouped: Record<string, MSKRecord[]> = {};
  for (const record of records) (grouped[`${record.topic}-${record.partition}`] ??= []).push(record);
  return {
    eventSource: 'aws:kafka',
    eventSourceArn: 'arn:aws:kafka:us-east-1:123456789012:cluster/orders/abcd1234-0123-4567-89ab-cdef01234567-1',
    bootstrapServers: 'b-1.orders.abc123.c2.kafka.us-east-1.amazonaws.com:9098',
    records: grouped,
  };
}

let dynamoDbSequence = 0n;
/**
 * A fresh DynamoDB Streams sequence number: 21 digits, increasing, distinct on every call. (The default of
 * `dynamoDbRecord` cuts a Kinesis sequence number to 21 digits, which leaves the same prefix for every record.)
 */
export function nextDynamoDbSequenceNumber(): string {
  dynamoDbSequence += 1n;
  return (300000000000000000000n + dynamoDbSequence * 100n).toString();
}
