import type { StreamEventSourceOptions } from './options.js';

// The shapes of the options' hooks, named for the code that makes them; the options hold their docs.

/** Where a new mapping starts reading a lane it has no checkpoint for. */
export type StartingPosition = StreamEventSourceOptions<unknown, unknown>['startingPosition'];

/** The function's handler for one source. */
export type StreamHandler<Event> = StreamEventSourceOptions<unknown, Event>['handler'];

/** What `beforeCheckpoint` sees: the invocation, and where the checkpoint is about to move. */
export type PendingCheckpoint<R> = Parameters<NonNullable<StreamEventSourceOptions<R, unknown>['beforeCheckpoint']>>[0];

/** How one invocation ended, and what the event source did about it. */
export type StreamInvocationOutcome<R> = Parameters<NonNullable<StreamEventSourceOptions<R, unknown>['onInvocation']>>[0];

/** How one invocation ended. */
export type StreamInvocationResult = StreamInvocationOutcome<unknown>['result'];

/** Records that Lambda gave up on: sent to the on-failure destination (if any) and skipped. */
export type StreamDiscard<R> = Parameters<NonNullable<StreamEventSourceOptions<R, unknown>['onDiscard']>>[0];

/** Why Lambda gave up on records. */
export type DiscardCondition = StreamDiscard<unknown>['condition'];

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
