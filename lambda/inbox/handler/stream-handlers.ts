import { ENV_REPORT_BATCH_ITEM_FAILURES } from '../contract.js';
import type {
  DynamoDBBatchResponse,
  DynamoDBRecord,
  DynamoDBStreamEvent,
  KinesisStreamBatchResponse,
  KinesisStreamEvent,
  KinesisStreamRecord,
  MSKEvent,
  MSKRecord,
  SelfManagedKafkaEvent,
  SelfManagedKafkaRecord,
} from 'aws-lambda';
import { consumerHandler } from './consumer.js';
import type { ConsumerHandler } from './consumer.js';
import { InboxConfigError } from '../errors.js';
import { described } from './option-checks.js';
import type { ConsumerOptions } from './options.js';
import { dynamoDbInboxSource } from '../sources/dynamodb.js';
import type { DynamoDbChange } from '../sources/dynamodb.js';
import { kafkaInboxSource } from '../sources/kafka.js';
import { kinesisInboxSource } from '../sources/kinesis.js';

/** Options of {@link kinesisInbox}: those of every consumer, and the key. */
export interface KinesisInboxOptions<Body = unknown> extends ConsumerOptions<Body, KinesisStreamRecord> {
  /** How each record's idempotency key is chosen. `{ field }`: a field of the parsed body; or a function of the record. @default 'sequence-number' */
  readonly key?: 'sequence-number' | { readonly field: string } | ((record: KinesisStreamRecord) => string) | undefined;
}

/** Options of {@link dynamoDbInbox}: those of every consumer, and the key. */
export interface DynamoDbInboxOptions<Body = DynamoDbChange> extends ConsumerOptions<Body, DynamoDBRecord> {
  /** How each record's idempotency key is chosen. `{ field }`: a field of the parsed body; or a function of the record. @default 'event-id' */
  readonly key?: 'event-id' | { readonly field: string } | ((record: DynamoDBRecord) => string) | undefined;
}

/** Options of {@link kafkaInbox}: those of every consumer, the key, and how failures are reported. */
export interface KafkaInboxOptions<Body = unknown> extends ConsumerOptions<Body, MSKRecord | SelfManagedKafkaRecord> {
  /** How each record's idempotency key is chosen. `{ field }`: a field of the parsed body; `{ header }`: a record header; or a function of the record. @default 'offset' */
  readonly key?: 'offset' | { readonly field: string } | { readonly header: string } | ((record: MSKRecord | SelfManagedKafkaRecord) => string) | undefined;
  /**
   * Whether the event source mapping reads a partial batch response (ReportBatchItemFailures), which
   * Lambda supports for Kafka only in provisioned mode. On: a failed partition is reported with the offset
   * to resume it from. Off: a failure fails the whole invocation, and Lambda delivers the batch again
   * (its committed records are then duplicates). Returning failures to a mapping that does not read them
   * would lose them, so this must match the mapping.
   * @default process.env.INBOX_REPORT_BATCH_ITEM_FAILURES === 'true' (set by the InboxConsumer construct), else false
   */
  readonly reportBatchItemFailures?: boolean | undefined;
}

/**
 * Makes a Kinesis Data Streams handler that applies each record's effect exactly once, as `inbox()` does
 * for SQS: the same modes and options. Records of the shard are applied in order, one at a time; after a
 * failure the rest of the shard does not start, and the response names the failed record's sequence
 * number, from which Lambda retries (turn on ReportBatchItemFailures on the event source mapping).
 * The body is the record's `data`, decoded from base64 as UTF-8.
 *
 * @example
 * export const handler = kinesisInbox({
 *   consumer: 'clickstream',
 *   apply: async (tx, message) => {
 *     await tx.execute('INSERT INTO clicks (page) VALUES (:page)', { page: message.body.page });
 *   },
 * });
 */
export function kinesisInbox<Body = any>(options: KinesisInboxOptions<Body>): ConsumerHandler<KinesisStreamEvent, KinesisStreamBatchResponse> {
  return consumerHandler(kinesisInboxSource, options);
}

/**
 * Makes a DynamoDB Streams handler that applies each change's effect exactly once, as `inbox()` does for
 * SQS. The message body is the change with its images unmarshalled to plain objects
 * ({@link DynamoDbChange}); changes of the shard are applied in order, and the response names the first
 * failed record's sequence number (turn on ReportBatchItemFailures on the event source mapping).
 *
 * @example
 * export const handler = dynamoDbInbox({
 *   consumer: 'order-audit',
 *   apply: async (tx, { body }) => {
 *     if (body.eventName === 'INSERT') await tx.execute('INSERT INTO audit (order_id) VALUES (:id)', { id: body.keys.orderId as string });
 *   },
 * });
 */
export function dynamoDbInbox<Body = DynamoDbChange>(options: DynamoDbInboxOptions<Body>): ConsumerHandler<DynamoDBStreamEvent, DynamoDBBatchResponse> {
  return consumerHandler(dynamoDbInboxSource, options);
}

/**
 * Makes an Amazon MSK or self-managed Kafka handler that applies each record's effect exactly once, as
 * `inbox()` does for SQS. The claim of `(consumer, topic-partition@offset)` commits with the effect, and
 * Lambda commits the offset after the invocation: when that offset commit is lost, the redelivered records
 * are duplicates. Each topic-partition is applied in order, partitions in parallel up to `concurrency`.
 * The body is the record's `value` decoded from base64 as UTF-8 (a tombstone's body is null); headers are
 * read with {@link kafkaHeaders}.
 *
 * @example
 * export const handler = kafkaInbox({
 *   consumer: 'payments',
 *   key: { header: 'idempotency-key' },
 *   apply: async (tx, message) => {
 *     await tx.execute('INSERT INTO payments (payment_id) VALUES (:id)', { id: message.body.paymentId });
 *   },
 * });
 */
export function kafkaInbox<Body = any>(
  options: KafkaInboxOptions<Body>,
): ConsumerHandler<
  MSKEvent | SelfManagedKafkaEvent,
  { readonly batchItemFailures: { readonly itemIdentifier: { readonly partition: string; readonly offset: number } }[] }
> {
  const partial: unknown = options?.reportBatchItemFailures ?? process.env[ENV_REPORT_BATCH_ITEM_FAILURES] === 'true';
  if (typeof partial !== 'boolean') {
    throw new InboxConfigError(
      'reportBatchItemFailures',
      `must be true or false, matching the event source mapping's FunctionResponseTypes; got ${described(partial)}`,
    );
  }
  return consumerHandler(kafkaInboxSource(partial), options);
}
