import { randomUUID } from 'node:crypto';
import type { MSKEvent, MSKRecord, SelfManagedKafkaEvent } from 'aws-lambda';
import { resolveStreamOptions } from '../options.js';
import type { StreamEventSourceOptions } from '../options.js';
import { StreamEventSource } from '../stream-event-source.js';
import { StreamPoller } from '../stream-poller.js';
import type { Identified, LaneRecord, PolledStream } from '../stream-source.js';
import type { KafkaModel, KafkaStoredRecord } from './model.js';

/** The event a Kafka handler gets: MSK's, or a self-managed cluster's (no ARN), as the model's kind says. */
export type KafkaEvent = MSKEvent | SelfManagedKafkaEvent;

/** One record of a {@link KafkaEvent}; MSK and self-managed records have the same shape. */
export type KafkaRecord = MSKRecord;

/**
 * The partial batch response of a Kafka handler: unlike the streams' sequence numbers, each
 * itemIdentifier names a topic-partition (the event's `records` key, `"orders-0"`) and the offset to
 * resume that partition from.
 */
export interface KafkaBatchResponse {
  batchItemFailures: { itemIdentifier: { partition: string; offset: number } }[];
}

/** With a destination and no retry limit, Lambda applies this many retries (kafka-retry-configurations). */
const RETRIES_WITH_DESTINATION = 10;

/**
 * Lambda's Kafka event source mapping (Amazon MSK or self-managed), emulated over the in-process
 * {@link KafkaModel}: records of a partition in offset order, one batch at a time per consumer,
 * consumers in parallel; the group's offsets are committed only after a successful invocation. In
 * provisioned mode a partial response names `{ partition: "<topic>-<n>", offset }` entries, and each
 * named partition resumes from the lowest offset named for it while the others commit past the
 * batch; retries, bisecting, record age and the on-failure destination behave as for the streams
 * (with infinite retries and a destination, Lambda caps retries at 10). On-demand mode: see
 * `pollerMode`.
 *
 * @example
 * const source = new KafkaEventSource({ model: kafka, topic: 'orders', startingPosition: 'TRIM_HORIZON', handler });
 * source.start();
 * await source.drain({ timeoutMs: 60_000 });
 */
export class KafkaEventSource extends StreamEventSource {
  /** The consumer group the mapping commits offsets for. */
  readonly consumerGroupId: string;

  constructor(
    options: StreamEventSourceOptions<MSKRecord, MSKEvent | SelfManagedKafkaEvent> & {
      /** The Kafka model (the cluster) to consume from. */
      model: KafkaModel;
      /** The topic (a Kafka mapping consumes exactly one). */
      topic: string;
      /** The consumer group whose committed offsets the mapping reads and writes. @default a new UUID, as Lambda uses the mapping's UUID */
      consumerGroupId?: string | undefined;
      /**
       * Where Lambda's Kafka pollers run. Provisioned mode (ProvisionedPollerConfig) is where the error
       * handling controls live: partial batch response, bisect, retry limit, record age, on-failure
       * destination. On-demand mode has none of them: the response body is not read, only a thrown error
       * (or a timeout) fails a batch, and a failed batch is retried until it succeeds. Lambda's own default
       * is on-demand; this emulator defaults to provisioned, where ReportBatchItemFailures (on by default
       * here, as for the other sources) is allowed. @default 'provisioned'
       */
      pollerMode?: 'provisioned' | 'on-demand' | undefined;
      /**
       * How many consumers of the group run at once, 1 to the partition count. Partitions are spread over
       * them; each consumer invokes one batch at a time, and a batch may hold records of several of its
       * partitions, as a Lambda Kafka payload can. @default one per partition
       */
      consumers?: number | undefined;
    },
  ) {
    const problems: string[] = [];
    const model = options.model;
    let partitions = 0;
    try {
      partitions = model.partitionCount(options.topic);
    } catch {
      problems.push(`topic ${JSON.stringify(options.topic)} does not exist in the Kafka model: create it first (model.createTopic).`);
    }
    const mode = options.pollerMode ?? 'provisioned';
    if (mode !== 'provisioned' && mode !== 'on-demand') problems.push(`pollerMode must be 'provisioned' or 'on-demand'; got ${JSON.stringify(mode)}.`);
    if (mode === 'on-demand') problems.push(...provisionedOnly(options));
    const consumers = options.consumers ?? Math.max(1, partitions);
    if (partitions > 0 && (!Number.isInteger(consumers) || consumers < 1 || consumers > partitions)) {
      problems.push(`consumers must be an integer from 1 to the partition count of ${options.topic} (${partitions}); got ${consumers}.`);
    }
    const groupId = options.consumerGroupId ?? randomUUID();
    if (typeof groupId !== 'string' || groupId === '') problems.push('consumerGroupId must be a non-empty string.');
    const onDemand = mode === 'on-demand';
    const retries = options.maximumRetryAttempts ?? -1;
    const resolved = resolveStreamOptions(
      {
        ...options,
        // On demand, the response body is never read and a failed batch is retried until it succeeds.
        reportBatchItemFailures: onDemand ? false : options.reportBatchItemFailures,
        maximumRetryAttempts: !onDemand && retries === -1 && options.onFailure ? RETRIES_WITH_DESTINATION : retries,
      },
      { label: 'KafkaEventSource', functionName: 'local-kafka-consumer', windowMs: 500, clock: model.clock },
      problems,
    );
    super(new StreamPoller(kafkaSource(model, options.topic, groupId, partitions, consumers), resolved, model));
    this.consumerGroupId = groupId;
  }
}

