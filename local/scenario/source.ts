import type { FaultSchedule } from './fault-schedule.js';
import type { JudgedMessage } from './judge.js';

/**
 * One message of a scenario, as {@link ScenarioConsumer.message} builds it.
 *
 * @example
 * const message = (i: number): ScenarioMessage => ({ key: `pay-${i}`, body: { paymentId: `pay-${i}` }, groupId: `customer-${i % 20}` });
 */
export interface ScenarioMessage {
  /**
   * The message's business id: what your effects query returns as `key`. Sent as the message's
   * idempotency key (the `idempotency-key` attribute and, on FIFO, the deduplication id), so 1 to 128
   * letters, digits or punctuation, and unique per message.
   */
  readonly key: string;
  /** The body; an object is sent as its JSON. */
  readonly body: string | object;
  /** The FIFO MessageGroupId (on a stream, the lane). @default `group-${index % groups}` on a FIFO queue */
  readonly groupId?: string | undefined;
}

/** What a source's producer wrote: the messages the judge holds the run to, and the re-sends on top. */
export interface Production {
  readonly sent: readonly JudgedMessage[];
  /** Messages the producer wrote a second time with the same key. */
  readonly duplicateSends: number;
  /** Messages sent, or stream records written, re-sends included. */
  readonly writes: number;
}

/**
 * An event source as the scenario driver runs it (an SQS queue with its mappings, or a stream with its
 * own): the producer writes to it, its mappings invoke the handlers with the schedule's faults, and the
 * driver waits until it has settled every record. One adapter per source (sqs.ts, stream.ts); how a
 * handler is subscribed is the adapter's own.
 */
export interface ScenarioSource {
  /** Writes each message once, and again where the schedule has the producer re-send it. */
  produce(schedule: FaultSchedule, messages: number, message: (index: number) => ScenarioMessage): Promise<Production>;
  /** Starts the event source mappings (and whatever runs beside them, such as an outbox sweeper). */
  start(): void;
  /** Records settled out of those to settle: the half-way pause and progress reports count them. */
  progress(): { readonly settled: number; readonly total: number };
  /** Whether every record settled and nothing runs; if not, after waiting about 100 ms. */
  drained(): Promise<boolean>;
  /** Stops the mappings and waits for their handlers. */
  stop(): Promise<void>;
  /** Records still queued, in flight or not checkpointed. */
  left(): number;
  /** Frees what the source made for the run (its queues, its clients). */
  close(): void;
}
