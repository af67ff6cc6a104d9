const SEED = 0x9747b28c;
const M = 0x5bd1e995;
const R = 24;

/**
 * Kafka's murmur2 hash (org.apache.kafka.common.utils.Utils.murmur2): the 32-bit MurmurHash2 with
 * Kafka's seed, returned as a signed 32-bit integer like Java's `int`. Kafka's default partitioner
 * puts a keyed record on partition `toPositive(murmur2(keyBytes)) % partitions`.
 */
export function murmur2(data: Uint8Array): number {
  const length = data.length;
  const byte = (i: number): number => data[i] ?? 0;
  let h = (SEED ^ length) | 0;
  const whole = length & ~3;
  for (let i = 0; i < whole; i += 4) {
    let k = byte(i) | (byte(i + 1) << 8) | (byte(i + 2) << 16) | (byte(i + 3) << 24);
    k = Math.imul(k, M);
    k ^= k >>> R;
    k = Math.imul(k, M);
    h = Math.imul(h, M);
    h ^= k;
  }
  const rest = length & 3;
  if (rest === 3) h ^= byte(whole + 2) << 16;
  if (rest >= 2) h ^= byte(whole + 1) << 8;
  if (rest >= 1) {
    h ^= byte(whole);
    h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
}

/** The partition Kafka's default partitioner picks for a keyed record: `(murmur2(key) & 0x7fffffff) % partitions`. */
export function partitionForKey(key: Uint8Array, partitions: number): number {
  return (murmur2(key) & 0x7fffffff) % partitions;
}
