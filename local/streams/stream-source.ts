import type { ChangeSignal } from './change-signal.js';

/** One record on its lane (a shard, or a topic-partition), as the stream poller handles it. */
export interface LaneRecord<R> {
  /** The shard id, or `topic-partition`. */
  readonly lane: string;
  /** Sequence number or offset; compared as BigInt, never as text or Number (56-digit Kinesis numbers lose digits as Number). */
  readonly position: bigint;
  /** When it reached the stream, in epoch ms: what MaximumRecordAgeInSeconds measures. */
  readonly arrivalMs: number;
  /** The record exactly as Lambda delivers it. */
  readonly record: R;
}

/** What a `batchItemFailures` entry names: a record of the batch, or why it names none. */
export type Identified<R> = { record: LaneRecord<R> } | { invalid: string };

/**
 * What the shared stream poller needs from a source (Kinesis, DynamoDB Streams, Kafka): its lanes and
 * their records, where checkpoints live, Lambda's event and failure-record shapes, and how a partial
 * batch response names a record. Everything else (batching, retries, bisecting, record age, the
 * destination, hooks) is the poller's, written once.
 */
export interface PolledStream<R, Event> {
  /** The change signals that fire when a lane may have new records. */
  readonly signals: readonly Pick<ChangeSignal, 'subscribe'>[];
  /** The lanes each poller serves, one batch at a time; pollers run in parallel. */
  pollerLanes(): string[][];
  /** Up to `max` records of `lane` after position `after` (from the trim horizon when undefined). */
  read(lane: string, after: bigint | undefined, max: number): LaneRecord<R>[];
  /** The oldest position the lane still retains (records below it were trimmed), undefined when empty. */
  oldest(lane: string): bigint | undefined;
  /** The newest position of the lane, undefined when empty: LATEST starts here, drain() waits for it. */
  newest(lane: string): bigint | undefined;
  /** The stored checkpoint (the position of the last record done), or undefined when none is stored. */
  loadCheckpoint(lane: string): bigint | undefined;
  /** Stores the checkpoint: `after` is the position of the last record done. */
  saveCheckpoint(lane: string, after: bigint): void;
  /** How the outcome shows a checkpoint: a sequence number, or Kafka's committed offset (`after + 1`). */
  describeCheckpoint(after: bigint): string;
  /** Lambda's event for a batch. */
  event(batch: readonly LaneRecord<R>[]): Event;
  /** The record a `batchItemFailures[].itemIdentifier` names in `batch`, or why it names none. */
  identify(itemIdentifier: unknown, batch: readonly LaneRecord<R>[]): Identified<R>;
  /** The source's part of the failure record: `[key, value]`, such as `['KinesisBatchInfo', {...}]`. */
  batchInfo(batch: readonly LaneRecord<R>[]): [string, Record<string, unknown>];
}
