import type { LaneRecord } from './stream-source.js';

/**
 * KinesisBatchInfo / DDBStreamBatchInfo of a failure record: the shard, the first and last sequence
 * numbers and arrival times of the discarded records, how many, and the stream ARN.
 */
export function streamBatchInfo<R>(batch: readonly LaneRecord<R>[], streamArn: string, formatTime: (ms: number) => string): Record<string, unknown> {
  const first = batch[0];
  const last = batch.at(-1);
  return {
    shardId: first?.lane,
    startSequenceNumber: String(first?.position),
    endSequenceNumber: String(last?.position),
    approximateArrivalOfFirstRecord: formatTime(first?.arrivalMs ?? 0),
    approximateArrivalOfLastRecord: formatTime(last?.arrivalMs ?? 0),
    batchSize: batch.length,
    streamArn,
  };
}
