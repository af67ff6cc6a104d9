import type { DynamoDBRecord, KinesisStreamRecord } from 'aws-lambda';
import { ManualClock } from '../../../local/sqs/clock.js';
import { DynamoDbEventSource } from '../../../local/streams/dynamodb/event-source.js';
import { DynamoDbModel } from '../../../local/streams/dynamodb/model.js';
import { KafkaEventSource } from '../../../local/streams/kafka/event-source.js';
import type { KafkaEvent, KafkaEventSourceOptions, KafkaRecord } from '../../../local/streams/kafka/event-source.js';
import { KafkaModel } from '../../../local/streams/kafka/model.js';
import { partitionForKey } from '../../../local/streams/kafka/murmur2.js';
import { KinesisEventSource } from '../../../local/streams/kinesis/event-source.js';
import { evenHashKeyRanges, hashKeyOf } from '../../../local/streams/kinesis/hash-keys.js';
import { KinesisModel } from '../../../local/streams/kinesis/model.js';
import type { StreamEventSourceOptions } from '../../../local/streams/options.js';
import type { StreamEventSource } from '../../../local/streams/stream-event-source.js';

/** A record as the shared tests see it, whatever its source. */
export type AnyRecord = KinesisStreamRecord | DynamoDBRecord | KafkaRecord;

/** The options the shared tests set; the harness adds the model, the stream and a handler wrapper. */
export type CommonOptions = Partial<Omit<StreamEventSourceOptions<AnyRecord, unknown>, 'handler'>>;

/** One source under test: a model on a manual clock, and ways to write, read and name its records. */
export interface Harness {
  clock: ManualClock;
  /** Writes a record whose body is `body`, keyed so it lands on lane `lane` (0-based). */
  put(body: string, lane?: number): void;
  /** An event source over the model; the handler gets the event's records, flattened, in order. */
  source(handler: (records: AnyRecord[]) => unknown, options?: CommonOptions): StreamEventSource;
  body(record: AnyRecord): string;
  /** The lane id of a record: shard id, or `topic-partition`. */
  lane(record: AnyRecord): string;
  /** The itemIdentifier that names the record in a partial batch response. */
  failure(record: AnyRecord): unknown;
  /** The lane id of lane index `lane`. */
  laneId(lane: number): string;
}

/** How to make a harness of `lanes` lanes for one source. */
export interface Variant {
  name: 'kinesis' | 'dynamodb' | 'kafka';
  setup(lanes: number): Harness;
}

const sources: StreamEventSource[] = [];

/** Stops every event source the harnesses made (call in afterEach). */
export async function stopAll(): Promise<void> {
  await Promise.all(sources.splice(0).map((s) => s.stop()));
}

function track<S extends StreamEventSource>(source: S): S {
  sources.push(source);
  return source;
}

/** The first keys `k0`, `k1`, ... that land on each lane, by the source's own placement rule. */
function keysPerLane(lanes: number, laneOf: (key: string) => number): string[] {
  const keys: (string | undefined)[] = Array.from({ length: lanes });
  for (let i = 0; keys.some((k) => k === undefined); i += 1) {
    if (i > 10_000) throw new Error(`no key found for every one of ${lanes} lanes: is the placement rule broken?`);
    const key = `k${i}`;
    const lane = laneOf(key);
    if (keys[lane] === undefined) keys[lane] = key;
  }
  return keys as string[];
}

const kinesis: Variant = {
  name: 'kinesis',
  setup(lanes) {
    const clock = new ManualClock();
    const model = new KinesisModel({ clock });
    const info = model.createStream('orders', { shardCount: lanes });
    const ranges = evenHashKeyRanges(lanes);
    const keys = keysPerLane(lanes, (key) => ranges.findIndex((r) => hashKeyOf(key) >= r.startingHashKey && hashKeyOf(key) <= r.endingHashKey));
    return {
      clock,
      put: (body, lane = 0) => void model.putRecord({ stream: 'orders', partitionKey: keys[lane] ?? '', data: body }),
      source: (handler, options = {}) =>
        track(
          new KinesisEventSource({
            model,
            stream: 'orders',
            startingPosition: 'TRIM_HORIZON',
            ...options,
            handler: (event) => handler(event.Records),
          } as ConstructorParameters<typeof KinesisEventSource>[0]) as unknown as StreamEventSource,
        ),
      body: (record) => Buffer.from((record as KinesisStreamRecord).kinesis.data, 'base64').toString('utf8'),
      lane: (record) => (record as KinesisStreamRecord).eventID.split(':')[0] ?? '',
      failure: (record) => (record as KinesisStreamRecord).kinesis.sequenceNumber,
      laneId: (lane) => info.shards[lane]?.shardId ?? '',
    };
  },
};

