import type { KinesisStreamRecord } from 'aws-lambda';
import { KinesisEventSource } from '../streams/kinesis/event-source.js';
import { KinesisModel } from '../streams/kinesis/model.js';
import { LANES, text } from './stream.js';
import type { StreamLog } from './stream.js';

/** A Kinesis stream of four shards on a fresh model, its records' lane their partition key. */
export function kinesisStream(): StreamLog {
  const model = new KinesisModel();
  model.createStream('records', { shardCount: LANES });
  return {
    resends: true,
    // The lane is the partition key: its records share a shard, in production order. A re-put is the same record again.
    put: ({ lane, body }) => void model.putRecord({ stream: 'records', partitionKey: lane, data: text(body) }),
    eventSource: (handler, options) =>
      new KinesisEventSource({ model, stream: 'records', startingPosition: 'TRIM_HORIZON', ...options, handler } as never) as never,
    recordId: (record) => (record as KinesisStreamRecord).eventID,
  };
}
