import { SystemClock } from '../../sqs/clock.js';
import type { Clock } from '../../sqs/clock.js';
import { ChangeSignal } from '../change-signal.js';
import { StreamModelError } from '../errors.js';
import { ShardLog } from '../shard-log.js';
import { MAX_HASH_KEY, evenHashKeyRanges, hashKeyOf, rangeIndexOf } from './hash-keys.js';
import type { HashKeyRange } from './hash-keys.js';

/** A data record as GetRecords returns it (the data as bytes, the arrival time in epoch ms). */
export interface KinesisDataRecord {
  shardId: string;
  /** A decimal string of up to 128 digits; compare as BigInt. */
  sequenceNumber: string;
  partitionKey: string;
  data: Uint8Array;
  /** Epoch milliseconds on the model's clock. */
  approximateArrivalTimestamp: number;
}

/** A record as the shard log keeps it. */
interface StoredRecord {
  partitionKey: string;
  data: Uint8Array;
}

interface Stream {
  info: { name: string; arn: string };
  ranges: HashKeyRange[];
  shardIds: string[];
  logs: Map<string, ShardLog<StoredRecord>>;
  retentionHours: number;
  changes: ChangeSignal;
}

const STREAM_NAME = /^[a-zA-Z0-9_.-]{1,128}$/;
const EXPLICIT_HASH_KEY = /^(0|[1-9]\d{0,38})$/;
const MAX_RECORD_BYTES = 10 * 1024 * 1024;
const HOUR_MS = 3_600_000;
/** Sequence numbers look like Kinesis' 56-digit ones; this puts the first at 4959 followed by 52 zeros. */
const SEQUENCE_BASE = BigInt(`4959${'0'.repeat(52)}`);
/** Room per put for the shard index, so two shards never share a sequence number. */
const SEQUENCE_STEP = 1n << 32n;

/**
 * In-process Kinesis Data Streams: streams of N shards that split the 128-bit hash key space evenly,
 * PutRecord routing by the MD5 of the partition key (or an explicit hash key), increasing decimal
 * sequence numbers, arrival times from the injected clock, and retention (24 hours by default) that
 * trims old records from the trim horizon. Resharding and enhanced fan-out are not modeled.
 *
 * @example
 * const kinesis = new KinesisModel({ clock: local.sqs.model.clock }) // or a Clock of your own, to move time by hand;
 * kinesis.createStream('orders', { shardCount: 2 });
 * const { shardId, sequenceNumber } = kinesis.putRecord({ stream: 'orders', partitionKey: 'order-1', data: '{"id":1}' });
 */
export class KinesisModel {
  /** The clock arrival times and retention run on. */
  readonly clock: Clock;
  /** The region in stream ARNs. */
  readonly region: string;
  /** The account id in stream ARNs. */
  readonly accountId: string;
  readonly #streams = new Map<string, Stream>();
  #puts = 0n;

  constructor(
    options: {
      /** The clock arrival times and retention run on. @default a new SystemClock */
      clock?: Clock | undefined;
      /** The region in stream ARNs. @default 'us-east-1' */
      region?: string | undefined;
      /** The account id in stream ARNs. @default '000000000000' */
      accountId?: string | undefined;
    } = {},
  ) {
    this.clock = options.clock ?? new SystemClock();
    this.region = options.region ?? 'us-east-1';
    this.accountId = options.accountId ?? '000000000000';
  }

