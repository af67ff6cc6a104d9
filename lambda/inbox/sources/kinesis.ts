import type { KinesisStreamBatchResponse, KinesisStreamRecord } from 'aws-lambda';
import { ParseError } from '../errors.js';
import { checkKey } from '../prepare/keys.js';
import { parseJson } from '../prepare/json-body.js';
import { notARecord, recordsArray } from './event-shape.js';
import { withPayload, withoutPayload } from './parked-record.js';
import type { PayloadPath } from './parked-record.js';
import type { InboxSource, SourceRecord } from './source.js';
import { KEY_OPTION, streamKeyStrategy } from './stream-keys.js';
import type { StreamKeyStrategy } from './stream-keys.js';
import { sequenceNumberReport } from './stream-report.js';

/**
 * How a Kinesis record's key is chosen. `'sequence-number'` (the default): the shard and sequence number
 * (the record's `eventID`), so Lambda's retries of a record are caught; a producer's re-put is a new
 * record with a new sequence number, so give `{ field }` or a function for producer-assigned keys.
 */
export type KinesisKeyStrategy = StreamKeyStrategy<KinesisStreamRecord, 'sequence-number'>;

const EXPECTED = {
  handler: 'kinesisInbox()',
  sources: ['aws:kinesis'],
  events: 'Kinesis Data Streams events',
  trigger: 'a Kinesis event source mapping with ReportBatchItemFailures',
};

/** Kinesis: records named by sequence number, the shard as lane, failures reported as the first failed sequence number. */
export const kinesisInboxSource: InboxSource<KinesisStreamRecord, KinesisStreamBatchResponse, KinesisKeyStrategy> = {
  name: 'kinesis',
  handlerName: 'kinesisInbox',
  options: KEY_OPTION,
  countsDeliveries: false,
  redeliveredBy: 'Lambda',
  idName: 'sequenceNumber',
  records: (event) => (recordsArray(event, EXPECTED) as readonly KinesisStreamRecord[]).map(sourceRecord),
  keyStrategy: (option) =>
    streamKeyStrategy<KinesisStreamRecord>(option, {
      name: 'sequence-number',
      keyOf: (record) => {
        if (record.id === undefined) throw new ParseError('the record has no kinesis.sequenceNumber; Kinesis records from Lambda always carry one');
        return checkKey(record.lane ? `${record.lane}:${record.id}` : record.id, 'the shard and sequence number');
      },
    }),
  parse: (body) => parseJson(body),
  respond: sequenceNumberReport,
  parkedAttributes: (record) => ({ record: withoutPayload(record, DATA) }),
  fromParked: (parked) => sourceRecord(withPayload<KinesisStreamRecord>(parked, DATA), 0),
};

/** Where a Kinesis record keeps its payload, base64. */
const DATA: PayloadPath = ['kinesis', 'data'];

function sourceRecord(record: KinesisStreamRecord, index: number): SourceRecord<KinesisStreamRecord> {
  const kinesis = record?.kinesis;
  const sequenceNumber = typeof kinesis?.sequenceNumber === 'string' && kinesis.sequenceNumber !== '' ? kinesis.sequenceNumber : undefined;
  // eventID is `shardId-000000000000:<sequence number>`; one batch comes from one shard.
  const shard = typeof record?.eventID === 'string' && record.eventID.includes(':') ? record.eventID.slice(0, record.eventID.lastIndexOf(':')) : '';
  const data = kinesis?.data;
  const bytes = Buffer.from(typeof data === 'string' ? data : '', 'base64');
  return {
    raw: record,
    index,
    id: sequenceNumber,
    body: bytes.toString('utf8'),
    payload: bytes,
    bodyError:
      notARecord(record, 'Kinesis') ??
      (typeof data === 'string'
        ? undefined
        : new ParseError(
            `the record has no kinesis.data string (it is ${data === null ? 'null' : typeof data}); Kinesis records from Lambda always carry one`,
          )),
    lane: shard,
    groupId: shard,
    attempt: 1,
  };
}
