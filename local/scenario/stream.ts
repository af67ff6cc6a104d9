import type { Context } from 'aws-lambda';
import type { StreamEventSourceOptions } from '../streams/options.js';
import type { StreamEventSource } from '../streams/stream-event-source.js';
import type { FaultSchedule } from './fault-schedule.js';
import type { JudgedMessage } from './judge.js';
import type { Production, ScenarioMessage, ScenarioSource } from './source.js';
import { StreamInvocationFaults } from './stream-faults.js';

/** The stream sources a stream scenario runs on. */
export const STREAM_SOURCES = ['kinesis', 'dynamodb', 'kafka'] as const;
/** One of {@link STREAM_SOURCES}. */
export type StreamSourceName = (typeof STREAM_SOURCES)[number];

/** Lanes (shards, partitions) every scenario stream spreads its records over. */
export const LANES = 4;

/** One record as the producer writes it. */
export interface StreamWrite {
  /** The message's business id, sent as Kafka's `idempotency-key` header. */
  readonly key: string;
  /** Its lane: Kinesis's partition key, Kafka's record key, DynamoDB's partition key value. */
  readonly lane: string;
  /** Kinesis's data and Kafka's value (its JSON when an object); DynamoDB's item, which must be an object. */
  readonly body: string | object;
}

/** The event source mapping settings a run sets, the same for every source. */
export type MappingOptions = Pick<
  StreamEventSourceOptions<unknown, unknown>,
  'batchSize' | 'functionTimeoutMs' | 'retryDelayMs' | 'beforeCheckpoint' | 'functionName'
>;

/** What a run needs of one kind of stream: a producer, and an event source mapping for a handler (kinesis.ts, dynamodb.ts, kafka.ts). */
export interface StreamLog {
  /**
   * Whether a producer's retry shows on this stream as a second record with the same key and body:
   * Kinesis and Kafka append it again; DynamoDB writes no stream record for a write that changes nothing.
   */
  readonly resends: boolean;
  /** Writes one record (again, for a producer's retry). */
  put(write: StreamWrite): void;
  /** The event source mapping, not started, over `handler`. */
  eventSource(handler: (event: never, context: never) => unknown, options: MappingOptions): StreamEventSource;
  /** The id of a Lambda record, to decide faults by: lane and position. */
  recordId(record: unknown): string;
}

/**
 * The scenario driver's stream adapter: a stream on a fresh in-process model (Kinesis, a DynamoDB
 * table's stream, or a Kafka topic) and Lambda's mapping for it, with the schedule's faults per
 * invocation. Drained when the mapping has checkpointed every record written.
 */
export class StreamScenarioSource implements ScenarioSource {
  readonly #log: StreamLog;
  #writes = 0;
  #mapping: StreamEventSource | undefined;

  constructor(log: StreamLog) {
    this.#log = log;
  }

  /** See {@link StreamLog.resends}: a stream without them cannot be given duplicate sends. */
  get resends(): boolean {
    return this.#log.resends;
  }

  /**
   * Writes each lane's records in turn; a re-send right after the original, as a producer that timed out
   * waiting for the put's answer retries it.
   */
  async produce(schedule: FaultSchedule, messages: number, message: (index: number) => ScenarioMessage): Promise<Production> {
    const sent: JudgedMessage[] = [];
    const positions = new Map<string, number>();
    let duplicateSends = 0;
    for (let index = 0; index < messages; index++) {
      const { key, body, groupId } = message(index);
      const lane = groupId ?? key;
      const position = (positions.get(lane) ?? 0) + 1;
      positions.set(lane, position);
      sent.push({ key, groupId: lane, position, poison: false });
      this.#log.put({ key, lane, body });
      if (schedule.resends(key)) {
        duplicateSends++;
        this.#log.put({ key, lane, body });
      }
    }
    this.#writes = messages + duplicateSends;
    return { sent, duplicateSends, writes: this.#writes };
  }

  /**
   * Subscribes `handler` with the schedule's faults: a 5xx before an invocation, the worker dying after
   * its commits and before the checkpoint.
   */
  consume(handler: (event: unknown, context: Context) => unknown, schedule: FaultSchedule, options: MappingOptions): void {
    const faults = new StreamInvocationFaults(schedule, this.#log.recordId);
    this.#mapping = this.#log.eventSource(faults.wrap(handler, recordsOf) as never, { ...options, beforeCheckpoint: faults.beforeCheckpoint });
  }

  /** The mapping's counters. */
  get stats(): StreamEventSource['stats'] {
    return this.#subscribed().stats;
  }

  start(): void {
    this.#subscribed().start();
  }

  progress(): { settled: number; total: number } {
    return { settled: this.#checkpointed(), total: this.#writes };
  }

  drained(): Promise<boolean> {
    return this.#subscribed().drain({ timeoutMs: 100 });
  }

  async stop(): Promise<void> {
    await this.#mapping?.stop();
  }

  left(): number {
    return this.#writes - this.#checkpointed();
  }

  close(): void {}

  /** Records checkpointed, at most those written: a crash before the checkpoint may count some twice. */
  #checkpointed(): number {
    return Math.min(this.#writes, this.#subscribed().stats.recordsCheckpointed);
  }

  #subscribed(): StreamEventSource {
    if (!this.#mapping) throw new Error('StreamScenarioSource: consume() a handler before the run starts.');
    return this.#mapping;
  }
}

/** The records of a stream event, whatever the source: Kinesis and DynamoDB's `Records`, Kafka's per-partition lists. */
function recordsOf(event: unknown): readonly unknown[] {
  const shaped = event as { Records?: unknown[]; records?: Record<string, unknown[]> };
  return shaped.Records ?? Object.values(shaped.records ?? {}).flat();
}

/** Kinesis's data and Kafka's value: the body, or its JSON when an object. */
export function text(body: string | object): string {
  return typeof body === 'string' ? body : JSON.stringify(body);
}