  /** CreateStream: `shardCount` shards (default 1) and a retention of 24 to 8,760 hours (default 24). */
  createStream(
    name: string,
    { shardCount = 1, retentionHours = 24 }: { shardCount?: number; retentionHours?: number } = {},
  ): ReturnType<KinesisModel['describeStream']> {
    if (!STREAM_NAME.test(name)) throw invalidArgument(`stream name ${JSON.stringify(name)} must be 1 to 128 of a-z, A-Z, 0-9, _ . -`);
    if (this.#streams.has(name)) throw new StreamModelError('ResourceInUseException', `Stream ${name} already exists.`);
    if (!Number.isInteger(shardCount) || shardCount < 1) throw invalidArgument(`shardCount must be a positive integer; got ${shardCount}`);
    checkRetention(retentionHours);
    const shardIds = Array.from({ length: shardCount }, (_, i) => `shardId-${String(i).padStart(12, '0')}`);
    const retentionMs = retentionHours * HOUR_MS;
    this.#streams.set(name, {
      info: { name, arn: `arn:aws:kinesis:${this.region}:${this.accountId}:stream/${name}` },
      ranges: evenHashKeyRanges(shardCount),
      shardIds,
      logs: new Map(shardIds.map((id) => [id, new ShardLog<StoredRecord>(retentionMs)])),
      retentionHours,
      changes: new ChangeSignal(),
    });
    return this.describeStream(name);
  }

  /** DescribeStream: the ARN (the event source ARN), the shards with their hash key ranges as decimal strings, the retention. */
  describeStream(name: string): {
    name: string;
    arn: string;
    shards: { shardId: string; hashKeyRange: { startingHashKey: string; endingHashKey: string } }[];
    retentionHours: number;
  } {
    const stream = this.#stream(name);
    return {
      ...stream.info,
      retentionHours: stream.retentionHours,
      shards: stream.shardIds.map((shardId, i) => ({
        shardId,
        hashKeyRange: {
          startingHashKey: String(stream.ranges[i]?.startingHashKey),
          endingHashKey: String(stream.ranges[i]?.endingHashKey),
        },
      })),
    };
  }

  /** Increase/DecreaseStreamRetentionPeriod: 24 to 8,760 hours; records already older are trimmed at once. */
  setRetentionHours(name: string, retentionHours: number): void {
    checkRetention(retentionHours);
    const stream = this.#stream(name);
    stream.retentionHours = retentionHours;
    for (const log of stream.logs.values()) log.setRetention(retentionHours * HOUR_MS);
    this.#trim(stream);
  }

  /**
   * PutRecord: the shard is the one whose hash key range holds the MD5 of the partition key (or the
   * explicit hash key); the sequence number grows with every put.
   */
  putRecord(input: {
    /** The stream name. */
    stream: string;
    /** 1 to 256 Unicode characters; its MD5 picks the shard. */
    partitionKey: string;
    /** The data blob: a string is stored as its UTF-8 bytes. */
    data: string | Uint8Array;
    /** A decimal 128-bit hash key that picks the shard instead of the partition key's MD5. */
    explicitHashKey?: string | undefined;
  }): { shardId: string; sequenceNumber: string } {
    const stream = this.#stream(input.stream);
    const key = input.partitionKey;
    if (typeof key !== 'string' || key.length < 1 || [...key].length > 256) {
      throw invalidArgument('partitionKey must be 1 to 256 Unicode characters');
    }
    const data = typeof input.data === 'string' ? new TextEncoder().encode(input.data) : new Uint8Array(input.data);
    if (data.byteLength + Buffer.byteLength(key, 'utf8') > MAX_RECORD_BYTES) {
      throw invalidArgument('the data blob plus the partition key must not exceed the maximum record size (10 MiB)');
    }
    const hashKey = input.explicitHashKey === undefined ? hashKeyOf(key) : parseExplicitHashKey(input.explicitHashKey);
    const index = rangeIndexOf(stream.ranges, hashKey);
    const shardId = stream.shardIds[index] ?? '';
    this.#puts += 1n;
    const position = SEQUENCE_BASE + this.#puts * SEQUENCE_STEP + BigInt(index);
    this.#trim(stream);
    stream.logs.get(shardId)?.append({ position, arrivalMs: this.clock.now(), value: { partitionKey: key, data } });
    stream.changes.notify();
    return { shardId, sequenceNumber: String(position) };
  }

  /**
   * GetRecords from a shard: up to `limit` records after sequence number `after` (exclusive), or from
   * the trim horizon when `after` is undefined. Records past the retention are gone.
   * @internal
   */
  readShard(name: string, shardId: string, after: bigint | undefined, limit = 10_000): KinesisDataRecord[] {
    const log = this.#log(name, shardId);
    return log.after(after, limit).map((entry) => ({
      shardId,
      sequenceNumber: String(entry.position),
      partitionKey: entry.value.partitionKey,
      data: entry.value.data,
      approximateArrivalTimestamp: entry.arrivalMs,
    }));
  }

  /**
   * The sequence numbers at a shard's trim horizon and tip, undefined when it holds no record.
   * @internal
   */
  shardBounds(name: string, shardId: string): { oldest: bigint | undefined; newest: bigint | undefined } {
    const log = this.#log(name, shardId);
    return { oldest: log.oldest?.position, newest: log.newest?.position };
  }

  /**
   * Fires whenever a record is put on the stream.
   * @internal
   */
  changes(name: string): { subscribe(listener: () => void): () => void } {
    return this.#stream(name).changes;
  }

  #log(name: string, shardId: string): ShardLog<StoredRecord> {
    const stream = this.#stream(name);
    const log = stream.logs.get(shardId);
    if (!log) throw new StreamModelError('ResourceNotFoundException', `Shard ${shardId} in stream ${name} does not exist.`);
    this.#trim(stream);
    return log;
  }

  #trim(stream: Stream): void {
    const now = this.clock.now();
    for (const log of stream.logs.values()) log.trim(now);
  }

  #stream(name: string): Stream {
    const stream = this.#streams.get(name);
    if (!stream) throw new StreamModelError('ResourceNotFoundException', `Stream ${name} under account ${this.accountId} not found.`);
    return stream;
  }
}

function parseExplicitHashKey(text: string): bigint {
  if (!EXPLICIT_HASH_KEY.test(text)) throw invalidArgument(`explicitHashKey ${JSON.stringify(text)} must be a decimal integer (0|[1-9]\\d{0,38})`);
  const hashKey = BigInt(text);
  if (hashKey > MAX_HASH_KEY) throw invalidArgument(`explicitHashKey ${text} is above 2^128 - 1`);
  return hashKey;
}

function checkRetention(hours: number): void {
  if (!Number.isInteger(hours) || hours < 24 || hours > 8760) {
    throw invalidArgument(`retentionHours must be an integer from 24 to 8760 (365 days); got ${hours}`);
  }
}

function invalidArgument(message: string): StreamModelError {
  return new StreamModelError('InvalidArgumentException', message);
}
