import { Token } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { describeSeconds } from '../invariants.js';
import type { InvariantViolation } from '../invariants.js';
import type { InboxSourceKind } from './source.js';

/**
 * Lambda runs event source mappings for Amazon MSK and self-managed Kafka only with functions whose timeout is
 * at most 14 minutes (https://docs.aws.amazon.com/lambda/latest/dg/with-kafka-configure.html).
 */
export const KAFKA_MAX_TIMEOUT_SECONDS = 14 * 60;

/**
 * The runtime's defaults for its deadline: no record starts when less than min(2 x callTimeoutMs, half the
 * invocation's time) is left, with callTimeoutMs = 10 s (lambda/inbox/handler/options.ts). The construct does not know
 * the handler's options, so it assumes these.
 */
const RUNTIME_CALL_TIMEOUT_SECONDS = 10;

/** What the synthesized event source mapping says, read from its CloudFormation resource. */
export interface MappingFacts {
  readonly source: InboxSourceKind;
  /** `undefined`: an unresolved token. */
  readonly batchSize: number | undefined;
  /** -1: unbounded (Lambda's default when the property is absent); `undefined`: an unresolved token. */
  readonly retryAttempts: number | undefined;
  /** Seconds; -1 when unbounded (absent); `undefined`: an unresolved token. */
  readonly maxRecordAgeSeconds: number | undefined;
  readonly hasOnFailureDestination: boolean;
  readonly reportBatchItemFailures: boolean;
  /** Kafka: the mapping runs in provisioned mode (ProvisionedPollerConfig). */
  readonly provisioned: boolean;
  readonly bisectBatchOnError: boolean;
}

/** Reads what {@link MappingFacts} needs from the mapping's L1, so escape-hatch changes are seen too. */
export function mappingFacts(source: InboxSourceKind, cfn: lambda.CfnEventSourceMapping): MappingFacts {
  const destination = cfn.destinationConfig as lambda.CfnEventSourceMapping.DestinationConfigProperty | undefined;
  const onFailure = destination === undefined || Token.isUnresolved(destination) ? undefined : destination.onFailure;
  const types = cfn.functionResponseTypes;
  return {
    source,
    batchSize: resolved(cfn.batchSize, undefined),
    retryAttempts: resolved(cfn.maximumRetryAttempts, -1),
    maxRecordAgeSeconds: resolved(cfn.maximumRecordAgeInSeconds, -1),
    hasOnFailureDestination: onFailure !== undefined,
    reportBatchItemFailures: types !== undefined && !Token.isUnresolved(types) && types.includes('ReportBatchItemFailures'),
    provisioned: cfn.provisionedPollerConfig !== undefined,
    bisectBatchOnError: cfn.bisectBatchOnFunctionError === true,
  };
}

/**
 * The handler reports failed records in its response, and Lambda reads that response only when the mapping has
 * ReportBatchItemFailures; otherwise a response naming failed records counts as a full success, and they are lost.
 * `handlerReports`: what the handler does (always for SQS, Kinesis and DynamoDB; for Kafka what
 * `INBOX_REPORT_BATCH_ITEM_FAILURES` tells it).
 */
export function checkPartialBatchResponse(facts: MappingFacts, handlerReports: boolean): InvariantViolation[] {
  if (facts.reportBatchItemFailures === handlerReports) return [];
  if (handlerReports) {
    return [
      {
        problem:
          "the consumer's event source mapping does not have ReportBatchItemFailures in `FunctionResponseTypes`, but its handler " +
          'reports failed records in its response: Lambda would take such a response for a full success, and the failed records would be lost.',
        fix: 'keep `FunctionResponseTypes: [ReportBatchItemFailures]` on the mapping (the consumer sets it; do not remove it through an escape hatch).',
      },
    ];
  }
  return [
    {
      problem:
        "the consumer's Kafka event source mapping has ReportBatchItemFailures, but its handler was told " +
        '(INBOX_REPORT_BATCH_ITEM_FAILURES=false) to fail the whole invocation instead: the environment and the mapping disagree.',
      fix: "set the Kafka source's `reportBatchItemFailures` instead of changing the mapping, so both follow it.",
    },
  ];
}

/**
 * Records that fail past the retries, or grow older than `maxRecordAge`, are discarded: without an on-failure
 * destination nothing says which. With unbounded retries, one failing record also blocks its shard or partition
 * until the stream drops it.
 */
