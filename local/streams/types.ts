import type { Context } from 'aws-lambda';

/**
 * Where a new event source mapping starts reading a lane it has no checkpoint for: the oldest
 * retained record, or the tip (only records added after `start()`). AT_TIMESTAMP is not emulated.
 */
export type StartingPosition = 'TRIM_HORIZON' | 'LATEST';

/**
 * How one invocation ended. `success`: the whole batch was checkpointed. `partial`: a valid
 * `batchItemFailures` moved the checkpoint to just before the lowest reported record. `error`: the
 * handler threw or rejected. `invalid-response`: the response was refused (empty, null or unknown
 * itemIdentifier, not JSON), which fails the whole batch. `timeout`: the function timeout passed.
 * `crash`: the handler returned, then the injected crash stopped the checkpoint.
 */
export type StreamInvocationResult = 'success' | 'partial' | 'error' | 'invalid-response' | 'timeout' | 'crash';

/** Why Lambda gave up on records and sent them to the on-failure destination (the record's `requestContext.condition`). */
export type DiscardCondition = 'RetryAttemptsExhausted' | 'RecordAgeExceeded';

/** The function's handler for one source: Lambda's event in, a batch response (or nothing) out. */
export type StreamHandler<Event> = (event: Event, context: Context) => unknown;

/** Records that Lambda gave up on: sent to the on-failure destination (if any) and skipped. */
export interface StreamDiscard<R> {
  /** Why. */
  condition: DiscardCondition;
  /** The records skipped, as Lambda delivered (or would have delivered) them. */
  records: readonly R[];
  /** The invocation record sent to the destination (Lambda's failure-record JSON for the source). */
  failureRecord: Record<string, unknown>;
  /** Whether it reached a destination: false when none is configured (the records are just skipped). */
  delivered: boolean;
}

/** What `beforeCheckpoint` sees: the invocation, and where the checkpoint is about to move. */
export interface PendingCheckpoint<R> {
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
}

/** How one invocation ended, and what the event source did about it. */
export interface StreamInvocationOutcome<R> {
  /** The invocation's request id (`context.awsRequestId`). */
  requestId: string;
  /** Every record of the batch, in delivery order. */
  records: readonly R[];
  /** See {@link StreamInvocationResult}. */
  result: StreamInvocationResult;
  /** 0 on the first invocation with these records as a batch; n on its nth retry. Splitting a batch keeps the count. */
  retry: number;
  /**
   * Lane to checkpoint after the invocation, for the lanes of the batch (same form as
   * {@link PendingCheckpoint.checkpoints}); a lane with no checkpoint yet is absent.
   */
  checkpoints: Record<string, string>;
  /** The failure split the batch in two (BisectBatchOnFunctionError); each half is tried on its own. */
  bisected: boolean;
  /** Set when the failure exhausted the retries: the records went to the on-failure destination. */
  discarded?: StreamDiscard<R> | undefined;
  /** What the handler threw (`error`), or why the response was refused (`invalid-response`). */
  error?: unknown;
}

/** What a stream event source did so far. */
export interface StreamEventSourceStats {
  /** Handler invocations started. */
  invocations: number;
  /** Records handed to the handler, redeliveries included. */
  recordsDelivered: number;
  /** Records the checkpoint moved past after an invocation (not counting discarded ones). */
  recordsCheckpointed: number;
  /** Invocations answered with a valid partial batch response. */
  partialResponses: number;
  /** Invalid responses (empty, null or unknown itemIdentifier, not JSON): the whole batch failed. */
  wholeBatchFailures: number;
  /** Invocations whose handler threw or rejected. */
  handlerErrors: number;
  /** Invocations that ran past the function timeout. */
  timeouts: number;
  /** Injected crashes before the checkpoint. */
  crashes: number;
  /** Retries: a batch (or its failed rest) invoked again after a failure. */
  retries: number;
  /** Failed batches split in two. */
  bisections: number;
  /** Records skipped after exhausting the retries or the maximum record age (sent to the destination if any). */
  recordsDiscarded: number;
  /** Failure records the destination refused; the batch is tried again later. */
  destinationErrors: number;
  /** Timed-out handlers still running now (Lambda would have killed them); drain() and stop() wait for them. */
  abandonedInvocations: number;
  /** Invocations running now. */
  activeInvocations: number;
  /** The most invocations that ran at once. */
  maxConcurrentInvocations: number;
}
