/**
 * The sqs-inbox CDK constructs (package export `sqs-inbox/cdk`), for CDK apps: the queue, the Aurora
 * database with the Data API and the inbox schema, your consumer function (on an SQS queue, a Kinesis stream,
 * a DynamoDB table's stream or a Kafka topic, made by InboxSources) with its outbox destinations, the scheduled purge, the outbox relay,
 * and alarms. Needs `aws-cdk-lib` and `constructs`. The example app's stacks, which wire them all
 * together, are in the repository's demo/stacks/, not in the package.
 *
 * @example
 * import { InboxConsumer, InboxDatabase, InboxQueue, InboxSources } from 'sqs-inbox/cdk';
 */
export { InboxQueue } from './queue/inbox-queue.js';
export type { InboxQueueProps } from './queue/inbox-queue.js';
export { InboxDatabase } from './database/inbox-database.js';
export type { InboxDatabaseProps } from './database/inbox-database.js';
export { InboxDatabaseProxy } from './database/inbox-database-proxy.js';
export type { InboxDatabaseProxyProps } from './database/inbox-database-proxy.js';
export { MigrationSet } from './database/migration-sets.js';
export type { InboxMigration, InboxMigrationSet, MigrationDirectoryOptions } from './database/migration-sets.js';
export { InboxConsumer } from './consumer/inbox-consumer.js';
export type { InboxConsumerProps } from './consumer/inbox-consumer.js';
export { InboxSources } from './sources/inbox-sources.js';
export type { InboxSource } from './sources/source.js';
export type { InboxSqsSourceOptions } from './sources/sqs.js';
export type { InboxStreamSourceOptions } from './sources/stream.js';
export type { InboxKafkaSourceOptions } from './sources/kafka.js';
export { InboxCleanup } from './purge/inbox-cleanup.js';
export type { InboxCleanupProps } from './purge/inbox-cleanup.js';
export { InboxOutboxRelay } from './outbox/inbox-outbox-relay.js';
export type { InboxOutboxRelayProps } from './outbox/inbox-outbox-relay.js';
export { InboxAlarms } from './alarms/index.js';
export type { InboxAlarmsProps } from './alarms/index.js';
export { InboxFunction } from './consumer/inbox-function.js';
export type { InboxFunctionProps } from './consumer/inbox-function.js';
export { InboxConstructError } from './errors.js';
export { InboxDatabaseRole } from './database/inbox-database-role.js';
export type { InboxDatabaseRoleProps } from './database/inbox-database-role.js';
export type { InboxTableGrant } from './database/database-grants.js';
export type { DataApiAction } from './database/data-api-access.js';
export { InboxSecretRotation } from './database/secret-rotation.js';
export { PeerDependencyError } from '../lambda/inbox/peers.js';
export type { InboxSecretRotationProps } from './database/secret-rotation.js';
export { InboxDsqlDatabase } from './dsql/inbox-dsql-database.js';
export type { InboxDsqlDatabaseProps, InboxDsqlMultiRegion, InboxDsqlRoleOptions } from './dsql/inbox-dsql-database.js';
export { InboxDsqlConsumer } from './dsql/inbox-dsql-consumer.js';
export type { InboxDsqlConsumerProps } from './dsql/inbox-dsql-consumer.js';
export { connectToPostgres } from './consumer/postgres-connection.js';
export type { InboxPostgresConnection } from './consumer/postgres-connection.js';