const dynamodb: Variant = {
  name: 'dynamodb',
  setup(lanes) {
    const clock = new ManualClock();
    const model = new DynamoDbModel({ clock });
    const info = model.createTable('orders', { partitionKey: 'id', shardCount: lanes });
    // The shard of a key depends on the key and the shard count only: find it on a scratch table.
    const probe = new DynamoDbModel({ clock });
    const probeInfo = probe.createTable('probe', { partitionKey: 'id', shardCount: lanes });
    const keys = keysPerLane(lanes, (key) => {
      probe.putItem('probe', { id: key });
      return probeInfo.shardIds.findIndex((shard) => probe.readShard('probe', shard, undefined, 1000).some((r) => r.keys.id?.S === key));
    });
    return {
      clock,
      // Each put changes the item's body, so each writes one stream record (INSERT, then MODIFY).
      put: (body, lane = 0) => model.putItem('orders', { id: keys[lane] ?? '', body }),
      source: (handler, options = {}) =>
        track(
          new DynamoDbEventSource({
            model,
            table: 'orders',
            startingPosition: 'TRIM_HORIZON',
            ...options,
            handler: (event) => handler(event.Records),
          } as ConstructorParameters<typeof DynamoDbEventSource>[0]) as unknown as StreamEventSource,
        ),
      body: (record) => (record as DynamoDBRecord).dynamodb?.NewImage?.body?.S ?? '',
      lane: (record) => info.shardIds[keys.indexOf((record as DynamoDBRecord).dynamodb?.Keys?.id?.S ?? '')] ?? '',
      failure: (record) => (record as DynamoDBRecord).dynamodb?.SequenceNumber,
      laneId: (lane) => info.shardIds[lane] ?? '',
    };
  },
};

const kafka: Variant = {
  name: 'kafka',
  setup(lanes) {
    const clock = new ManualClock();
    const model = new KafkaModel({ clock });
    model.createTopic('orders', { partitions: lanes });
    const keys = keysPerLane(lanes, (key) => partitionForKey(new TextEncoder().encode(key), lanes));
    return {
      clock,
      put: (body, lane = 0) => void model.produce('orders', { key: keys[lane] ?? '', value: body }),
      source: (handler, options = {}) =>
        track(
          new KafkaEventSource({
            model,
            topic: 'orders',
            startingPosition: 'TRIM_HORIZON',
            maximumBatchingWindowMs: 0,
            ...options,
            handler: (event: KafkaEvent) => handler(Object.values(event.records).flat()),
          } as KafkaEventSourceOptions) as unknown as StreamEventSource,
        ),
      body: (record) => Buffer.from((record as KafkaRecord).value, 'base64').toString('utf8'),
      lane: (record) => `${(record as KafkaRecord).topic}-${(record as KafkaRecord).partition}`,
      failure: (record) => ({ partition: `${(record as KafkaRecord).topic}-${(record as KafkaRecord).partition}`, offset: (record as KafkaRecord).offset }),
      laneId: (lane) => `orders-${lane}`,
    };
  },
};

/** Every source, for `describe.each`. */
export const VARIANTS: readonly Variant[] = [kinesis, dynamodb, kafka];

/** Polls `condition` every few real milliseconds until it holds; fails after `timeoutMs`. */
export async function eventually(condition: () => boolean, timeoutMs = 2000, what = 'condition'): Promise<void> {
  const start = Date.now();
  while (!condition()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/** Lets pending promise callbacks and timers run. */
export function settle(ms = 5): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
