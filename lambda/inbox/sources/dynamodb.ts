import type { DynamoDBBatchResponse, DynamoDBRecord } from 'aws-lambda';
import { ParseError } from '../errors.js';
import { checkKey } from '../prepare/keys.js';
import { unmarshallImage } from './dynamodb-image.js';
import { notARecord, recordsArray } from './event-shape.js';
import type { InboxSource, SourceRecord } from './source.js';
import { KEY_OPTION, streamKeyStrategy } from './stream-keys.js';
import type { StreamKeyStrategy } from './stream-keys.js';
import { sequenceNumberReport } from './stream-report.js';

/** A DynamoDB Streams change as `dynamoDbInbox` hands it to `apply` by default: images unmarshalled. */
export interface DynamoDbChange {
  /** INSERT, MODIFY or REMOVE. */
  readonly eventName: 'INSERT' | 'MODIFY' | 'REMOVE';
  /** The item's key attributes. */
  readonly keys: Record<string, unknown>;
  /** The item after the change (absent for REMOVE, or when the stream view type leaves it out). */
  readonly newImage?: Record<string, unknown> | undefined;
  /** The item before the change (absent for INSERT, or when the stream view type leaves it out). */
  readonly oldImage?: Record<string, unknown> | undefined;
}

/**
 * How a DynamoDB Streams record's key is chosen. `'event-id'` (the default): the record's `eventID`,
 * unique per stream record, so Lambda's retries of a change are caught. `{ field }` reads the JSON body,
 * which for this source is the change as `dynamoDbInbox` describes it, e.g. `{ field: 'newImage.requestId' }`.
 */
export type DynamoDbKeyStrategy = StreamKeyStrategy<DynamoDBRecord, 'event-id'>;

const EXPECTED = {
  handler: 'dynamoDbInbox()',
  sources: ['aws:dynamodb'],
  events: 'DynamoDB Streams events',
  trigger: 'a DynamoDB Streams event source mapping with ReportBatchItemFailures',
};

/** DynamoDB Streams: records named by sequence number, the shard as lane, failures reported as the first failed sequence number. */
export const dynamoDbInboxSource: InboxSource<DynamoDBRecord, DynamoDBBatchResponse, DynamoDbKeyStrategy> = {
  name: 'dynamodb',
  handlerName: 'dynamoDbInbox',
  options: KEY_OPTION,
  countsDeliveries: false,
  redeliveredBy: 'Lambda',
  idName: 'sequenceNumber',
  records: (event) => (recordsArray(event, EXPECTED) as readonly DynamoDBRecord[]).map(sourceRecord),
  keyStrategy: (option) =>
    streamKeyStrategy<DynamoDBRecord>(
      option,
      { name: 'event-id', keyOf: (record) => checkKey(record.raw?.eventID, 'eventID') },
      undefined,
      // `{ field: 'newImage.requestId' }` reads the change as apply sees it, images unmarshalled.
      (record) => parseChange(record.body),
    ),
  parse: (body) => parseChange(body),
  respond: sequenceNumberReport,
  parkedAttributes: (record) => ({ record: withoutImages(record) }),
  fromParked: (parked) => sourceRecord(withImages(parked.attributes.record as DynamoDBRecord, parked.body), 0),
};

/**
 * The record as the parked table keeps it: without its key and images, which the payload column holds as
 * the change's JSON, so that a change of two 400 KB images is not stored twice.
 */
function withoutImages(record: DynamoDBRecord): DynamoDBRecord {
  const change = record?.dynamodb;
  if (typeof change !== 'object' || change === null) return record;
  const { Keys: _keys, NewImage: _new, OldImage: _old, ...rest } = change;
  return { ...record, dynamodb: rest };
}

/** The parked record with its key and images put back from the change it was parked with. */
function withImages(record: DynamoDBRecord, body: string): DynamoDBRecord {
  const change = record?.dynamodb;
  if (typeof change !== 'object' || change === null) return record;
  const { Keys, NewImage, OldImage } = JSON.parse(body) as NonNullable<DynamoDBRecord['dynamodb']>;
  return { ...record, dynamodb: { ...change, Keys, NewImage, OldImage } };
}

/** The change as `apply` gets it by default: its images unmarshalled. */
function parseChange(body: string): DynamoDbChange {
  const change = JSON.parse(body) as { eventName: DynamoDbChange['eventName']; Keys?: never; NewImage?: never; OldImage?: never };
  return {
    eventName: change.eventName,
    keys: unmarshallImage(change.Keys) ?? {},
    newImage: unmarshallImage(change.NewImage),
    oldImage: unmarshallImage(change.OldImage),
  };
}

function sourceRecord(record: DynamoDBRecord, index: number): SourceRecord<DynamoDBRecord> {
  const change = record?.dynamodb;
  const sequenceNumber = typeof change?.SequenceNumber === 'string' && change.SequenceNumber !== '' ? change.SequenceNumber : undefined;
  const described = typeof change === 'object' && change !== null;
  // The change as the body: what is hashed with the claim and what the default parse unmarshalls. JSON
  // escapes U+0000 and lone surrogates, so its text is always well-formed and its bytes UTF-8.
  const body = described ? JSON.stringify({ eventName: record.eventName, Keys: change.Keys, NewImage: change.NewImage, OldImage: change.OldImage }) : '';
  return {
    raw: record,
    index,
    id: sequenceNumber,
    body,
    payload: Buffer.from(body),
    bodyError:
      notARecord(record, 'DynamoDB Streams') ??
      (described ? undefined : new ParseError('the record has no dynamodb object; DynamoDB Streams records from Lambda always carry one')),
    // One batch comes from one shard, which the record does not name: the whole batch is one lane.
    lane: 'shard',
    groupId: undefined,
    attempt: 1,
  };
}
