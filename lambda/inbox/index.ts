/**
 * The sqs-inbox runtime library (package export `sqs-inbox`), for the code inside a Lambda function:
 * `inbox(options)` makes the SQS handler (`kinesisInbox`, `dynamoDbInbox` and `kafkaInbox` the stream
 * ones), with the types an `apply` is written against, the parameter helpers and the error classes.
 * Migrations, the purge and parked messages, for scripts and scheduled functions, are
 * `sqs-inbox/operations`, run over a transport such as `dataApi({...})`.
 *
 * @example
 * import { inbox, PermanentError } from 'sqs-inbox';
 */
export { inbox } from './handler/consumer.js';
export type { ConsumerHandler } from './handler/consumer.js';
export type { InboxOptions, ConsumerOptions, InboxMessage, InboxTransaction, GatedStatement, GatedBatchStatement } from './handler/options.js';
export { kinesisInbox, dynamoDbInbox, kafkaInbox } from './handler/stream-handlers.js';
export { dataApi } from './transport/data-api/transport.js';
export type { InboxTransport } from './transport/transport.js';
export type { OutboxOptions, OutboxTransport } from './outbox/relay.js';
export type { KinesisInboxOptions, DynamoDbInboxOptions, KafkaInboxOptions } from './handler/stream-handlers.js';
export { kafkaHeaders } from './sources/kafka.js';
export type { DynamoDbChange } from './sources/dynamodb.js';
export { parseWith } from './prepare/standard-schema.js';
export type { StandardSchema } from './prepare/standard-schema.js';
export {
  InboxError,
  InboxConfigError,
  PermanentError,
  ParseError,
  DatabaseCallError,
  DataApiError,
} from './errors.js';
// Thrown by /producer, /outbox and /local when their optional peer is missing: caught by its name from here.
export { PeerDependencyError } from './peers.js';
export { uuid, decimal, json, date, time, HintedValue } from './transport/values.js';
export type { SqlParams } from './transport/values.js';
export type { BatchSummary, InboxLogger, InboxMetrics } from './telemetry/telemetry.js';
