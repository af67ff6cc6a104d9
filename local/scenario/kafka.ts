import type { KafkaRecord } from '../../lambda/inbox/sources/kafka.js';
import { KafkaEventSource } from '../streams/kafka/event-source.js';
import { KafkaModel } from '../streams/kafka/model.js';
import { LANES, text } from './stream.js';
import type { StreamLog } from './stream.js';

/** A Kafka topic of four partitions on a fresh model, its records' lane their record key. */
export function kafkaTopic(): StreamLog {
  const model = new KafkaModel();
  model.createTopic('records', { partitions: LANES });
  return {
    resends: true,
    // The lane is the record key (murmur2 picks the partition); a re-send is the same record again.
    put: ({ key, lane, body }) => void model.produce('records', { key: lane, value: text(body), headers: { 'idempotency-key': key } }),
    eventSource: (handler, options) =>
      new KafkaEventSource({
        model,
        topic: 'records',
        startingPosition: 'TRIM_HORIZON',
        maximumBatchingWindowMs: 0,
        pollerMode: 'provisioned',
        reportBatchItemFailures: true,
        ...options,
        handler,
      } as never) as never,
    recordId: (record) => `${(record as KafkaRecord).topic}-${(record as KafkaRecord).partition}@${(record as KafkaRecord).offset}`,
  };
}
