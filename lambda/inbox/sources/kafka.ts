import type { MSKRecord, SelfManagedKafkaRecord } from 'aws-lambda';
import { InboxError, KeyError, ParseError, UnexpectedEventError } from '../errors.js';
import { checkKey } from '../prepare/keys.js';
import { parseJson } from '../prepare/json-body.js';
import { looksLike, notARecord, refuseForeign, shape } from './event-shape.js';
import { withPayload, withoutPayload } from './parked-record.js';
import type { PayloadPath } from './parked-record.js';
import type { InboxSource, SourceRecord } from './source.js';
import { restartPoints } from './stream-report.js';
import { streamKeyStrategy } from './stream-keys.js';
import type { StreamKeyStrategy } from './stream-keys.js';

/** A Kafka record as Lambda delivers it, from Amazon MSK or a self-managed cluster. */
export type KafkaRecord = MSKRecord | SelfManagedKafkaRecord;

/** The partial batch response of a Kafka event source mapping (provisioned mode only). */
export interface KafkaBatchResponse {
  /** Per failed topic-partition, the offset to resume it from. */
  readonly batchItemFailures: { readonly itemIdentifier: { readonly partition: string; readonly offset: number } }[];
}

/**
 * How a Kafka record's key is chosen. `'offset'` (the default): topic, partition and offset, so the
 * redelivery after a failed offset commit is caught; a producer's re-send is a new offset, so give a
 * header (`{ header: 'idempotency-key' }`), a body field (`{ field: 'orderId' }`) or a function for
 * producer-assigned keys.
 */
export type KafkaKeyStrategy = StreamKeyStrategy<KafkaRecord, 'offset'> | { readonly header: string };

/** A Kafka record's headers, decoded as UTF-8 (a header sent twice keeps its last value). */
export function kafkaHeaders(record: MSKRecord | SelfManagedKafkaRecord): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, bytes] of headerBytes(record)) headers[name] = Buffer.from(bytes).toString('utf8');
  return headers;
}

/** Each header's bytes, in the order the record carries them. */
function headerBytes(record: KafkaRecord): [string, number[]][] {
  return (Array.isArray(record.headers) ? record.headers : []).flatMap((header) => Object.entries(header));
}

/**
 * The key a header holds, decoded strictly: bytes that are not UTF-8 would decode to U+FFFD, and two
 * different keys to one claim. A leading byte order mark is kept, as any other character of the key.
 */
function headerKey(record: KafkaRecord, name: string): string {
  const bytes = headerBytes(record).findLast(([header]) => header === name)?.[1];
  if (bytes === undefined) throw new KeyError(`header "${name}" is missing; the producer must set it on every record`);
  let value: string;
  try {
    value = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(Uint8Array.from(bytes));
  } catch {
    throw new KeyError(`header "${name}" is not UTF-8 text, so it is no key. Fix: have the producer send the key as UTF-8 text, e.g. its hex or base64`);
  }
  return checkKey(value, `header "${name}"`);
}

const EXPECTED = {
  handler: 'kafkaInbox()',
  sources: ['aws:kafka', 'SelfManagedKafka'],
  events: 'Kafka events (Amazon MSK or self-managed)',
  trigger: 'an MSK or self-managed Kafka event source mapping',
};

/** The options kafkaInbox() takes besides those of every consumer. */
const KAFKA_OPTIONS = { key: true, reportBatchItemFailures: true } as const;

/**
 * Kafka: records named `topic-partition@offset`, each topic-partition a lane. With `partialResponse`
 * (ReportBatchItemFailures, which only a provisioned-mode event source mapping reads), failures are
 * reported as the offset to resume each failed partition from; without it any failure fails the whole
 * invocation, and the inbox turns the redelivered committed records into no-ops.
 */
