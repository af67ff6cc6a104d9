/**
 * The local runtime (package export "sqs-inbox/local"): embedded PostgreSQL, a Data API-compatible
 * server, an SQS model with an AWS JSON front, and Lambda's SQS event source mapping, so the very same
 * handler runs locally, with faults injected, before it is deployed.
 */
// First: before any module below makes an SDK client.
import './quiet-sdk.js';

export { LocalDependencyError, LOCAL_PEERS_INSTALL } from './peers.js';
export { startPostgres, createDatabase, databaseName, PostgresStartError } from './postgres.js';
export type { PostgresServer, StartPostgresOptions } from './postgres.js';
export * from './data-api/index.js';
export * from './sqs/index.js';
export { SqsEventSource, readBatchResponse } from './event-source.js';
export type { SqsEventSourceOptions, SqsEventHandler, LambdaLikeContext, EventSourceStats, InvocationOutcome, PendingDelete } from './event-source.js';
export { startLocal } from './stack.js';
export type { LocalStack } from './stack.js';
export { runScenario } from './scenario.js';
export type {
  ScenarioOptions,
  ScenarioRunOptions,
  ScenarioConsumer,
  ScenarioMessage,
  ScenarioEnvironment,
  ScenarioHandlerFactory,
  ScenarioResult,
  ScenarioCheck,
  HandedOn,
  HandedOnMessage,
} from './scenario.js';
export type { DoubleEffect, OutOfOrderEffect } from './effects.js';
export { FAULTS, FAULT_RATES } from './fault-schedule.js';
export type { FaultName, CommitPoint, FaultLikelihood, FaultUnit } from './fault-schedule.js';
/**
 * Stream handlers through the faults: records through a local Kinesis stream, DynamoDB table stream or
 * Kafka topic and its event source mapping, into your handler, judged exactly once and in order.
 */
export { runStreamScenario } from './stream-scenario/run.js';
export type { StreamScenarioOptions, StreamScenarioResult, StreamConsumer, StreamRunOptions } from './stream-scenario/run.js';
export { STREAM_SOURCES } from './stream-scenario/sources.js';
export type { StreamSourceName } from './stream-scenario/sources.js';
export { STREAM_FAULTS } from './stream-scenario/faults.js';
/**
 * The local stream runtime: Kinesis Data Streams, a DynamoDB table with its stream, and Kafka, as
 * in-process models, with Lambda's event source mappings for them (partial responses, bisect, retries,
 * record age, on-failure destinations, a crash before the checkpoint).
 */
export * from './streams/index.js';
