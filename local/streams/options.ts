import type { Context } from 'aws-lambda';
import type { Clock } from '../sqs/clock.js';
import { checkDestination } from './destination.js';
import type { OnFailureDestination } from './destination.js';
import type { StartingPosition, StreamHandler } from './types.js';

/**
 * The options every stream event source takes, named after Lambda's event source mapping settings;
 * the limits are Lambda's (CreateEventSourceMapping), checked when the event source is made.
 */
export interface StreamEventSourceOptions<R, Event> {
  /** The function's handler: Lambda's event in, `{ batchItemFailures }` (or nothing) out. */
  handler: (event: Event, context: Context) => unknown;
  /**
   * Where to start on a lane without a checkpoint (StartingPosition, required by Lambda for streams): the
   * oldest retained record, or the tip (only records added after `start()`). AT_TIMESTAMP is not emulated.
   */
  startingPosition: 'TRIM_HORIZON' | 'LATEST';
  /** Records per invocation, 1 to 10,000. @default 100 */
  batchSize?: number | undefined;
  /** How long to gather records before invoking, 0 to 300,000 ms. @default 0 (Kafka: 500) */
  maximumBatchingWindowMs?: number | undefined;
  /**
   * FunctionResponseTypes: ["ReportBatchItemFailures"]. Off, any normal return checkpoints the whole
   * batch, whatever it says: that is where a consumer that reports failures but forgot the setting
   * loses records. Lambda's own default is off; this emulator defaults to on, as SqsEventSource does,
   * because it is the setting the inbox needs. @default true
   */
  reportBatchItemFailures?: boolean | undefined;
  /** BisectBatchOnFunctionError: split a failed batch in two and try each half; splitting is not a retry. @default false */
  bisectBatchOnFunctionError?: boolean | undefined;
  /** MaximumRetryAttempts: retries after the first invocation, 0 to 10,000, or -1 for no limit. @default -1 */
  maximumRetryAttempts?: number | undefined;
  /** MaximumRecordAgeInSeconds: skip records older than this, 60 to 604,800, or -1 for no limit. @default -1 */
  maximumRecordAgeSeconds?: number | undefined;
  /** DestinationConfig.OnFailure: where the record of a discarded batch goes. @default none: discarded batches are only skipped */
  onFailure?:
    | {
        type: 'sqs';
        /**
         * The local SQS model, `local.sqs.model` of `startLocal()` (its type is `SqsModel` of
         * `sqs-inbox/local`): Lambda's failure-record JSON arrives as a message body. Only that model is
         * taken: an object of your own with `getQueue` is refused when the event source is made, naming this.
         */
        model: {
          /** Resolves a queue by name, URL or ARN. */
          getQueue(nameOrUrl: string): { readonly fifo: boolean };
        };
        /** A standard queue of the model. */
        queue: string;
      }
    | {
        type: 'memory';
        /** Collects the failure records themselves. */
        records: Record<string, unknown>[];
      }
    | undefined;
  /** ParallelizationFactor: only 1 is emulated (one batch per shard at a time). @default 1 */
  parallelizationFactor?: number | undefined;
  /** The function timeout, 1 to 900,000 ms, on the clock. @default 30000 */
  functionTimeoutMs?: number | undefined;
  /** The function name the handler sees in its context and the failure record names. */
  functionName?: string | undefined;
  /**
   * Pause on the clock before retrying a failed batch. Lambda backs off without documenting by how
   * much; 0 retries at once (after letting other work run), which keeps tests fast. @default 0
   */
  retryDelayMs?: number | undefined;
  /** The clock for batching windows, function timeouts, record ages and retry pauses. @default the model's clock */
  clock?: Clock | undefined;
  /**
   * Fault hook, called after the handler returned and its response was read, before the checkpoint
   * (offset commit) moves. Return `'crash'` to simulate the worker dying there: nothing is
   * checkpointed, and the same records are delivered again from the last checkpoint.
   */
  beforeCheckpoint?:
    | ((pending: {
        /** The invocation's request id (`context.awsRequestId`). */
        requestId: string;
        /** Every record of the batch, in delivery order. */
        records: readonly R[];
        /** How the invocation ended: the whole batch done, or a valid partial response. */
        result: 'success' | 'partial';
        /**
         * Lane (shard id, or `topic-partition`) to the checkpoint about to be written: the sequence number
         * of the last record done (Kinesis, DynamoDB), or the offset to commit, the next one to read (Kafka).
         */
        checkpoints: Record<string, string>;
      }) => 'crash' | void | undefined)
    | undefined;
  /** Called after every invocation, once its checkpoint (or retry, or discard) is settled. */
  onInvocation?:
    | ((outcome: {
        /** The invocation's request id (`context.awsRequestId`). */
        requestId: string;
        /** Every record of the batch, in delivery order. */
        records: readonly R[];
        /**
         * `success`: the whole batch was checkpointed. `partial`: a valid `batchItemFailures` moved the
         * checkpoint to just before the lowest reported record. `error`: the handler threw or rejected.
         * `invalid-response`: the response was refused (empty, null or unknown itemIdentifier, not JSON),
         * which fails the whole batch. `timeout`: the function timeout passed. `crash`: the handler
         * returned, then the injected crash stopped the checkpoint.
         */
        result: 'success' | 'partial' | 'error' | 'invalid-response' | 'timeout' | 'crash';
        /** 0 on the first invocation with these records as a batch; n on its nth retry. Splitting a batch keeps the count. */
        retry: number;
        /** Lane to checkpoint after the invocation, for the lanes of the batch; a lane with no checkpoint yet is absent. */
        checkpoints: Record<string, string>;
        /** The failure split the batch in two (BisectBatchOnFunctionError); each half is tried on its own. */
        bisected: boolean;
        /** Set when the failure exhausted the retries: the records went to the on-failure destination, as `onDiscard` is told. */
        discarded?: Parameters<NonNullable<StreamEventSourceOptions<R, Event>['onDiscard']>>[0] | undefined;
        /** What the handler threw (`error`), or why the response was refused (`invalid-response`). */
        error?: unknown;
      }) => void)
    | undefined;
  /** Called whenever records are skipped: retries exhausted, or too old (the latter with no invocation). */
  onDiscard?:
    | ((discard: {
        /** Why Lambda gave up on them (the failure record's `requestContext.condition`). */
        condition: 'RetryAttemptsExhausted' | 'RecordAgeExceeded';
        /** The records skipped, as Lambda delivered (or would have delivered) them. */
        records: readonly R[];
        /** The invocation record sent to the destination (Lambda's failure-record JSON for the source). */
        failureRecord: Record<string, unknown>;
        /** Whether it reached a destination: false when none is configured (the records are just skipped). */
        delivered: boolean;
      }) => void)
    | undefined;
}