export function checkFailedRecordsKept(facts: MappingFacts): InvariantViolation[] {
  if (facts.source === 'sqs' || facts.hasOnFailureDestination) return [];
  if (facts.retryAttempts === -1) {
    return [
      {
        problem:
          "the consumer's event source mapping retries without bound (`retryAttempts` -1) and has no on-failure destination: " +
          `a record that keeps failing blocks its ${lane(facts.source)} until the ${holder(facts.source)} drops it, and then it is gone without a trace.`,
        fix: "bound the source's `retryAttempts` (the default is 10) and keep an on-failure destination (`onFailure`).",
      },
    ];
  }
  return [
    {
      problem:
        "the consumer's event source mapping has no on-failure destination: a record discarded after its retries or past " +
        '`maxRecordAge` is gone without a trace, so nobody can replay it.',
      fix: "keep an on-failure destination: the source's `onFailure` (a queue is created by default).",
    },
  ];
}

/**
 * Kinesis and DynamoDB Streams retry a failing record until it expires when retries are unbounded. It blocks its
 * shard all that time, and the on-failure destination then receives only the position of a record the stream no
 * longer holds (an S3 destination keeps the record, but the shard was still blocked).
 */
export function checkUnboundedStreamRetries(facts: MappingFacts, retentionSeconds: number | undefined): InvariantViolation[] {
  if (facts.source !== 'kinesis' && facts.source !== 'dynamodb') return [];
  if (facts.retryAttempts !== -1 || facts.maxRecordAgeSeconds === undefined) return [];
  if (facts.maxRecordAgeSeconds !== -1 && (retentionSeconds === undefined || facts.maxRecordAgeSeconds < retentionSeconds)) return [];
  return [
    {
      problem:
        `the consumer retries without bound (\`retryAttempts\` -1) and no \`maxRecordAge\` shorter than the ${holder(facts.source)}'s retention stops it: ` +
        'a record that keeps failing blocks its shard until the stream drops it, and the on-failure destination then only points at a record that is gone.',
      fix: 'bound `retryAttempts` (the default is 10), or set `maxRecordAge` shorter than the stream retention.',
    },
  ];
}

/**
 * Lambda honours a Kafka mapping's error handling controls (partial batch response, retries, bisect, record age)
 * only in provisioned mode (https://docs.aws.amazon.com/lambda/latest/dg/kafka-retry-configurations.html).
 */
export function checkKafkaProvisionedMode(facts: MappingFacts): InvariantViolation[] {
  if (facts.source !== 'kafka' || facts.provisioned) return [];
  const controls = [
    ...(facts.reportBatchItemFailures ? ['ReportBatchItemFailures'] : []),
    ...(facts.retryAttempts !== -1 ? ['`retryAttempts`'] : []),
    ...(facts.bisectBatchOnError ? ['`bisectBatchOnError`'] : []),
    ...(facts.maxRecordAgeSeconds !== -1 ? ['`maxRecordAge`'] : []),
  ];
  if (controls.length === 0) return [];
  return [
    {
      problem:
        `the consumer's Kafka event source mapping sets ${controls.join(', ')} in on-demand mode, but Lambda supports partial batch ` +
        'responses and the other error handling controls for Kafka only in provisioned mode: a partial batch response would be ignored and its failed records lost.',
      fix:
        "keep provisioned mode (the Kafka source's `provisionedPollers`, the default), or for on-demand mode set its " +
        '`reportBatchItemFailures: false` and leave `retryAttempts`, `bisectBatchOnError` and `maxRecordAge` unset.',
    },
  ];
}

/** The event source mapping stops a Kafka function that may run longer than 14 minutes. */
export function checkKafkaTimeout(source: InboxSourceKind, timeoutSeconds: number | undefined): InvariantViolation[] {
  if (source !== 'kafka' || timeoutSeconds === undefined || timeoutSeconds <= KAFKA_MAX_TIMEOUT_SECONDS) return [];
  return [
    {
      problem:
        `the consumer's \`timeout\` is ${describeSeconds(timeoutSeconds)}, but Lambda's Kafka event source mappings support functions ` +
        `with a timeout of at most ${describeSeconds(KAFKA_MAX_TIMEOUT_SECONDS)}.`,
      fix: `set \`timeout\` to ${describeSeconds(KAFKA_MAX_TIMEOUT_SECONDS)} or less.`,
    },
  ];
}

/** Seconds of an invocation the runtime spends starting records, with its default deadline margin. */
export function workSeconds(timeoutSeconds: number): number {
  return timeoutSeconds - Math.min(2 * RUNTIME_CALL_TIMEOUT_SECONDS, timeoutSeconds / 2);
}

/**
 * The records of one shard or partition run one after another. When a full batch from one shard cannot run within
 * the time the runtime gives its records, the rest are reported failed unstarted at every try: each try is a
 * retry, and once `retryAttempts` run out the records never started are discarded to the on-failure destination.
 */