/** The settings on-demand mode refuses, each named with the fix. */
function provisionedOnly(options: KafkaEventSourceOptions): string[] {
  const fix = "it is an error handling control of provisioned mode: set pollerMode: 'provisioned' or leave it out.";
  const problems: string[] = [];
  if (options.reportBatchItemFailures === true) problems.push(`reportBatchItemFailures: ${fix}`);
  if (options.bisectBatchOnFunctionError === true) problems.push(`bisectBatchOnFunctionError: ${fix}`);
  if (options.maximumRetryAttempts !== undefined && options.maximumRetryAttempts !== -1) problems.push(`maximumRetryAttempts: ${fix}`);
  if (options.maximumRecordAgeSeconds !== undefined && options.maximumRecordAgeSeconds !== -1) problems.push(`maximumRecordAgeSeconds: ${fix}`);
  if (options.onFailure !== undefined) problems.push(`onFailure: ${fix}`);
  return problems;
}

/** The Kafka side of the stream poller: topic-partitions as lanes, offsets committed to the consumer group. */
function kafkaSource(model: KafkaModel, topic: string, group: string, partitions: number, consumers: number): PolledStream<KafkaRecord, KafkaEvent> {
  const lanes = Array.from({ length: partitions }, (_, p) => `${topic}-${p}`);
  const partitionOf = (lane: string): number => Number(lane.slice(topic.length + 1));
  const toLambda = (record: KafkaStoredRecord): LaneRecord<KafkaRecord> => ({
    lane: `${topic}-${record.partition}`,
    position: BigInt(record.offset),
    arrivalMs: record.timestamp,
    record: {
      topic: record.topic,
      partition: record.partition,
      offset: record.offset,
      timestamp: record.timestamp,
      timestampType: 'CREATE_TIME',
      // Absent keys and tombstone values are left out: the event has nothing to base64.
      ...(record.key === null ? {} : { key: base64(record.key) }),
      ...(record.value === null ? {} : { value: base64(record.value) }),
      headers: record.headers.map(([name, value]) => ({ [name]: javaBytes(value) })),
    } as KafkaRecord,
  });
  const event = (batch: readonly LaneRecord<KafkaRecord>[]): KafkaEvent => {
    const records: Record<string, KafkaRecord[]> = {};
    for (const r of batch) (records[r.lane] ??= []).push(r.record);
    return model.clusterArn === undefined
      ? { eventSource: 'SelfManagedKafka', bootstrapServers: model.bootstrapServers, records }
      : { eventSource: 'aws:kafka', eventSourceArn: model.clusterArn, bootstrapServers: model.bootstrapServers, records };
  };
  return {
    signals: partitions > 0 ? [model.changes(topic)] : [],
    pollerLanes: () => Array.from({ length: consumers }, (_, c) => lanes.filter((_, p) => p % consumers === c)),
    read: (lane, after, max) => model.readPartition(topic, partitionOf(lane), after === undefined ? undefined : Number(after + 1n), max).map(toLambda),
    oldest: (lane) => optionalBigInt(model.partitionBounds(topic, partitionOf(lane)).first),
    newest: (lane) => optionalBigInt(model.partitionBounds(topic, partitionOf(lane)).last),
    // The group's committed offset is the next record to read; the poller keeps the last one done.
    loadCheckpoint: (lane) => optionalBigInt(model.committedOffset(group, topic, partitionOf(lane)), -1n),
    saveCheckpoint: (lane, after) => model.commitOffset(group, topic, partitionOf(lane), Number(after + 1n)),
    describeCheckpoint: (after) => String(after + 1n),
    event,
    identify: identifyByPartitionOffset,
    batchInfo: (batch) => ['KafkaBatchInfo', kafkaBatchInfo(batch, model, Buffer.byteLength(JSON.stringify(event(batch)), 'utf8'))],
  };
}

