import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { identifyBySequenceNumber } from '../batch-response.js';
import { resolveStreamOptions } from '../options.js';
import type { StreamEventSourceOptions } from '../options.js';
import { streamBatchInfo } from '../stream-batch-info.js';
import { StreamEventSource } from '../stream-event-source.js';
import { StreamPoller } from '../stream-poller.js';
import type { LaneRecord, PolledStream } from '../stream-source.js';
import type { DynamoDbModel, DynamoDbStreamRecord } from './model.js';

/**
 * Lambda's DynamoDB Streams event source mapping, emulated over the in-process {@link DynamoDbModel}:
 * the same stream rules as KinesisEventSource (one batch at a time per shard, shards in
 * parallel, checkpoint after success, the lowest reported sequence number with
 * ReportBatchItemFailures, retries, bisecting, record age, on-failure destination), with DynamoDB's
 * record shape and its 24-hour stream retention.
 *
 * @example
 * const source = new DynamoDbEventSource({ model: ddb, table: 'orders', startingPosition: 'TRIM_HORIZON', handler });
 * source.start();
 * await source.drain({ timeoutMs: 60_000 });
 */
export class DynamoDbEventSource extends StreamEventSource {
  constructor(
    options: StreamEventSourceOptions<DynamoDBRecord, DynamoDBStreamEvent> & {
      /** The DynamoDB model whose table stream to read. */
      model: DynamoDbModel;
      /** The table name. */
      table: string;
    },
  ) {
    const problems: string[] = [];
    const model = options.model;
    let shards: string[] = [];
    let streamArn = '';
    try {
      const info = model.describeTable(options.table);
      shards = info.shardIds;
      streamArn = info.streamArn;
    } catch {
      problems.push(`table ${JSON.stringify(options.table)} does not exist in the DynamoDB model: create it first (model.createTable).`);
    }
    const resolved = resolveStreamOptions(
      options,
      { label: 'DynamoDbEventSource', functionName: 'local-dynamodb-consumer', windowMs: 0, clock: model.clock },
      problems,
    );
    super(new StreamPoller(dynamoDbSource(model, options.table, streamArn, shards), resolved, model));
  }
}

/** The DynamoDB Streams side of the stream poller: shards as lanes, the mapping's own checkpoints, Lambda's shapes. */
function dynamoDbSource(model: DynamoDbModel, table: string, streamArn: string, shards: readonly string[]): PolledStream<DynamoDBRecord, DynamoDBStreamEvent> {
  const checkpoints = new Map<string, bigint>();
  const toLambda = (record: DynamoDbStreamRecord): LaneRecord<DynamoDBRecord> => ({
    lane: record.shardId,
    position: BigInt(record.sequenceNumber),
    arrivalMs: record.createdMs,
    record: {
      eventID: record.eventId,
      eventName: record.eventName,
      eventVersion: '1.1',
      eventSource: 'aws:dynamodb',
      awsRegion: model.region,
      dynamodb: {
        // Epoch seconds, as DynamoDB Streams gives it.
        ApproximateCreationDateTime: Math.floor(record.createdMs / 1000),
        Keys: record.keys,
        ...(record.newImage ? { NewImage: record.newImage } : {}),
        ...(record.oldImage ? { OldImage: record.oldImage } : {}),
        SequenceNumber: record.sequenceNumber,
        SizeBytes: record.sizeBytes,
        StreamViewType: record.streamViewType,
      },
      eventSourceARN: streamArn,
    },
  });
  return {
    signals: shards.length > 0 ? [model.changes(table)] : [],
    pollerLanes: () => shards.map((shard) => [shard]),
    read: (lane, after, max) => model.readShard(table, lane, after, max).map(toLambda),
    oldest: (lane) => model.shardBounds(table, lane).oldest,
    newest: (lane) => model.shardBounds(table, lane).newest,
    loadCheckpoint: (lane) => checkpoints.get(lane),
    saveCheckpoint: (lane, after) => void checkpoints.set(lane, after),
    describeCheckpoint: (after) => String(after),
    event: (batch) => ({ Records: batch.map((r) => r.record) }),
    identify: identifyBySequenceNumber,
    // DynamoDB's failure records give whole seconds: "2019-11-14T00:13:19Z".
    batchInfo: (batch) => ['DDBStreamBatchInfo', streamBatchInfo(batch, streamArn, (ms) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z'))],
  };
}

/** Options of {@link DynamoDbEventSource}: Lambda's settings for its event source mapping. */
export type DynamoDbEventSourceOptions = ConstructorParameters<typeof DynamoDbEventSource>[0];
