/**
 * The local testkit (package export "sqs-inbox/local"): `runScenario` and `runStreamScenario` drive your
 * handler through the seeded faults on a fresh database and judge every effect exactly once and in order;
 * `startLocal` starts embedded PostgreSQL, a Data API-compatible server and an SQS endpoint, and
 * `SqsEventSource` is Lambda's SQS event source mapping, so the very same handler runs locally before it
 * is deployed. For scenarios of your own, the stack's Data API (`local.dataApi`, its `Faults` and `Stats`)
 * and SQS (`local.sqs`, its `SqsModel` and `SqsFaults`); `sqs-inbox/local/streams` has Kinesis, DynamoDB
 * Streams and Kafka with their event source mappings.
 */
// First: before any module below makes an SDK client.
import './quiet-sdk.js';

export type { PostgresServer } from './postgres.js';
export { startLocal } from './stack.js';
export type { LocalStack } from './stack.js';
// What the stack's servers are, for a scenario of your own: the Data API's faults and call counts, the SQS
// model (its queues) and its faults. The servers themselves start only with startLocal.
export type { DataApiServer, StartDataApiOptions } from './data-api/server.js';
export { Faults, type FaultCall } from './data-api/faults.js';
export { Stats, type Operation } from './data-api/stats.js';
export type { SqsServer } from './sqs/server.js';
export { SqsModel } from './sqs/model.js';
export type { QueueInfo } from './sqs/model.js';
export { SqsFaults } from './sqs/faults.js';
export type { SqsErrorName } from './sqs/errors.js';
export type { Clock } from './sqs/clock.js';
export { SqsEventSource } from './event-source.js';
export type { SqsEventSourceOptions, SqsEventHandler, EventSourceStats } from './event-source.js';
export { runScenario } from './scenario/run-scenario.js';
export type { ScenarioOptions, ScenarioRunOptions, ScenarioResult } from './scenario/run-scenario.js';
export type { ScenarioConsumer, ScenarioEnvironment, ScenarioSession, HandedOn } from './scenario/consumer.js';
export type { ScenarioMessage } from './scenario/source.js';
export type { ScenarioTransport } from './scenario/transport.js';
export type { InboxTransport } from '../lambda/inbox/transport/transport.js';
export { FAULTS, FAULT_RATES } from './scenario/fault-schedule.js';
export type { FaultName, CommitPoint } from './scenario/fault-schedule.js';
export { runStreamScenario } from './scenario/run-stream-scenario.js';
export type { StreamScenarioOptions, StreamScenarioResult, StreamConsumer, StreamRunOptions } from './scenario/run-stream-scenario.js';
export { STREAM_FAULTS } from './scenario/stream-faults.js';
