import type { Clock } from '../sqs/clock.js';
import { waitForChange } from './change-signal.js';
import type { LaneRecord, PolledStream } from './stream-source.js';

/** Lambda's synchronous invocation payload limit: a batch stops growing before it would pass it. */
export const MAX_PAYLOAD_BYTES = 6 * 1024 * 1024;

/** What a poller gathers a batch from. */
export interface CollectInput<R> {
  source: PolledStream<R, unknown>;
  /** The lanes of this poller. */
  lanes: readonly string[];
  /** The position of the last record done on a lane (undefined: from the trim horizon). */
  checkpoint: (lane: string) => bigint | undefined;
  batchSize: number;
  windowMs: number;
  clock: Clock;
  /** Which lane to start filling from: pollers rotate it so no lane of a shared poller starves. */
  rotation: number;
  signal: AbortSignal;
}

/**
 * Waits until a lane has records after its checkpoint, then gathers a batch as Lambda does: with no
 * batching window, what is there now; with one, it keeps reading until the batch is full, the window
 * has passed, or the payload would pass 6 MB. Returns an empty batch only when stopped.
 * (invocation-eventsourcemapping "Batching behavior"; with-kinesis; with-ddb)
 */
export async function collectBatch<R>(input: CollectInput<R>): Promise<LaneRecord<R>[]> {
  const { clock, signal, source } = input;
  let batch = readBatch(input);
  while (batch.length === 0) {
    if (signal.aborted) return [];
    await waitForChange(clock, source.signals, Number.POSITIVE_INFINITY, signal);
    batch = readBatch(input);
  }
  if (input.windowMs === 0) return batch;
  const windowEnd = clock.now() + input.windowMs;
  while (batch.length < input.batchSize && !signal.aborted) {
    const now = clock.now();
    if (now >= windowEnd) break;
    await waitForChange(clock, source.signals, windowEnd - now, signal);
    batch = readBatch(input);
  }
  return batch;
}

/**
 * Reads up to a batch from the lanes' checkpoints, lane after lane from the rotation, each lane in
 * order, stopping before the record that would take the event past the payload limit.
 */
function readBatch<R>(input: CollectInput<R>): LaneRecord<R>[] {
  const { lanes, batchSize, source } = input;
  const batch: LaneRecord<R>[] = [];
  let payload = 0;
  for (let i = 0; i < lanes.length && batch.length < batchSize; i += 1) {
    const lane = lanes[(input.rotation + i) % lanes.length];
    if (lane === undefined) continue;
    for (const record of source.read(lane, input.checkpoint(lane), batchSize - batch.length)) {
      const size = Buffer.byteLength(JSON.stringify(record.record), 'utf8');
      // A record on its own is always delivered; a batch never grows past the limit.
      if (batch.length > 0 && payload + size > MAX_PAYLOAD_BYTES) return batch;
      batch.push(record);
      payload += size;
    }
  }
  return batch;
}
