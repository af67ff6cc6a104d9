/**
 * The sqs-inbox runtime library (package export `sqs-inbox`), for the code inside a Lambda function:
 * `inbox(options)` makes the SQS handler, plus the Data API session, the schema migrations, the purge and
 * the error classes it is built from.
 *
 * @example
 * import { inbox, PermanentError } from 'sqs-inbox';
 */
export { inbox } from './handler/consumer.js';
export type { InboxHandler } from './handler/consumer.js';
export type { InboxOptions, InboxMessage, InboxTransaction, DatabaseOptions, GatedStatement, GatedBatchStatement, DuplicateFilter } from './handler/options.js';
export { resolveTarget } from './handler/options.js';
export { withFirstStatement } from './modes/record-claim.js';
export type { WithFirstStatement } from './modes/claim-runtime.js';
export { parseWith } from './prepare/standard-schema.js';
export type { StandardSchema, StandardResult, StandardIssue } from './prepare/standard-schema.js';
export {
  InboxError,
  InboxConfigError,
  PermanentError,
  ParseError,
  KeyError,
  BodyTooLargeError,
  KeyCollisionError,
  ParkedCollisionError,
  DatabaseCallError,
  DataApiError,
  PostgresError,
  UnexpectedEventError,
  MigrationChangedError,
} from './errors.js';
export type { DataApiFailure, DatabaseFailure } from './errors.js';
export type { InboxSession } from './transport/session.js';
export type { InboxTarget } from './transport/open-session.js';
export { DataApiSession, Transaction } from './data-api/session.js';
export { HintedValue, uuid, decimal, json, date, time } from './data-api/parameters.js';
export type { DatabaseTarget, SessionPolicy } from './data-api/session.js';
export type { SqlParams, SqlValue } from './data-api/parameters.js';
export type { Row, StatementResult } from './data-api/results.js';
export { IDEMPOTENCY_KEY_ATTRIBUTE, MAX_KEY_BYTES, MAX_BODY_BYTES, payloadHash } from './prepare/keys.js';
export type { KeyStrategy } from './prepare/keys.js';
export { migrate, INBOX_MIGRATIONS, inboxTables } from './sql/schema.js';
export type { Migration, MigrationSet, MigrationReport, InboxTables } from './sql/schema.js';
export { purge } from './sql/purge.js';
export type { PurgeOptions, PurgeReport } from './sql/purge.js';
export { parkedMessageStore } from './parked/store.js';
export type {
  ParkedMessage,
  ParkedMessages,
  ParkedMessageReader,
  ParkedMessageStore,
  ParkedMessageStoreOptions,
  ParkedStatus,
  ParkedRefusal,
  ReplayResult,
  ReplayOptions,
  DiscardResult,
  ListParkedOptions,
} from './parked/store.js';
export { redriveParked, queueUrlFromArn } from './parked/redrive.js';
export type { RedriveOptions, RedriveResult, RedriveRefusal } from './parked/redrive.js';
export { METRIC_NAMESPACE } from './telemetry/telemetry.js';
export type { BatchSummary, InboxLogger, InboxMetrics } from './telemetry/telemetry.js';
export { kinesisInbox, dynamoDbInbox, kafkaInbox } from './handler/stream-handlers.js';
export type { KinesisInboxOptions, DynamoDbInboxOptions, KafkaInboxOptions } from './handler/stream-handlers.js';
export type { ConsumerHandler } from './handler/consumer.js';
export type { ConsumerOptions } from './handler/options.js';
export { kafkaHeaders } from './sources/kafka.js';
export type { KafkaRecord, KafkaBatchResponse, KafkaKeyStrategy } from './sources/kafka.js';
export type { KinesisKeyStrategy } from './sources/kinesis.js';
export type { DynamoDbChange, DynamoDbKeyStrategy } from './sources/dynamodb.js';
export type { PlainItem } from './sources/dynamodb-image.js';
export type { StreamKeyStrategy } from './sources/stream-keys.js';