/** The options with every default applied, as the poller uses them. */
export interface ResolvedStreamOptions<R, Event> {
  handler: StreamHandler<Event>;
  startingPosition: StartingPosition;
  batchSize: number;
  windowMs: number;
  reportBatchItemFailures: boolean;
  bisect: boolean;
  /** -1: no limit. */
  maximumRetryAttempts: number;
  /** Undefined: no limit. */
  maximumRecordAgeMs: number | undefined;
  onFailure: OnFailureDestination | undefined;
  functionTimeoutMs: number;
  functionName: string;
  retryDelayMs: number;
  clock: Clock;
  beforeCheckpoint: StreamEventSourceOptions<R, Event>['beforeCheckpoint'];
  onInvocation: StreamEventSourceOptions<R, Event>['onInvocation'];
  onDiscard: StreamEventSourceOptions<R, Event>['onDiscard'];
}

/** What differs per source when the common options are resolved. */
export interface OptionDefaults {
  /** The class name in error messages. */
  label: string;
  functionName: string;
  windowMs: number;
  clock: Clock;
}

/**
 * Applies the defaults and checks every option against Lambda's limits. Collects every problem, then
 * throws one RangeError naming each option and the fix; `problems` may already hold source-specific ones.
 */
export function resolveStreamOptions<R, Event>(
  options: StreamEventSourceOptions<R, Event>,
  defaults: OptionDefaults,
  problems: string[] = [],
): ResolvedStreamOptions<R, Event> {
  const batchSize = options.batchSize ?? 100;
  const windowMs = options.maximumBatchingWindowMs ?? defaults.windowMs;
  const retries = options.maximumRetryAttempts ?? -1;
  const ageSeconds = options.maximumRecordAgeSeconds ?? -1;
  const parallelization = options.parallelizationFactor ?? 1;
  const timeoutMs = options.functionTimeoutMs ?? 30_000;
  const retryDelayMs = options.retryDelayMs ?? 0;
  if (typeof options.handler !== 'function') problems.push('handler must be a function (event, context) => response.');
  if (options.startingPosition !== 'TRIM_HORIZON' && options.startingPosition !== 'LATEST') {
    problems.push(
      `startingPosition must be 'TRIM_HORIZON' or 'LATEST' (Lambda requires one for streams; AT_TIMESTAMP is not emulated); got ${JSON.stringify(options.startingPosition)}.`,
    );
  }
  if (!isIntegerIn(batchSize, 1, 10_000)) problems.push(`batchSize must be an integer from 1 to 10000; got ${batchSize}.`);
  if (!isIntegerIn(windowMs, 0, 300_000)) problems.push(`maximumBatchingWindowMs must be an integer from 0 to 300000 (five minutes); got ${windowMs}.`);
  if (retries !== -1 && !isIntegerIn(retries, 0, 10_000)) {
    problems.push(`maximumRetryAttempts must be -1 (no limit) or an integer from 0 to 10000; got ${retries}.`);
  }
  if (ageSeconds !== -1 && !isIntegerIn(ageSeconds, 60, 604_800)) {
    problems.push(`maximumRecordAgeSeconds must be -1 (no limit) or an integer from 60 to 604800 (seven days); got ${ageSeconds}.`);
  }
  if (parallelization !== 1) {
    problems.push(`parallelizationFactor ${parallelization} is not emulated: leave it at 1 (one batch per shard at a time).`);
  }
  if (!isIntegerIn(timeoutMs, 1, 900_000)) problems.push(`functionTimeoutMs must be an integer from 1 to 900000 (15 minutes); got ${timeoutMs}.`);
  if (!isIntegerIn(retryDelayMs, 0, Number.MAX_SAFE_INTEGER)) problems.push(`retryDelayMs must be a non-negative integer; got ${retryDelayMs}.`);
  checkDestination(options.onFailure, problems);
  if (problems.length > 0) throw new RangeError(`${defaults.label}: ${problems.join(' ')}`);
  return {
    handler: options.handler,
    startingPosition: options.startingPosition,
    batchSize,
    windowMs,
    reportBatchItemFailures: options.reportBatchItemFailures ?? true,
    bisect: options.bisectBatchOnFunctionError ?? false,
    maximumRetryAttempts: retries,
    maximumRecordAgeMs: ageSeconds === -1 ? undefined : ageSeconds * 1000,
    onFailure: options.onFailure,
    functionTimeoutMs: timeoutMs,
    functionName: options.functionName ?? defaults.functionName,
    retryDelayMs,
    clock: options.clock ?? defaults.clock,
    beforeCheckpoint: options.beforeCheckpoint,
    onInvocation: options.onInvocation,
    onDiscard: options.onDiscard,
  };
}

function isIntegerIn(value: number, min: number, max: number): boolean {
  return Number.isInteger(value) && value >= min && value <= max;
}
