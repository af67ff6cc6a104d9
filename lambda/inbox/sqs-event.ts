import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { UnexpectedEventError } from './errors.js';

/** What Lambda puts in `eventSource` for each of the event sources a function can be triggered by. */
const OTHER_SOURCES: Record<string, string> = {
  'aws:kinesis': 'a Kinesis stream',
  'aws:dynamodb': 'a DynamoDB stream',
  'aws:kafka': 'an Amazon MSK topic',
  SelfManagedKafka: 'a self-managed Kafka topic',
  'aws:mq': 'an Amazon MQ broker',
  'aws:s3': 'an S3 notification',
  'aws:sns': 'an SNS topic',
};

/**
 * The records of an SQS event, refusing anything else with the fix. An SQS event is an object whose
 * `Records` is an array (empty is fine: nothing to do, nothing failed). A record that names another
 * `eventSource` makes the whole event foreign. A record without `eventSource` is taken as SQS, so that
 * hand-built test events keep working; whatever it lacks then fails that record alone.
 */
export function sqsRecords(event: unknown): readonly SQSRecord[] {
  const records = (event as Partial<SQSEvent> | null | undefined)?.Records;
  if (event === null || typeof event !== 'object' || !Array.isArray(records)) {
    const source = typeof event === 'object' && event !== null ? (event as { eventSource?: unknown }).eventSource : undefined;
    const named = typeof source === 'string' && OTHER_SOURCES[source] ? ` It looks like an event from ${OTHER_SOURCES[source]}.` : '';
    throw new UnexpectedEventError(
      `inbox() handles SQS events, which carry a "Records" array; got ${shape(event)}.${named} ` +
        'Check the function\'s trigger (an SQS event source mapping with ReportBatchItemFailures), or build test events as Lambda does.',
    );
  }
  records.forEach((record: unknown, index) => {
    const source = typeof record === 'object' && record !== null ? (record as { eventSource?: unknown }).eventSource : undefined;
    if (source !== undefined && source !== 'aws:sqs') {
      const from = typeof source === 'string' && OTHER_SOURCES[source] ? ` (${OTHER_SOURCES[source]})` : '';
      throw new UnexpectedEventError(
        `inbox() handles SQS events; Records[${index}].eventSource is ${JSON.stringify(source)}${from}, not "aws:sqs". ` +
          'Check the function\'s trigger: an inbox() handler must only be subscribed to SQS queues.',
      );
    }
  });
  return records as SQSRecord[];
}

function shape(event: unknown): string {
  if (event === null) return 'null';
  if (typeof event !== 'object') return typeof event;
  const keys = Object.keys(event);
  const records = (event as { Records?: unknown }).Records;
  if (records !== undefined) return `"Records" of type ${records === null ? 'null' : typeof records}`;
  return keys.length === 0 ? 'an empty object' : `an object with ${keys.slice(0, 5).map((key) => JSON.stringify(key)).join(', ')}`;
}