export function checkBatchFitsTimeout(input: {
  readonly source: InboxSourceKind;
  readonly batchSize: number | undefined;
  readonly timeoutSeconds: number | undefined;
  readonly recordSeconds: number | undefined;
}): InvariantViolation[] {
  const { source, batchSize, timeoutSeconds, recordSeconds } = input;
  if (source === 'sqs' || batchSize === undefined || timeoutSeconds === undefined || recordSeconds === undefined) return [];
  const needed = batchSize * recordSeconds;
  const available = workSeconds(timeoutSeconds);
  if (needed <= available) return [];
  const fitting = Math.max(1, Math.floor(available / recordSeconds));
  const timeout = Math.ceil(needed <= 2 * RUNTIME_CALL_TIMEOUT_SECONDS ? 2 * needed : needed + 2 * RUNTIME_CALL_TIMEOUT_SECONDS);
  return [
    {
      problem:
        `a full batch of ${batchSize} records from one ${lane(source)} needs at least ${round(needed)} seconds ` +
        `(${round(recordSeconds * 1000)} ms each, one after another), but a ${describeSeconds(timeoutSeconds)} \`timeout\` leaves the ` +
        `runtime ${round(available)} seconds to start records: the rest of every batch would fail unstarted, use up \`retryAttempts\` ` +
        'and be discarded without ever running.',
      fix:
        `lower \`batchSize\` to ${fitting} or less, or raise \`timeout\` to at least ${describeSeconds(timeout)}, ` +
        "or set the source's `minRecordDuration` if your handler claims records faster (e.g. a batch mode).",
    },
  ];
}

/**
 * Lambda requires a Kafka consumer group id to be unique among all Kafka event sources, and two mappings in one group
 * would each get only part of the topic. Read from every mapping of the app, whichever construct made it; the later of
 * a clashing pair reports, so each clash appears once.
 */
export function checkKafkaConsumerGroupUnique(mapping: lambda.CfnEventSourceMapping): InvariantViolation[] {
  const group = consumerGroupOf(mapping);
  if (group === undefined) return [];
  const earlier: string[] = [];
  for (const other of mapping.node.root.node.findAll()) {
    if (other === mapping) break;
    // The L2 mapping around the L1, as the user wrote it (`<function>/KafkaEventSource:<topic>`).
    if (other instanceof lambda.CfnEventSourceMapping && consumerGroupOf(other) === group) earlier.push((other.node.scope ?? other).node.path);
  }
  if (earlier.length === 0) return [];
  return [
    {
      problem:
        `the Kafka consumer group '${group}' is already used by the event source mapping ${earlier.join(', ')}: ` +
        'Lambda requires a consumer group id to be unique among all Kafka event sources, and two mappings in one group would each get only part of the topic.',
      fix: "give each Kafka consumer its own consumer group: the source's `consumerGroupId` (the default is the consumer's `consumerName`).",
    },
  ];
}

/** The consumer group a Kafka mapping joins, as synthesized; `undefined` for other sources and for a token. */
function consumerGroupOf(mapping: lambda.CfnEventSourceMapping): string | undefined {
  const configs = [mapping.amazonManagedKafkaEventSourceConfig, mapping.selfManagedKafkaEventSourceConfig] as unknown[];
  for (const config of configs) {
    if (config === undefined || Token.isUnresolved(config)) continue;
    const group = (config as { consumerGroupId?: string }).consumerGroupId;
    if (group !== undefined && !Token.isUnresolved(group)) return group;
  }
  return undefined;
}

/** Every check of a consumer's event source mapping, as synthesized. */
export function mappingViolations(input: {
  readonly source: InboxSourceKind;
  readonly mapping: lambda.CfnEventSourceMapping;
  /** Whether the handler reports failed records in its response. */
  readonly handlerReports: boolean;
  readonly redeliveryWindowSeconds: number | undefined;
  readonly timeoutSeconds: number | undefined;
  /** The least time one record takes; `undefined` for SQS, whose batches are not one shard's. */
  readonly recordSeconds: number | undefined;
}): InvariantViolation[] {
  const facts = mappingFacts(input.source, input.mapping);
  return [
    ...checkPartialBatchResponse(facts, input.handlerReports),
    ...checkFailedRecordsKept(facts),
    ...checkUnboundedStreamRetries(facts, input.redeliveryWindowSeconds),
    ...checkKafkaProvisionedMode(facts),
    ...checkKafkaTimeout(input.source, input.timeoutSeconds),
    ...checkBatchFitsTimeout({ source: input.source, batchSize: facts.batchSize, timeoutSeconds: input.timeoutSeconds, recordSeconds: input.recordSeconds }),
    ...checkKafkaConsumerGroupUnique(input.mapping),
  ];
}

function lane(source: InboxSourceKind): string {
  return source === 'kafka' ? 'partition' : 'shard';
}

function holder(source: InboxSourceKind): string {
  return source === 'kafka' ? 'topic' : 'stream';
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}

function resolved(value: number | undefined, fallback: number | undefined): number | undefined {
  if (value === undefined) return fallback;
  return Token.isUnresolved(value) ? undefined : value;
}
