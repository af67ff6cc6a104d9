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
export { runScenario, SCENARIO_TRANSPORTS } from './scenario.js';
export type {
  ScenarioTransport,
  ScenarioDatabase,
  PostgresDatabase,
  ScenarioOptions,
  ScenarioRunOptions,
  ScenarioConsumer,
  DemoConsumerOptions,
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
/** The two-stage demo's engine (`sqs-inbox demo --pipeline`): ship, then invoice, chained by the outbox or a naive hand-off. */
export { runPipeline } from './pipeline/run.js';
export type { PipelineOptions, PipelineProgress, PipelineResult, HandOffCounts } from './pipeline/run.js';
export type { PipelineStage, InvoiceStage } from './pipeline/judge.js';
export type { SweeperStats } from './pipeline/sweeper.js';
export { PIPELINE_VARIANTS } from './pipeline/variants.js';
export type { PipelineVariant } from './pipeline/variants.js';
export { PIPELINE_FAULTS, HAND_OFF_FAULTS } from './pipeline/faults.js';
export type { PipelineFaultName, HandOffFaultName } from './pipeline/faults.js';
/**
 * The stream demo's engine (`sqs-inbox demo --source kinesis|dynamodb|kafka`): orders keyed by customer
 * through a local stream and its event source mapping, into the source's inbox handler or the naive
 * baseline, with the demo's faults (a crash before the checkpoint among them), judged exactly once and in order.
 */
export { runStreamScenario } from './stream-demo/run.js';
export type { StreamScenarioOptions, StreamScenarioResult, StreamConsumer, StreamEnvironment, StreamDemoOptions, StreamRunOptions } from './stream-demo/run.js';
export { STREAM_SOURCES } from './stream-demo/sources.js';
export type { StreamSourceName, StreamPattern } from './stream-demo/sources.js';
export { STREAM_FAULTS } from './stream-demo/faults.js';
/**
 * The local stream runtime: Kinesis Data Streams, a DynamoDB table with its stream, and Kafka, as
 * in-process models, with Lambda's event source mappings for them (partial responses, bisect, retries,
 * record age, on-failure destinations, a crash before the checkpoint).
 */
export * from './streams/index.js';