export function kafkaInboxSource(partialResponse: boolean): InboxSource<KafkaRecord, KafkaBatchResponse, KafkaKeyStrategy> {
  return {
    name: 'kafka',
    handlerName: 'kafkaInbox',
    options: KAFKA_OPTIONS,
    countsDeliveries: false,
    redeliveredBy: 'Lambda',
    idName: 'record',
    records: kafkaRecords,
    keyStrategy: (option) =>
      streamKeyStrategy<KafkaRecord>(
        option,
        { name: 'offset', keyOf: (record) => checkKey(record.id, 'the topic, partition and offset') },
        {
          property: 'header',
          example: "{ header: 'idempotency-key' }",
          keyOf: (name) => (record) => headerKey(record.raw, name),
        },
      ),
    // A record without a value is a tombstone (a delete, on a compacted topic): its body is null.
    parse: (body, record) => (record.value === null || record.value === undefined ? null : parseJson(body)),
    respond(records, outcomes) {
      const firsts = restartPoints(records, outcomes);
      if (firsts.length === 0) return { batchItemFailures: [] };
      if (!partialResponse) {
        throw new InboxError(
          `${firsts.length} topic-partition(s) of the batch did not commit (first: ${firsts[0]!.id ?? 'a record without topic, partition or offset'}); ` +
            'failing the invocation so Lambda delivers the batch again, since this event source mapping reads no partial batch response ' +
            '(set reportBatchItemFailures, on a provisioned-mode mapping, to resume from the failed offsets instead). Records that committed are duplicates then.',
        );
      }
      if (firsts.some((record) => record.id === undefined)) {
        throw new InboxError(
          'a record that did not commit has no topic, partition or offset, so Lambda cannot resume from it; failing the whole batch so it is delivered again',
        );
      }
      return { batchItemFailures: firsts.map((record) => ({ itemIdentifier: { partition: record.lane!, offset: Number(record.raw.offset) } })) };
    },
    parkedAttributes: (record) => ({ record: withoutPayload(record, VALUE) }),
    fromParked: (parked) => sourceRecord(withPayload<KafkaRecord>(parked, VALUE), 0),
  };
}

/** Where a Kafka record keeps its payload, base64. */
const VALUE: PayloadPath = ['value'];

/** The records of a Kafka event, partition by partition in the order Lambda gives them. */
function kafkaRecords(event: unknown): readonly SourceRecord<KafkaRecord>[] {
  const records = (event as { records?: unknown } | null | undefined)?.records;
  // A null event has no records, so the checks on them refuse it too.
  if (typeof event !== 'object' || records === null || typeof records !== 'object' || Array.isArray(records)) {
    throw new UnexpectedEventError(
      `${EXPECTED.handler} handles ${EXPECTED.events}, which carry "records" keyed by topic-partition; got ${shape(event, (event as { Records?: unknown } | null)?.Records !== undefined ? 'Records' : 'records')}.${looksLike(event)} ` +
        `Check the function's trigger (${EXPECTED.trigger}), or build test events as Lambda does.`,
    );
  }
  refuseForeign((event as { eventSource?: unknown }).eventSource, 'eventSource', EXPECTED);
  const flat: SourceRecord<KafkaRecord>[] = [];
  for (const [partition, list] of Object.entries(records)) {
    if (!Array.isArray(list)) {
      throw new UnexpectedEventError(
        `${EXPECTED.handler}: records[${JSON.stringify(partition)}] is ${list === null ? 'null' : typeof list}, not an array of records; build test events as Lambda does`,
      );
    }
    for (const record of list as KafkaRecord[]) flat.push(sourceRecord(record, flat.length));
  }
  return flat;
}

function sourceRecord(record: KafkaRecord, index: number): SourceRecord<KafkaRecord> {
  const placed = typeof record?.topic === 'string' && record.topic !== '' && Number.isInteger(record.partition) && Number.isInteger(record.offset);
  const lane = placed ? `${record.topic}-${record.partition}` : '';
  const value = record?.value;
  const bytes = Buffer.from(typeof value === 'string' ? value : '', 'base64');
  return {
    raw: record,
    index,
    id: placed ? `${lane}@${record.offset}` : undefined,
    body: bytes.toString('utf8'),
    payload: bytes,
    // Not a tombstone: a record that is null has no value because it is no record.
    bodyError:
      notARecord(record, 'Kafka') ??
      (value === null || value === undefined || typeof value === 'string'
        ? undefined
        : new ParseError(`the record's value is ${typeof value}, not a base64 string; Kafka records from Lambda always carry one (or none, for a tombstone)`)),
    lane,
    groupId: lane,
    attempt: 1,
  };
}
