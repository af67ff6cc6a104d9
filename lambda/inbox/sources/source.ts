import type { ParkedMessage } from '../parked/store.js';
import type { Outcome } from '../lanes/lanes.js';

/** The event sources an inbox consumer can be subscribed to. */
export type SourceName = 'sqs' | 'kinesis' | 'dynamodb' | 'kafka';

/** One record of an event, as the consumer's core sees it whatever its source. */
export interface SourceRecord<Raw> {
  /** The record as Lambda delivered it. */
  readonly raw: Raw;
  /** Its place in the event. */
  readonly index: number;
  /**
   * What names the record in logs and in the failure report: the SQS messageId, the stream's sequence
   * number, Kafka's `topic-partition@offset`. Undefined when the record lacks it.
   */
  readonly id: string | undefined;
  /**
   * The payload as text: what `parse` reads. Kinesis data and a Kafka value are bytes, read as UTF-8 (bytes
   * that are not UTF-8 read as U+FFFD: `payload` keeps them). Empty when the record has none.
   */
  readonly body: string;
  /**
   * The payload, byte for byte: what is hashed with the claim and kept by the parked table. Kinesis data
   * and a Kafka value as delivered (base64-decoded); an SQS body or a DynamoDB change as the bytes of its
   * text (sources/text-bytes.ts). Empty when the record has none.
   */
  readonly payload: Uint8Array;
  /** Why the record cannot be consumed as it is (no body, too large): it fails, or parks, alone. */
  readonly bodyError?: Error | undefined;
  /**
   * Records of one lane are applied in order, one at a time, and after a failure the rest of the lane does
   * not start: a FIFO message group, a shard, a topic-partition. Undefined for unordered records.
   */
  readonly lane: string | undefined;
  /** What `message.groupId` says: the SQS MessageGroupId (a fair standard queue's too), else the lane. */
  readonly groupId: string | undefined;
  /** Which delivery of the record this is: 1 on the first (SQS counts them; the streams do not, so 1). */
  readonly attempt: number;
}

/**
 * A source: turns an event into records with an id, a body and an ordering lane, chooses keys, and reports
 * failures back the way its event source mapping reads them. One per AWS service, under `sources/`.
 */
export interface InboxSource<Raw, Response, Key> {
  readonly name: SourceName;
  /** The function that makes this source's handler, as its option errors name it: `inbox`, `kinesisInbox`. */
  readonly handlerName: string;
  /** The options that handler takes besides those of every consumer (`key`, ...): any other is refused. */
  readonly options: Readonly<Record<string, true>>;
  /** Whether records carry their delivery count (SQS does; the streams do not). */
  readonly countsDeliveries: boolean;
  /** Who delivers a failed record again, for the log line: SQS, or Lambda (the streams). */
  readonly redeliveredBy: string;
  /** What the metrics and logs call the message's identifier. */
  readonly idName: string;
  /** The records of an event; an event from another source is refused with {@link UnexpectedEventError}. */
  records(event: unknown): readonly SourceRecord<Raw>[];
  /** Validates the key option once, at cold start, and returns the function that applies it. */
  keyStrategy(option: Key | undefined): (record: SourceRecord<Raw>) => string;
  /** The default `parse`. */
  parse(body: string, record: Raw): unknown;
  /** The response that makes the event source mapping redeliver exactly what did not succeed; or a throw. */
  respond(records: readonly SourceRecord<Raw>[], outcomes: readonly Outcome[]): Response;
  /**
   * What the parked table keeps beside the payload, enough for {@link fromParked} to rebuild the record
   * with it: never the payload a second time.
   */
  parkedAttributes(record: Raw): Record<string, unknown>;
  /** The record a parked message came from, its payload put back, for its replay. */
  fromParked(parked: ParkedMessage): SourceRecord<Raw>;
}
