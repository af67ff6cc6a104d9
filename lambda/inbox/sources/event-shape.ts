import { ParseError, UnexpectedEventError } from '../errors.js';

/** What Lambda puts in `eventSource` for each of the event sources a function can be triggered by. */
const SOURCES: Record<string, string> = {
  'aws:sqs': 'an SQS queue',
  'aws:kinesis': 'a Kinesis stream',
  'aws:dynamodb': 'a DynamoDB stream',
  'aws:kafka': 'an Amazon MSK topic',
  SelfManagedKafka: 'a self-managed Kafka topic',
  'aws:mq': 'an Amazon MQ broker',
  'aws:s3': 'an S3 notification',
  'aws:sns': 'an SNS topic',
};

/** Which events a handler takes, for its refusals. */
export interface ExpectedEvent {
  /** The handler's name in messages, e.g. `inbox()`, `kinesisInbox()`. */
  readonly handler: string;
  /** The `eventSource` values it accepts. */
  readonly sources: readonly string[];
  /** What its events are, e.g. "SQS events". */
  readonly events: string;
  /** The trigger to check, for the fix. */
  readonly trigger: string;
}

/**
 * The `Records` of an event, refusing anything else with the fix. The event is an object whose `Records`
 * is an array (empty is fine: nothing to do, nothing failed). A record that names another `eventSource`
 * makes the whole event foreign. A record without `eventSource` is taken as the expected source, so that
 * hand-built test events keep working; whatever it lacks then fails that record alone.
 */
export function recordsArray(event: unknown, expected: ExpectedEvent): readonly unknown[] {
  const records = (event as { Records?: unknown } | null | undefined)?.Records;
  // A null event has no Records, so the array check refuses it too.
  if (typeof event !== 'object' || !Array.isArray(records)) {
    throw new UnexpectedEventError(
      `${expected.handler} handles ${expected.events}, which carry a "Records" array; got ${shape(event)}.${looksLike(event)} ` +
        `Check the function's trigger (${expected.trigger}), or build test events as Lambda does.`,
    );
  }
  for (const [index, record] of (records as readonly unknown[]).entries()) {
    refuseForeign((record as { eventSource?: unknown } | null)?.eventSource, `Records[${index}].eventSource`, expected);
  }
  return records;
}

/**
 * Why a record is no record at all (null, a number, a string): it fails, or parks, alone with this, as a
 * record without a body does, and its batch mates go on. Undefined for an object, whose fields its source checks.
 */
export function notARecord(record: unknown, source: string): ParseError | undefined {
  if (typeof record === 'object' && record !== null) return undefined;
  return new ParseError(`the record is ${record === null ? 'null' : typeof record}, not an object; ${source} records from Lambda are always objects`);
}

/** Refuses an `eventSource` the handler does not take; an absent one is accepted (hand-built events). */
export function refuseForeign(source: unknown, where: string, expected: ExpectedEvent): void {
  if (source === undefined || expected.sources.includes(source as string)) return;
  const from = typeof source === 'string' && SOURCES[source] ? ` (${SOURCES[source]})` : '';
  throw new UnexpectedEventError(
    `${expected.handler} handles ${expected.events}; ${where} is ${JSON.stringify(source)}${from}, not ${expected.sources.map((name) => JSON.stringify(name)).join(' or ')}. ` +
      `Check the function's trigger: it must be ${expected.trigger}.`,
  );
}

/** " It looks like an event from ..." when the event names its source at the top (Kafka does). */
export function looksLike(event: unknown): string {
  const source = typeof event === 'object' && event !== null ? (event as { eventSource?: unknown }).eventSource : undefined;
  return typeof source === 'string' && SOURCES[source] ? ` It looks like an event from ${SOURCES[source]}.` : '';
}

/** A short description of what arrived instead of the expected event. */
export function shape(event: unknown, field = 'Records'): string {
  if (event === null) return 'null';
  if (typeof event !== 'object') return typeof event;
  const keys = Object.keys(event);
  const value = (event as Record<string, unknown>)[field];
  if (value !== undefined) return `"${field}" of type ${value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value}`;
  return keys.length === 0
    ? 'an empty object'
    : `an object with ${keys
        .slice(0, 5)
        .map((key) => JSON.stringify(key))
        .join(', ')}`;
}
