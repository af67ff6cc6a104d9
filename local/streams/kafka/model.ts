import { randomUUID } from 'node:crypto';
import { SystemClock } from '../../sqs/clock.js';
import type { Clock } from '../../sqs/clock.js';
import { ChangeSignal } from '../change-signal.js';
import { StreamModelError } from '../errors.js';
import { ShardLog } from '../shard-log.js';
import { partitionForKey } from './murmur2.js';

/** A record as a partition stores it. */
export interface KafkaStoredRecord {
  topic: string;
  partition: number;
  offset: number;
  /** CreateTime, epoch ms on the model's clock. */
  timestamp: number;
  key: Uint8Array | null;
  value: Uint8Array | null;
  headers: Array<[string, Uint8Array]>;
}

interface Topic {
  partitions: ShardLog<KafkaStoredRecord>[];
  changes: ChangeSignal;
  /** The next partition for a record without a key. */
  nextUnkeyed: number;
}

const TOPIC_NAME = /^[a-zA-Z0-9._-]{1,249}$/;

/**
 * In-process Kafka: topics of N partitions, each an append-only log with offsets from 0. A keyed
 * record goes to `(murmur2(key) & 0x7fffffff) % partitions`, Kafka's default partitioner, so records
 * of a key stay in order on one partition; a record without a key takes the partitions in turn
 * (Kafka's sticky partitioner is not modeled). Consumer groups keep committed offsets per
 * (group, topic, partition): the offset of the next record to read. Retention, compaction,
 * transactions and rebalancing are not modeled.
 *
 * @example
 * const kafka = new KafkaModel({ clock: local.sqs.model.clock }) // or a Clock of your own, to move time by hand;
 * kafka.createTopic('orders', { partitions: 3 });
 * const { partition, offset } = kafka.produce('orders', { key: 'order-1', value: '{"id":1}' });
 */
export class KafkaModel {
  /** The clock record timestamps run on. */
  readonly clock: Clock;
  /** MSK or self-managed. */
  readonly kind: 'msk' | 'self-managed';
  /** The MSK cluster ARN (the event source ARN); undefined for a self-managed cluster. */
  readonly clusterArn: string | undefined;
  /** The brokers, comma separated. */
  readonly bootstrapServers: string;
  /** The region in the MSK ARN and in function ARNs. */
  readonly region: string;
  /** The account id in the MSK ARN and in function ARNs. */
  readonly accountId: string;
  readonly #topics = new Map<string, Topic>();
  /** `group/topic/partition` to the committed offset. */
  readonly #committed = new Map<string, number>();

  constructor(
    options: {
      /** The clock record timestamps run on. @default a new SystemClock */
      clock?: Clock | undefined;
      /**
       * Which kind of cluster Lambda sees: Amazon MSK (events carry `eventSource: 'aws:kafka'` and the cluster
       * ARN) or a self-managed cluster (`'SelfManagedKafka'`, no ARN). @default 'msk'
       */
      kind?: 'msk' | 'self-managed' | undefined;
      /** The cluster name in the MSK ARN and the broker addresses. @default 'local-cluster' */
      clusterName?: string | undefined;
      /** The region in the MSK ARN. @default 'us-east-1' */
      region?: string | undefined;
      /** The account id in the MSK ARN. @default '000000000000' */
      accountId?: string | undefined;
      /** The brokers, comma separated, as events carry them. @default two MSK-shaped broker addresses */
      bootstrapServers?: string | undefined;
    } = {},
  ) {
    this.clock = options.clock ?? new SystemClock();
    this.kind = options.kind ?? 'msk';
    if (this.kind !== 'msk' && this.kind !== 'self-managed') throw new RangeError(`KafkaModel: kind must be 'msk' or 'self-managed'; got ${String(this.kind)}`);
    this.region = options.region ?? 'us-east-1';
    this.accountId = options.accountId ?? '000000000000';
    const cluster = options.clusterName ?? 'local-cluster';
    this.clusterArn = this.kind === 'msk' ? `arn:aws:kafka:${this.region}:${this.accountId}:cluster/${cluster}/${randomUUID()}-1` : undefined;
    this.bootstrapServers = options.bootstrapServers ?? [1, 2].map((b) => `b-${b}.${cluster}.local.c1.kafka.${this.region}.amazonaws.com:9092`).join(',');
  }

