import type { Faults } from '../local/index.js';
import type { Shape } from './measure.js';
import { freshRecord, freshRecords, redelivery } from './records.js';

/** The standard-queue shape: one invocation of `size` new records, CONCURRENCY in flight. */
export function standardShape(size: number): Shape {
  return {
    name: `standard, ${size}-record batch`,
    description: `one invocation of ${size} new records from a standard queue, 10 in flight`,
    messages: size,
    prepare: async (variant, invoker) => {
      const records = freshRecords(size);
      return () => invoker.invoke(variant, records);
    },
  };
}

/**
 * The FIFO shape: `batches` invocations one after the other, each of 10 records of one message group.
 * A group's records run one at a time, so this times the per-record latency chain a FIFO group sees.
 */
export function fifoShape(batches: number, batchSize = 10): Shape {
  return {
    name: `FIFO, ${batches} batches x ${batchSize}, one group`,
    description: `${batches} invocations in a row, each of ${batchSize} records of one message group (run in order, one at a time)`,
    messages: batches * batchSize,
    prepare: async (variant, invoker) => {
      const group = `group-${variant.id}-${Math.random().toString(36).slice(2, 8)}`;
      const events = Array.from({ length: batches }, () => Array.from({ length: batchSize }, () => freshRecord({ groupId: group })));
      return async () => {
        for (const records of events) await invoker.invoke(variant, records);
      };
    },
  };
}

/**
 * Half redeliveries: `size / 2` messages are consumed first (untimed), then one timed invocation holds
 * their redeliveries alternating with as many new records.
 */
export function duplicatesShape(size: number): Shape {
  const half = Math.floor(size / 2);
  return {
    name: `standard, ${size}-record batch, 50% redeliveries`,
    description: `one invocation of ${half} redeliveries of consumed messages alternating with ${size - half} new records`,
    messages: size,
    prepare: async (variant, invoker) => {
      const consumed = freshRecords(half);
      await invoker.invoke(variant, consumed);
      const redelivered = consumed.map(redelivery);
      const records = freshRecords(size - half).flatMap((record, index) => (redelivered[index] ? [redelivered[index]!, record] : [record]));
      return () => invoker.invoke(variant, records);
    },
  };
}

/**
 * The standard shape with `ms` added to every Data API call at the server: closer to AWS, where a call is
 * a network round trip of several milliseconds, than the loopback calls of the other shapes.
 */
export function latencyShape(size: number, ms: number, faults: Faults): Shape {
  const standard = standardShape(size);
  return {
    ...standard,
    name: `standard, ${size}-record batch, +${ms} ms per call`,
    description: `${standard.description}, every Data API call delayed ${ms} ms at the server`,
    before: () => faults.latency({ ms }),
    after: () => faults.clear(),
  };
}
