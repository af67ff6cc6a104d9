import { createHash } from 'node:crypto';

/** Kinesis' hash key space: 128-bit integers, 0 to 2^128 - 1. */
export const MAX_HASH_KEY = (1n << 128n) - 1n;

/** A shard's slice of the hash key space, inclusive at both ends. */
export interface HashKeyRange {
  startingHashKey: bigint;
  endingHashKey: bigint;
}

/**
 * The hash key of a partition key: the MD5 of its UTF-8 bytes read as a 128-bit unsigned integer,
 * which is how Kinesis maps partition keys to shards (PutRecordsRequestEntry.PartitionKey).
 */
export function hashKeyOf(partitionKey: string): bigint {
  return BigInt(`0x${createHash('md5').update(partitionKey, 'utf8').digest('hex')}`);
}

/**
 * The ranges of `shardCount` shards that split the hash key space evenly, as a new stream's shards
 * do: shard i covers [floor(i * 2^128 / n), floor((i + 1) * 2^128 / n) - 1].
 */
export function evenHashKeyRanges(shardCount: number): HashKeyRange[] {
  const space = 1n << 128n;
  const n = BigInt(shardCount);
  return Array.from({ length: shardCount }, (_, i) => ({
    startingHashKey: (BigInt(i) * space) / n,
    endingHashKey: ((BigInt(i) + 1n) * space) / n - 1n,
  }));
}

/** The index of the range that holds `hashKey`. */
export function rangeIndexOf(ranges: readonly HashKeyRange[], hashKey: bigint): number {
  const index = ranges.findIndex((range) => hashKey >= range.startingHashKey && hashKey <= range.endingHashKey);
  if (index === -1) throw new RangeError(`hash key ${hashKey} is outside every shard's range`);
  return index;
}