  /** Creates a topic of `partitions` partitions (default 1). */
  createTopic(name: string, { partitions = 1 }: { partitions?: number } = {}): void {
    if (!TOPIC_NAME.test(name) || name === '.' || name === '..') {
      throw new StreamModelError('INVALID_TOPIC_EXCEPTION', `topic name ${JSON.stringify(name)} must be 1 to 249 of a-z, A-Z, 0-9, . _ -`);
    }
    if (this.#topics.has(name)) throw new StreamModelError('TOPIC_ALREADY_EXISTS', `Topic '${name}' already exists.`);
    if (!Number.isInteger(partitions) || partitions < 1)
      throw new StreamModelError('INVALID_PARTITIONS', `partitions must be a positive integer; got ${partitions}`);
    this.#topics.set(name, {
      partitions: Array.from({ length: partitions }, () => new ShardLog<KafkaStoredRecord>(undefined)),
      changes: new ChangeSignal(),
      nextUnkeyed: 0,
    });
  }

  /** How many partitions a topic has. */
  partitionCount(topic: string): number {
    return this.#topic(topic).partitions.length;
  }

  /** Appends a record: to the given partition, the key's murmur2 partition, or the next in turn; returns where it went. */
  produce(
    topic: string,
    message: {
      /** The key; it picks the partition (murmur2). Null or absent: the partitions are used in turn. */
      key?: string | Uint8Array | null | undefined;
      /** The value; null is a tombstone. */
      value: string | Uint8Array | null;
      /** Headers: a map, or `[name, value]` pairs when a name repeats. */
      headers?: Readonly<Record<string, string | Uint8Array>> | ReadonlyArray<readonly [string, string | Uint8Array]> | undefined;
      /** An explicit partition, overriding the key. */
      partition?: number | undefined;
    },
  ): { topic: string; partition: number; offset: number } {
    const t = this.#topic(topic);
    const key = message.key === undefined || message.key === null ? null : bytes(message.key);
    let partition: number;
    if (message.partition !== undefined) {
      partition = message.partition;
      if (!Number.isInteger(partition) || partition < 0 || partition >= t.partitions.length) {
        throw new StreamModelError('UNKNOWN_TOPIC_OR_PARTITION', `partition ${partition} of topic ${topic} does not exist (it has ${t.partitions.length}).`);
      }
    } else if (key !== null) {
      partition = partitionForKey(key, t.partitions.length);
    } else {
      partition = t.nextUnkeyed;
      t.nextUnkeyed = (t.nextUnkeyed + 1) % t.partitions.length;
    }
    const log = t.partitions[partition];
    if (!log) throw new StreamModelError('UNKNOWN_TOPIC_OR_PARTITION', `partition ${partition} of topic ${topic} does not exist.`);
    const offset = log.newest === undefined ? 0 : Number(log.newest.position) + 1;
    const timestamp = this.clock.now();
    const headers: Array<[string, Uint8Array]> = Array.isArray(message.headers)
      ? (message.headers as ReadonlyArray<readonly [string, string | Uint8Array]>).map(([name, value]) => [name, bytes(value)])
      : Object.entries((message.headers ?? {}) as Record<string, string | Uint8Array>).map(([name, value]) => [name, bytes(value)]);
    log.append({
      position: BigInt(offset),
      arrivalMs: timestamp,
      value: { topic, partition, offset, timestamp, key, value: message.value === null ? null : bytes(message.value), headers },
    });
    t.changes.notify();
    return { topic, partition, offset };
  }

  /**
   * Fetch: up to `max` records of a partition from offset `from` on (from the start when undefined).
   * @internal
   */
  readPartition(topic: string, partition: number, from: number | undefined, max: number): KafkaStoredRecord[] {
    const after = from === undefined ? undefined : BigInt(from) - 1n;
    return this.#partition(topic, partition)
      .after(after, max)
      .map((entry) => entry.value);
  }

  /**
   * The offsets of a partition's first and last records, undefined when it holds none.
   * @internal
   */
  partitionBounds(topic: string, partition: number): { first: number | undefined; last: number | undefined } {
    const log = this.#partition(topic, partition);
    return { first: positionNumber(log.oldest?.position), last: positionNumber(log.newest?.position) };
  }

  /** The group's committed offset for a partition (the next offset it will read), undefined when none. */
  committedOffset(group: string, topic: string, partition: number): number | undefined {
    this.#partition(topic, partition);
    return this.#committed.get(`${group}/${topic}/${partition}`);
  }

  /**
   * OffsetCommit: the group's next offset to read on a partition.
   * @internal
   */
  commitOffset(group: string, topic: string, partition: number, offset: number): void {
    this.#partition(topic, partition);
    if (!Number.isInteger(offset) || offset < 0) throw new StreamModelError('OFFSET_OUT_OF_RANGE', `offset ${offset} must be a non-negative integer.`);
    this.#committed.set(`${group}/${topic}/${partition}`, offset);
    this.#topic(topic).changes.notify();
  }

  /**
   * Fires whenever a record is produced to the topic or an offset of it is committed.
   * @internal
   */
  changes(topic: string): { subscribe(listener: () => void): () => void } {
    return this.#topic(topic).changes;
  }

  #partition(topic: string, partition: number): ShardLog<KafkaStoredRecord> {
    const log = this.#topic(topic).partitions[partition];
    if (!log) throw new StreamModelError('UNKNOWN_TOPIC_OR_PARTITION', `partition ${partition} of topic ${topic} does not exist.`);
    return log;
  }

  #topic(name: string): Topic {
    const topic = this.#topics.get(name);
    if (!topic) throw new StreamModelError('UNKNOWN_TOPIC_OR_PARTITION', `This server does not host this topic-partition: ${name}.`);
    return topic;
  }
}

function bytes(value: string | Uint8Array): Uint8Array {
  return typeof value === 'string' ? new TextEncoder().encode(value) : new Uint8Array(value);
}

function positionNumber(position: bigint | undefined): number | undefined {
  return position === undefined ? undefined : Number(position);
}

/** Options of {@link KafkaModel}. */
export type KafkaModelOptions = NonNullable<ConstructorParameters<typeof KafkaModel>[0]>;