/**
 * `identify` for Kafka: the itemIdentifier is `{ partition: "<topic>-<n>", offset: <number> }` naming
 * a record of the batch; anything else (a string, a missing field, a record not in the batch) fails
 * the whole batch, as the streams' rules do.
 */
export function identifyByPartitionOffset(itemIdentifier: unknown, batch: readonly LaneRecord<KafkaRecord>[]): Identified<KafkaRecord> {
  if (typeof itemIdentifier !== 'object' || itemIdentifier === null || Array.isArray(itemIdentifier)) {
    return { invalid: `itemIdentifier ${JSON.stringify(itemIdentifier)} must be an object { partition: "<topic>-<n>", offset: <number> }.` };
  }
  const { partition, offset } = itemIdentifier as { partition?: unknown; offset?: unknown };
  if (typeof partition !== 'string' || partition === '' || typeof offset !== 'number' || !Number.isInteger(offset)) {
    return { invalid: `itemIdentifier ${JSON.stringify(itemIdentifier)} needs a partition string ("<topic>-<n>") and an integer offset.` };
  }
  const record = batch.find((r) => r.lane === partition && r.position === BigInt(offset));
  if (!record) return { invalid: `itemIdentifier ${JSON.stringify(itemIdentifier)} names no record of this batch.` };
  return { record };
}

/** KafkaBatchInfo of a failure record: per topic-partition, the first and last offsets and timestamps. */
function kafkaBatchInfo(batch: readonly LaneRecord<KafkaRecord>[], model: KafkaModel, payloadSize: number): Record<string, unknown> {
  const recordsInfo: Record<string, Record<string, string>> = {};
  for (const lane of new Set(batch.map((r) => r.lane))) {
    const records = batch.filter((r) => r.lane === lane);
    const first = records[0];
    const last = records.at(-1);
    recordsInfo[lane] = {
      firstRecordOffset: String(first?.position),
      lastRecordOffset: String(last?.position),
      firstRecordTimestamp: new Date(first?.arrivalMs ?? 0).toISOString(),
      lastRecordTimestamp: new Date(last?.arrivalMs ?? 0).toISOString(),
    };
  }
  return {
    batchSize: batch.length,
    ...(model.clusterArn === undefined ? {} : { eventSourceArn: model.clusterArn }),
    bootstrapServers: model.bootstrapServers,
    payloadSize,
    recordsInfo,
  };
}

function base64(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('base64');
}

/** Header values as Lambda's (Java) poller writes them: signed bytes, -128 to 127. */
function javaBytes(bytes: Uint8Array): number[] {
  return [...new Int8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength)];
}

function optionalBigInt(value: number | undefined, shift = 0n): bigint | undefined {
  return value === undefined ? undefined : BigInt(value) + shift;
}

/** Options of {@link KafkaEventSource}: Lambda's settings for its event source mapping. */
export type KafkaEventSourceOptions = ConstructorParameters<typeof KafkaEventSource>[0];
