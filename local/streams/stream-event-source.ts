import type { StreamEventSourceStats } from './types.js';

/**
 * Lambda's event source mapping for a stream, as Kinesis's, DynamoDB Streams' and Kafka's each are: start
 * it, drain it, stop it, read its counters and checkpoints. Their poller (stream-poller.ts) does the
 * work; this is what a test holds.
 *
 * @example
 * const source = new KinesisEventSource({ model: kinesis, stream: 'orders', startingPosition: 'TRIM_HORIZON', handler });
 * source.start();
 * await source.drain({ timeoutMs: 60_000 });
 * await source.stop();
 */
export class StreamEventSource {
  /** Counters of what the event source did, updated as it runs. */
  readonly stats: StreamEventSourceStats;
  readonly #poller: Pick<StreamEventSource, 'stats' | 'running' | 'start' | 'stop' | 'drain' | 'checkpoint'>;

  /** `poller`: the source's own poller, which this event source shows. */
  protected constructor(poller: Pick<StreamEventSource, 'stats' | 'running' | 'start' | 'stop' | 'drain' | 'checkpoint'>) {
    this.#poller = poller;
    this.stats = poller.stats;
  }

  /** True between `start()` and `stop()`. */
  get running(): boolean {
    return this.#poller.running;
  }

  /**
   * Starts one poller per lane group. The first start applies the starting position to lanes with no
   * stored checkpoint; a later start resumes from the checkpoints, as re-enabling a mapping does.
   */
  start(): void {
    this.#poller.start();
  }

  /**
   * Stops polling and waits for invocations in progress, and for timed-out handlers still running.
   * Rethrows what stopped a poller early: an error thrown by `onInvocation`, `onDiscard` or `beforeCheckpoint`.
   */
  stop(): Promise<void> {
    return this.#poller.stop();
  }

  /**
   * Resolves `true` once every record of every lane is checkpointed or was given up on, and no
   * invocation runs (timed-out ones included); `false` when `timeoutMs` of clock time passes first.
   */
  drain(input: { timeoutMs: number }): Promise<boolean> {
    return this.#poller.drain(input);
  }

  /**
   * The checkpoint of a lane (a shard id, or `topic-partition`): the sequence number of the last
   * record done (Kinesis, DynamoDB) or the committed offset, the next to read (Kafka); undefined when
   * nothing was checkpointed there yet.
   */
  checkpoint(lane: string): string | undefined {
    return this.#poller.checkpoint(lane);
  }
}
