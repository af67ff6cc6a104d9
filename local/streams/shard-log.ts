/** One entry of a {@link ShardLog}. */
export interface LogEntry<T> {
  /** Sequence number or offset: strictly increasing within the log, compared as BigInt. */
  readonly position: bigint;
  /** When the entry was appended, in epoch milliseconds of the model's clock. */
  readonly arrivalMs: number;
  /** What the model stores for the entry. */
  readonly value: T;
}

/**
 * An append-only log with positions that only grow, and an optional retention: a Kinesis shard, a
 * DynamoDB stream shard, a Kafka partition. Entries older than the retention are trimmed, so they
 * disappear from the trim horizon exactly as a stream's expired records do.
 */
export class ShardLog<T> {
  #entries: LogEntry<T>[] = [];
  #retentionMs: number | undefined;

  /** @param retentionMs - how long an entry is kept; undefined keeps entries for ever (Kafka here). */
  constructor(retentionMs: number | undefined) {
    this.#retentionMs = retentionMs;
  }

  /** Changes the retention; the next {@link trim} applies it. */
  setRetention(retentionMs: number | undefined): void {
    this.#retentionMs = retentionMs;
  }

  /** Appends an entry; its position must be above every position already in the log. */
  append(entry: LogEntry<T>): void {
    const last = this.#entries.at(-1);
    if (last && entry.position <= last.position) {
      throw new RangeError(`ShardLog: position ${entry.position} is not above the last position ${last.position}`);
    }
    this.#entries.push(entry);
  }

  /** Drops the entries whose age reached the retention at `now`; returns how many went. */
  trim(now: number): number {
    const retention = this.#retentionMs;
    if (retention === undefined) return 0;
    let expired = 0;
    while (expired < this.#entries.length && (this.#entries[expired]?.arrivalMs ?? now) + retention <= now) expired += 1;
    if (expired > 0) this.#entries.splice(0, expired);
    return expired;
  }

  /** Up to `max` entries whose position is above `after` (every retained entry when `after` is undefined). */
  after(after: bigint | undefined, max: number): LogEntry<T>[] {
    const start = after === undefined ? 0 : this.#firstAbove(after);
    return this.#entries.slice(start, start + max);
  }

  /** The oldest retained entry: the trim horizon. */
  get oldest(): LogEntry<T> | undefined {
    return this.#entries[0];
  }

  /** The newest entry: the tip, where LATEST starts. */
  get newest(): LogEntry<T> | undefined {
    return this.#entries.at(-1);
  }

  /** Binary search: the index of the first entry whose position is above `position`. */
  #firstAbove(position: bigint): number {
    let low = 0;
    let high = this.#entries.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if ((this.#entries[middle]?.position ?? position) <= position) low = middle + 1;
      else high = middle;
    }
    return low;
  }
}
