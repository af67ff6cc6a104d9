/**
 * The handlers with the batch modes (package export `sqs-inbox/batch`): the same `inbox()`,
 * `kinesisInbox()`, `dynamoDbInbox()` and `kafkaInbox()` as `sqs-inbox`, the same options, plus
 * `applyBatch` (one transaction per batch) and `statementBatch` (one statement per batch). The handlers
 * of `sqs-inbox` run the per-record modes only, so that their bundles leave the batch modes' code out.
 *
 * @example
 * import { inbox } from 'sqs-inbox/batch';
 * @module
 */
import type { DynamoDBBatchResponse, DynamoDBStreamEvent, KinesisStreamBatchResponse, KinesisStreamEvent, MSKEvent, SelfManagedKafkaEvent } from 'aws-lambda';
import { sqsConsumer } from './consumer.js';
import type { ConsumerHandler } from './consumer.js';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { BATCH_MODES } from '../modes/batch-modes.js';
import type { InboxOptions } from './options.js';
import type { KafkaBatchResponse } from '../sources/kafka.js';
import type { DynamoDbChange } from '../sources/dynamodb.js';
import { dynamoDbConsumer, kafkaConsumer, kinesisConsumer } from './stream-handlers.js';
import type { DynamoDbInboxOptions, KafkaInboxOptions, KinesisInboxOptions } from './stream-handlers.js';

/**
 * `inbox()` of `sqs-inbox`, with the batch modes as well: `applyBatch` claims the batch in one statement
 * and applies it in ONE transaction, `statementBatch` claims and applies it in ONE statement; a batch that
 * fails for a reason one record could cause runs each record alone.
 *
 * @example
 * export const handler = inbox<{ orderId: string }>({
 *   consumer: 'order-worker',
 *   applyBatch: async (tx, messages) => {
 *     await tx.execute(
 *       `UPDATE orders SET status = 'shipped' FROM jsonb_to_recordset(:orders::jsonb) AS o(order_id text) WHERE orders.order_id = o.order_id`,
 *       { orders: messages.map((m) => ({ order_id: m.body.orderId })) },
 *     );
 *   },
 * });
 */
export function inbox<Body = any>(options: InboxOptions<Body>): ConsumerHandler<SQSEvent, SQSBatchResponse> {
  return sqsConsumer(options, BATCH_MODES);
}

/**
 * `kinesisInbox()` of `sqs-inbox`, with the batch modes as well (see {@link inbox}).
 *
 * @example
 * export const handler = kinesisInbox({ consumer: 'clickstream', statementBatch: { sql: "INSERT INTO clicks (page) SELECT body->>'page' FROM claimed" } });
 */
export function kinesisInbox<Body = any>(options: KinesisInboxOptions<Body>): ConsumerHandler<KinesisStreamEvent, KinesisStreamBatchResponse> {
  return kinesisConsumer(options, BATCH_MODES);
}

/**
 * `dynamoDbInbox()` of `sqs-inbox`, with the batch modes as well (see {@link inbox}).
 *
 * @example
 * export const handler = dynamoDbInbox({ consumer: 'order-audit', statementBatch: { sql: "INSERT INTO audit (order_id) SELECT body->'keys'->>'orderId' FROM claimed" } });
 */
export function dynamoDbInbox<Body = DynamoDbChange>(options: DynamoDbInboxOptions<Body>): ConsumerHandler<DynamoDBStreamEvent, DynamoDBBatchResponse> {
  return dynamoDbConsumer(options, BATCH_MODES);
}

/**
 * `kafkaInbox()` of `sqs-inbox`, with the batch modes as well (see {@link inbox}).
 *
 * @example
 * export const handler = kafkaInbox({ consumer: 'payments', statementBatch: { sql: "INSERT INTO payments (payment_id) SELECT body->>'paymentId' FROM claimed" } });
 */
export function kafkaInbox<Body = any>(options: KafkaInboxOptions<Body>): ConsumerHandler<MSKEvent | SelfManagedKafkaEvent, KafkaBatchResponse> {
  return kafkaConsumer(options, BATCH_MODES);
}
