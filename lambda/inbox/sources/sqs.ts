import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';
import { succeeded } from '../lanes/lanes.js';
import { InboxError, ParseError } from '../errors.js';
import { checkBodySize, keyStrategy } from '../prepare/keys.js';
import type { KeyStrategy } from '../prepare/keys.js';
import type { ParkedMessage } from '../parked/store.js';
import type { ConsumerOptions, InboxOptions } from '../handler/options.js';
import { parseJson } from '../prepare/json-body.js';
import { notARecord, recordsArray } from './event-shape.js';
import type { InboxSource, SourceRecord } from './source.js';
import { textBytes } from './text-bytes.js';

/**
 * True when the batch comes from a FIFO queue, which only its ARN tells: a standard queue's records carry
 * a MessageGroupId too when it is a fair queue, and their groups are not ordered. One batch comes from one
 * queue, so any record that names a FIFO queue decides, not only the first: that one may be null or
 * hand-built, and a FIFO batch taken for a standard one would run its groups out of order.
 */
export function isFifo(records: readonly SQSRecord[]): boolean {
  return records.some((record) => {
    const arn: unknown = record?.eventSourceARN;
    return typeof arn === 'string' && arn.endsWith('.fifo');
  });
}

/** ApproximateReceiveCount: 1 on the first delivery. */
export function receiveCount(record: SQSRecord): number {
  const count = Number(record?.attributes?.ApproximateReceiveCount);
  return Number.isInteger(count) && count > 0 ? count : 1;
}

/** The SQS options besides those of every consumer. */
export const SQS_OPTIONS: Readonly<Record<Exclude<keyof InboxOptions, keyof ConsumerOptions>, true>> = { key: true, fifo: true };

const EXPECTED = {
  handler: 'inbox()',
  sources: ['aws:sqs'],
  events: 'SQS events',
  trigger: 'an SQS event source mapping with ReportBatchItemFailures',
};

/** SQS: records named by messageId, FIFO message groups as lanes, failures reported by messageId. */
export const sqsInboxSource: InboxSource<SQSRecord, SQSBatchResponse, KeyStrategy> = {
  name: 'sqs',
  handlerName: 'inbox',
  options: SQS_OPTIONS,
  countsDeliveries: true,
  redeliveredBy: 'SQS',
  idName: 'messageId',
  records(event) {
    const records = recordsArray(event, EXPECTED) as readonly SQSRecord[];
    const fifo = isFifo(records);
    return records.map((record, index) => sourceRecord(record, index, fifo));
  },
  keyStrategy: (option) => {
    const keyOf = keyStrategy(option);
    return (record) => keyOf(record.raw);
  },
  parse: (body) => parseJson(body),
  respond(records, outcomes) {
    const failed = records.filter((_, index) => !succeeded(outcomes[index]!));
    if (failed.some((record) => record.id === undefined)) {
      // A record that did not commit must come back, but it cannot be named: fail the whole batch. Its
      // committed records are duplicates on redelivery, so this costs calls, never an effect.
      throw new InboxError('a record that did not commit has no messageId, so it cannot be reported alone; failing the whole batch so SQS delivers it again');
    }
    return { batchItemFailures: failed.map((record) => ({ itemIdentifier: record.id! })) };
  },
  parkedAttributes: (record) => ({
    attributes: record?.attributes ?? {},
    messageAttributes: record?.messageAttributes ?? {},
    eventSourceARN: record?.eventSourceARN,
  }),
  fromParked: (parked: ParkedMessage) =>
    sourceRecord(
      {
        messageId: parked.sqsMessageId,
        receiptHandle: '',
        body: parked.body,
        attributes: (parked.attributes.attributes ?? {}) as unknown as SQSRecord['attributes'],
        messageAttributes: (parked.attributes.messageAttributes ?? {}) as SQSRecord['messageAttributes'],
        md5OfBody: '',
        eventSource: 'aws:sqs',
        eventSourceARN: '',
        awsRegion: '',
      },
      0,
      false,
    ),
};

/** `record` is what the event holds, which need not be an object (see notARecord). */
function sourceRecord(record: SQSRecord, index: number, fifo: boolean): SourceRecord<SQSRecord> {
  const body = typeof record?.body === 'string' ? record.body : '';
  return {
    raw: record,
    index,
    id: typeof record?.messageId === 'string' && record.messageId.length > 0 ? record.messageId : undefined,
    body,
    payload: textBytes(body),
    bodyError: notARecord(record, 'SQS') ?? bodyError(record, body),
    lane: fifo ? (record?.attributes?.MessageGroupId ?? '') : undefined,
    groupId: record?.attributes?.MessageGroupId,
    attempt: receiveCount(record),
  };
}

function bodyError(record: SQSRecord, body: string): Error | undefined {
  if (typeof record.body !== 'string') {
    return new ParseError(
      `the record has no body string (body is ${record.body === null ? 'null' : typeof record.body}); SQS records from Lambda always carry one`,
    );
  }
  try {
    checkBodySize(body);
    return undefined;
  } catch (error) {
    return error as Error;
  }
}
