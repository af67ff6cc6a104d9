import type { KinesisStreamBatchResponse, KinesisStreamRecord } from 'aws-lambda';
import { ParseError } from '../errors.js';
import { checkKey } from '../prepare/keys.js';
import { notARecord, recordsArray } from './event-shape.js';
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
  parse: (body) => JSON.parse(body) as unknown,
  respond: sequenceNumberReport,
  parkedAttributes: (record) => ({ record }),
  fromParked: (parked) => sourceRecord(parked.attributes.record as KinesisStreamRecord, 0),
};

function sourceRecord(record: KinesisStreamRecord, index: number): SourceRecord<KinesisStreamRecord> {
  const payload = record?.kinesis;
  const sequenceNumber = typeof payload?.sequenceNumber === 'string' && payload.sequenceNumber !== '' ? payload.sequenceNumber : undefined;
  // eventID is `shardId-000000000000:<sequence number>`; one batch comes from one shard.
  const shard = typeof record?.eventID === 'string' && record.eventID.includes(':') ? record.eventID.slice(0, record.eventID.lastIndexOf(':')) : '';
  const data = payload?.data;
  return {
    raw: record,
    index,
    id: sequenceNumber,
    body: typeof data === 'string' ? Buffer.from(data, 'base64').toString('utf8') : '',
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
