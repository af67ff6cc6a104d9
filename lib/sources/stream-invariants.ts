import { Token } from 'aws-cdk-lib';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import { describeSeconds } from '../invariants.js';
import type { InvariantViolation } from '../invariants.js';

/** The sources an InboxConsumer reads: the value of `INBOX_SOURCE` and of the metrics' `source` dimension. */
export type InboxSourceKind = 'sqs' | 'kinesis' | 'dynamodb' | 'kafka';

/** Stream sources: records of one shard or partition arrive in order, one batch after another. */
export type StreamSourceKind = Exclude<InboxSourceKind, 'sqs'>;

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
        fix: 'keep `FunctionResponseTypes: [ReportBatchItemFailures]` on the mapping (InboxConsumer sets it; do not remove it through an escape hatch).',
      },
    ];
  }
  return [
    {
      problem:
        "the consumer's Kafka event source mapping has ReportBatchItemFailures, but its handler was told " +
        '(INBOX_REPORT_BATCH_ITEM_FAILURES=false) to fail the whole invocation instead: the environment and the mapping disagree.',
      fix: 'set `kafka.reportBatchItemFailures` on InboxConsumer instead of changing the mapping, so both follow it.',
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
        fix: 'bound `retryAttempts` (InboxConsumer defaults to 10) and keep an on-failure destination (`deadLetterQueue` or `onFailure`).',
      },
    ];
  }
  return [
    {
      problem:
        "the consumer's event source mapping has no on-failure destination: a record discarded after its retries or past " +
        '`maxRecordAge` is gone without a trace, so nobody can replay it.',
      fix: 'keep an on-failure destination: `deadLetterQueue` (InboxConsumer creates one by default) or `onFailure`.',
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
        'keep provisioned mode (`kafka.provisionedPollers`, the default), or for on-demand mode set `kafka.reportBatchItemFailures: false` ' +
        'and leave `retryAttempts`, `bisectBatchOnError` and `maxRecordAge` unset.',
    },
  ];
}

/** The event source mapping stops a Kafka function that may run longer than 14 minutes. */
export function checkKafkaTimeout(source: InboxSourceKind, timeoutSeconds: number | undefined): InvariantViolation[] {
  if (source !== 'kafka' || timeoutSeconds === undefined || timeoutSeconds <= KAFKA_MAX_TIMEOUT_SECONDS) return [];
  return [
    {
      problem:
        `InboxConsumer \`timeout\` is ${describeSeconds(timeoutSeconds)}, but Lambda's Kafka event source mappings support functions ` +
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
        'or set `minRecordDuration` if your handler claims records faster (e.g. a batch mode).',
    },
  ];
}

/** Lambda requires a Kafka consumer group id to be unique among all Kafka event sources. */
export function checkKafkaConsumerGroupUnique(input: {
  readonly consumerGroupId: string;
  readonly otherConsumerPaths: readonly string[];
}): InvariantViolation[] {
  if (input.otherConsumerPaths.length === 0) return [];
  return [
    {
      problem:
        `the Kafka consumer group '${input.consumerGroupId}' is already used by ${input.otherConsumerPaths.join(', ')}: ` +
        'Lambda requires a consumer group id to be unique among all Kafka event sources, and two mappings in one group would each get only part of the topic.',
      fix: 'give each Kafka InboxConsumer its own `kafka.consumerGroupId` (the default is its `consumerName`).',
    },
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
