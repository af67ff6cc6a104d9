import { succeeded } from '../lanes/lanes.js';
import type { Outcome } from '../lanes/lanes.js';
import { InboxError } from '../errors.js';
import type { SourceRecord } from './source.js';

/**
 * The first record of each lane that did not succeed, in batch order: where the stream must restart.
 * Records after it in its lane did not start (the lane stopped there), or succeeded and are duplicates
 * when delivered again; none of them may be reported instead of it.
 */
export function restartPoints<Raw>(records: readonly SourceRecord<Raw>[], outcomes: readonly Outcome[]): SourceRecord<Raw>[] {
  const lanes = new Set<string>();
  const firsts: SourceRecord<Raw>[] = [];
  records.forEach((record, index) => {
    const lane = record.lane ?? '';
    if (succeeded(outcomes[index]!) || lanes.has(lane)) return;
    lanes.add(lane);
    firsts.push(record);
  });
  return firsts;
}

/**
 * Kinesis and DynamoDB Streams: `{ batchItemFailures: [{ itemIdentifier: sequenceNumber }] }` naming the
 * first failed record of the shard; Lambda checkpoints before the lowest one reported and retries from it.
 * A restart point without a sequence number cannot be named: the whole invocation fails instead.
 */
export function sequenceNumberReport<Raw>(
  records: readonly SourceRecord<Raw>[],
  outcomes: readonly Outcome[],
): { batchItemFailures: { itemIdentifier: string }[] } {
  const firsts = restartPoints(records, outcomes);
  if (firsts.some((record) => record.id === undefined)) {
    throw new InboxError(
      'a record that did not commit has no sequence number, so Lambda cannot restart from it; failing the whole batch so it is delivered again',
    );
  }
  return { batchItemFailures: firsts.map((record) => ({ itemIdentifier: record.id! })) };
}
