/**
 * The local testkit (package export "sqs-inbox/local"): `runScenario` and `runStreamScenario` drive your
 * handler through the seeded faults on a fresh database and judge every effect exactly once and in order;
 * `startLocal` starts embedded PostgreSQL, a Data API-compatible server and an SQS endpoint, and
 * `SqsEventSource` is Lambda's SQS event source mapping, so the very same handler runs locally before it
 * is deployed. The parts, for scenarios of your own: `sqs-inbox/local/data-api` (the server and its
 * faults), `sqs-inbox/local/sqs` (the queue model and its endpoint), `sqs-inbox/local/streams` (Kinesis,
 * DynamoDB Streams and Kafka with their event source mappings).
 */
// First: before any module below makes an SDK client.
import './quiet-sdk.js';

export { LocalDependencyError } from './peers.js';
export { startPostgres, createDatabase, PostgresStartError } from './postgres.js';
export type { PostgresServer } from './postgres.js';
export { startLocal } from './stack.js';
export type { LocalStack } from './stack.js';
export { SqsEventSource } from './event-source.js';
export type { SqsEventSourceOptions, SqsEventHandler, EventSourceStats, PendingDelete, InvocationOutcome } from './event-source.js';
export { runScenario } from './scenario/run-scenario.js';
export type { ScenarioOptions, ScenarioRunOptions, ScenarioResult } from './scenario/run-scenario.js';
export type { ScenarioConsumer, ScenarioEnvironment, ScenarioHandlerFactory, HandedOn } from './scenario/consumer.js';
export type { ScenarioMessage } from './scenario/source.js';
export type { ScenarioTransport } from './scenario/transport.js';
export type { InboxTransport } from '../lambda/inbox/transport/transport.js';
export type { DoubleEffect, OutOfOrderEffect } from './scenario/judge.js';
export { FAULTS, FAULT_RATES } from './scenario/fault-schedule.js';
export type { FaultName, CommitPoint, FaultLikelihood } from './scenario/fault-schedule.js';
export { runStreamScenario } from './scenario/run-stream-scenario.js';
export type { StreamScenarioOptions, StreamScenarioResult, StreamConsumer, StreamRunOptions, StreamEnvironment } from './scenario/run-stream-scenario.js';
export { STREAM_SOURCES } from './scenario/stream.js';
export type { StreamSourceName } from './scenario/stream.js';
export { STREAM_FAULTS } from './scenario/stream-faults.js';
