import { randomUUID } from 'node:crypto';
import type { SQSEvent, SQSRecord } from 'aws-lambda';

/** The body every benchmark message carries. */
export interface OrderBody {
  readonly orderId: string;
}

let sequence = 0;

/**
 * A first delivery of a new message, as Lambda hands it over: a fresh messageId and a fresh producer key
 * in the `idempotency-key` attribute (what every variant keys on). With `groupId` it is a FIFO record.
 */
export function freshRecord(options: { groupId?: string } = {}): SQSRecord {
  sequence++;
  const fifo = options.groupId !== undefined;
  return {
    messageId: randomUUID(),
    receiptHandle: `rh-${sequence}`,
    body: JSON.stringify({ orderId: `order-${sequence}` } satisfies OrderBody),
    attributes: {
      ApproximateReceiveCount: '1',
      SentTimestamp: String(Date.now()),
      SenderId: 'AIDABENCH',
      ApproximateFirstReceiveTimestamp: String(Date.now()),
      ...(fifo ? { MessageGroupId: options.groupId, MessageDeduplicationId: `dedup-${sequence}`, SequenceNumber: String(sequence) } : {}),
    } as SQSRecord['attributes'],
    messageAttributes: { 'idempotency-key': { dataType: 'String', stringValue: randomUUID() } },
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: `arn:aws:sqs:us-east-1:123456789012:bench-orders${fifo ? '.fifo' : ''}`,
    awsRegion: 'us-east-1',
  };
}

/** The same message delivered again (its visibility timeout ran out, or its delete was lost). */
export function redelivery(record: SQSRecord): SQSRecord {
  sequence++;
  const attempt = Number(record.attributes.ApproximateReceiveCount) + 1;
  return {
    ...record,
    receiptHandle: `rh-${sequence}`,
    attributes: { ...record.attributes, ApproximateReceiveCount: String(attempt) },
  };
}

/** `count` new standard-queue records. */
export function freshRecords(count: number): SQSRecord[] {
  return Array.from({ length: count }, () => freshRecord());
}

/** Wraps records in the event Lambda passes to the handler. */
export function sqsEvent(records: readonly SQSRecord[]): SQSEvent {
  return { Records: [...records] };
}

/** The key every variant uses: the producer's `idempotency-key` attribute, else the messageId (as inbox's 'auto'). */
export function keyOf(record: SQSRecord): string {
  return record.messageAttributes?.['idempotency-key']?.stringValue ?? record.messageId;
}
