import type { KinesisStreamEvent, KinesisStreamRecord } from 'aws-lambda';
import { identifyBySequenceNumber } from '../batch-response.js';
import { resolveStreamOptions } from '../options.js';
import type { StreamEventSourceOptions } from '../options.js';
import { streamBatchInfo } from '../stream-batch-info.js';
import { StreamEventSource } from '../stream-event-source.js';
import { StreamPoller } from '../stream-poller.js';
import type { LaneRecord, PolledStream } from '../stream-source.js';
import type { KinesisDataRecord, KinesisModel } from './model.js';

/**
 * Lambda's Kinesis event source mapping, emulated over the in-process {@link KinesisModel}: one
 * poller per shard, one batch at a time per shard, in sequence order, shards in parallel; the
 * checkpoint (kept by the mapping, as Lambda keeps it) moves only after a successful invocation;
 * with ReportBatchItemFailures it moves to just before the LOWEST reported sequence number and the
 * batch is retried from there; a throw, a timeout or an invalid response fails the whole batch,
 * which is retried (or bisected), and after MaximumRetryAttempts or MaximumRecordAgeInSeconds it
 * goes to the on-failure destination and is skipped.
 *
 * @example
 * const source = new KinesisEventSource({ model: kinesis, stream: 'orders', startingPosition: 'TRIM_HORIZON', handler });
 * source.start();
 * await source.drain({ timeoutMs: 60_000 });
 * await source.stop();
 */
export class KinesisEventSource extends StreamEventSource {
  constructor(
    options: StreamEventSourceOptions<KinesisStreamRecord, KinesisStreamEvent> & {
      /** The Kinesis model to read. */
      model: KinesisModel;
      /** The stream name. */
      stream: string;
      /** The function's execution role, which records carry as `invokeIdentityArn`. @default `arn:aws:iam::<account>:role/<functionName>-role` */
      executionRoleArn?: string | undefined;
    },
  ) {
    const problems: string[] = [];
    const model = options.model;
    let shards: string[] = [];
    let arn = '';
    try {
      const info = model.describeStream(options.stream);
      shards = info.shards.map((s) => s.shardId);
      arn = info.arn;
    } catch {
      problems.push(`stream ${JSON.stringify(options.stream)} does not exist in the Kinesis model: create it first (model.createStream).`);
    }
    const resolved = resolveStreamOptions(
      options,
      { label: 'KinesisEventSource', functionName: 'local-kinesis-consumer', windowMs: 0, clock: model.clock },
      problems,
    );
    const roleArn = options.executionRoleArn ?? `arn:aws:iam::${model.accountId}:role/${resolved.functionName}-role`;
    super(new StreamPoller(kinesisSource(model, options.stream, arn, shards, roleArn), resolved, model));
  }
}

/** The Kinesis side of the stream poller: shards as lanes, the mapping's own checkpoints, Lambda's shapes. */
function kinesisSource(
  model: KinesisModel,
  stream: string,
  streamArn: string,
  shards: readonly string[],
  roleArn: string,
): PolledStream<KinesisStreamRecord, KinesisStreamEvent> {
  const checkpoints = new Map<string, bigint>();
  const toLambda = (record: KinesisDataRecord): LaneRecord<KinesisStreamRecord> => ({
    lane: record.shardId,
    position: BigInt(record.sequenceNumber),
    arrivalMs: record.approximateArrivalTimestamp,
    record: {
      kinesis: {
        kinesisSchemaVersion: '1.0',
        partitionKey: record.partitionKey,
        sequenceNumber: record.sequenceNumber,
        data: Buffer.from(record.data).toString('base64'),
        // Epoch seconds with milliseconds as the fraction, as Lambda sends it (1545084650.987).
        approximateArrivalTimestamp: record.approximateArrivalTimestamp / 1000,
      },
      eventSource: 'aws:kinesis',
      eventVersion: '1.0',
      eventID: `${record.shardId}:${record.sequenceNumber}`,
      eventName: 'aws:kinesis:record',
      invokeIdentityArn: roleArn,
      awsRegion: model.region,
      eventSourceARN: streamArn,
    },
  });
  return {
    signals: shards.length > 0 ? [model.changes(stream)] : [],
    pollerLanes: () => shards.map((shard) => [shard]),
    read: (lane, after, max) => model.readShard(stream, lane, after, max).map(toLambda),
    oldest: (lane) => model.shardBounds(stream, lane).oldest,
    newest: (lane) => model.shardBounds(stream, lane).newest,
    loadCheckpoint: (lane) => checkpoints.get(lane),
    saveCheckpoint: (lane, after) => void checkpoints.set(lane, after),
    describeCheckpoint: (after) => String(after),
    event: (batch) => ({ Records: batch.map((r) => r.record) }),
    identify: identifyBySequenceNumber,
    batchInfo: (batch) => ['KinesisBatchInfo', streamBatchInfo(batch, streamArn, (ms) => new Date(ms).toISOString())],
  };
}

/** Options of {@link KinesisEventSource}: Lambda's settings for its event source mapping. */
export type KinesisEventSourceOptions = ConstructorParameters<typeof KinesisEventSource>[0];
