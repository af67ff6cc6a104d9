import type { LaneRecord } from './stream-source.js';

/** A batch waiting to be invoked: fresh from the stream, or the retry (or half) of a failed one. */
export interface PendingBatch<R> {
  readonly records: readonly LaneRecord<R>[];
  /** Retries already made with these records; a half of a split batch keeps its parent's count. */
  readonly retries: number;
  /** The last invocation with these records, for the failure record; absent when never invoked. */
  readonly last?: { requestId: string; ending: 'function-error' | 'partial' } | undefined;
}

/** What the handler's invocation amounted to, once its response was read. */
export type InvocationVerdict =
  | { kind: 'success' }
  | { kind: 'partial'; failedFrom: Map<string, bigint> }
  | { kind: 'failure'; result: 'error' | 'invalid-response' | 'timeout'; error?: unknown };

/** What the poller does after an invocation. */
export interface Plan<R> {
  /** Lane to the position of its last record now done: the checkpoints to write (after `beforeCheckpoint`). */
  advance: Map<string, bigint>;
  /** Batches to try next, in order, before reading anything new. */
  next: PendingBatch<R>[];
  /** Records to give up on (retries exhausted): sent to the destination, then checkpointed past. */
  discard: readonly LaneRecord<R>[];
  /** The failed batch was split in two. */
  bisected: boolean;
}

/** The retry settings a plan follows. */
export interface RetryPolicy {
  bisect: boolean;
  /** -1: no limit. */
  maximumRetryAttempts: number;
}

/**
 * Decides what follows an invocation, as Lambda's stream event source mappings do:
 * - success: checkpoint past the whole batch.
 * - partial: per lane, checkpoint just before the lowest reported record; retry from it (the rest of
 *   the batch on that lane). This is also "bisecting at the returned sequence number".
 * - failure (throw, timeout, invalid response): with BisectBatchOnFunctionError and more than one
 *   record, split the batch in two halves tried in order, which does not count as a retry; otherwise
 *   retry the whole batch.
 * A retry past MaximumRetryAttempts discards the records instead.
 */
export function planAfterInvocation<R>(batch: PendingBatch<R>, verdict: InvocationVerdict, requestId: string, policy: RetryPolicy): Plan<R> {
  const records = batch.records;
  if (verdict.kind === 'success') return { advance: lastPositions(records), next: [], discard: [], bisected: false };
  if (verdict.kind === 'partial') {
    const done = records.filter((r) => !isFailedOrAfter(r, verdict.failedFrom));
    const rest = records.filter((r) => isFailedOrAfter(r, verdict.failedFrom));
    const retried = { records: rest, retries: batch.retries + 1, last: { requestId, ending: 'partial' as const } };
    const exhausted = isExhausted(retried.retries, policy);
    return { advance: lastPositions(done), next: exhausted ? [] : [retried], discard: exhausted ? rest : [], bisected: false };
  }
  const last = { requestId, ending: 'function-error' as const };
  if (policy.bisect && records.length > 1) {
    const middle = Math.ceil(records.length / 2);
    const halves = [records.slice(0, middle), records.slice(middle)].map((half) => ({ records: half, retries: batch.retries, last }));
    return { advance: new Map(), next: halves, discard: [], bisected: true };
  }
  const retried = { records, retries: batch.retries + 1, last };
  const exhausted = isExhausted(retried.retries, policy);
  return { advance: new Map(), next: exhausted ? [] : [retried], discard: exhausted ? records : [], bisected: false };
}

/**
 * Splits off the records Lambda must skip before invoking: older than MaximumRecordAgeInSeconds, or
 * already trimmed from the stream (retention passed). Per lane only a leading run is skipped, so what
 * is invoked keeps each lane's order and the checkpoint can move past the skipped ones.
 */
export function splitExpired<R>(
  records: readonly LaneRecord<R>[],
  now: number,
  maximumRecordAgeMs: number | undefined,
  oldest: (lane: string) => bigint | undefined,
): { expired: LaneRecord<R>[]; live: LaneRecord<R>[] } {
  const expired: LaneRecord<R>[] = [];
  const live: LaneRecord<R>[] = [];
  const liveLanes = new Set<string>();
  for (const record of records) {
    const horizon = oldest(record.lane);
    const trimmed = horizon === undefined || record.position < horizon;
    const tooOld = maximumRecordAgeMs !== undefined && now - record.arrivalMs > maximumRecordAgeMs;
    if (!liveLanes.has(record.lane) && (trimmed || tooOld)) expired.push(record);
    else {
      liveLanes.add(record.lane);
      live.push(record);
    }
  }
  return { expired, live };
}

/** Per lane, the position of the last of `records`. */
export function lastPositions<R>(records: readonly LaneRecord<R>[]): Map<string, bigint> {
  const last = new Map<string, bigint>();
  for (const record of records) {
    const seen = last.get(record.lane);
    if (seen === undefined || record.position > seen) last.set(record.lane, record.position);
  }
  return last;
}

function isFailedOrAfter<R>(record: LaneRecord<R>, failedFrom: Map<string, bigint>): boolean {
  const from = failedFrom.get(record.lane);
  return from !== undefined && record.position >= from;
}

function isExhausted(retries: number, policy: RetryPolicy): boolean {
  return policy.maximumRetryAttempts !== -1 && retries > policy.maximumRetryAttempts;
}
