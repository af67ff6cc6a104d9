import type { SQSRecord } from 'aws-lambda';
import type { Variant } from './consumers.js';
import type { Invoker, Shape } from './measure.js';
import { freshRecord, freshRecords, redelivery } from './records.js';
import type { RemoteDataApi } from './servers.js';

/** What every shape shares: the batch size, how many batches one trial runs, and the added latency. */
export interface ShapeSettings {
  /** Records per SQS batch (Lambda's default for a standard queue is 10). */
  readonly batchSize: number;
  /** Batches one Lambda consumes one after another in one trial. */
  readonly batches: number;
  /** Added to every Data API call at the server, in milliseconds: the round trip AWS would cost. */
  readonly latencyMs: number;
}

/** Runs `lanes` Lambdas at once, each invoking its events one after another. */
async function runLanes(invoker: Invoker, variant: Variant, server: RemoteDataApi, lanes: readonly (readonly SQSRecord[][])[], during: string): Promise<void> {
  await Promise.all(
    lanes.map(async (events) => {
      for (const records of events) await invoker.invoke(variant, records, server, during);
    }),
  );
}

function withLatency(server: RemoteDataApi, ms: number): Pick<Shape, 'before' | 'after'> {
  return { before: () => server.latency(ms), after: () => server.latency(0) };
}

const latencyLabel = (ms: number) => (ms > 0 ? `, +${ms} ms per call` : '');

/** New records from a standard queue: one Lambda, `batches` invocations in a row. */
export function standardShape(settings: ShapeSettings, server: RemoteDataApi): Shape {
  const { batchSize, batches, latencyMs } = settings;
  const name = `standard${latencyLabel(latencyMs)}`;
  return {
    key: 'standard',
    name,
    description: `one Lambda, ${batches} invocations in a row of ${batchSize} new records from a standard queue (${Math.min(batchSize, 10)} in flight)${latencyMs > 0 ? `, every Data API call delayed ${latencyMs} ms at the server` : ''}`,
    messages: batchSize * batches,
    server,
    ...withLatency(server, latencyMs),
    prepare: async (variant, invoker) => {
      const events = Array.from({ length: batches }, () => freshRecords(batchSize));
      return () => runLanes(invoker, variant, server, [events], name);
    },
  };
}

/**
 * Half redeliveries: in each batch, redeliveries of messages consumed before (untimed) alternate with new
 * records, as a batch after a partial failure or a visibility timeout looks.
 */
export function duplicatesShape(settings: ShapeSettings, server: RemoteDataApi): Shape {
  const { batchSize, batches, latencyMs } = settings;
  const half = Math.floor(batchSize / 2);
  const name = `50% redeliveries${latencyLabel(latencyMs)}`;
  return {
    key: 'duplicates',
    name,
    description: `one Lambda, ${batches} invocations in a row, each of ${half} redeliveries of consumed messages alternating with ${batchSize - half} new records`,
    messages: batchSize * batches,
    server,
    ...withLatency(server, latencyMs),
    prepare: async (variant, invoker) => {
      const consumed = Array.from({ length: batches }, () => freshRecords(half));
      for (const records of consumed) await invoker.invoke(variant, records, server, `${name}, consuming the messages to redeliver (untimed)`);
      const events = consumed.map((records) => {
        const again = records.map(redelivery);
        return freshRecords(batchSize - half).flatMap((record, index) => (again[index] ? [again[index]!, record] : [record]));
      });
      return () => runLanes(invoker, variant, server, [events], name);
    },
  };
}

/**
 * A FIFO queue: one Lambda, `batches` invocations in a row of `batchSize` records spread over `groups`
 * message groups. A group's records run one at a time, in order; groups run side by side.
 */
export function fifoShape(settings: ShapeSettings, server: RemoteDataApi, groups: number): Shape {
  const { batchSize, batches, latencyMs } = settings;
  const name = `FIFO, ${groups} group${groups === 1 ? '' : 's'}${latencyLabel(latencyMs)}`;
  return {
    key: `fifo-${groups}`,
    name,
    description: `one Lambda, ${batches} invocations in a row of ${batchSize} records of a FIFO queue over ${groups} message group${groups === 1 ? '' : 's'}`,
    messages: batchSize * batches,
    server,
    ...withLatency(server, latencyMs),
    prepare: async (variant, invoker) => {
      const prefix = `group-${variant.id}-${Math.random().toString(36).slice(2, 8)}`;
      const events = Array.from({ length: batches }, () =>
        Array.from({ length: batchSize }, (_, index) => freshRecord({ groupId: `${prefix}-${index % groups}` })),
      );
      return () => runLanes(invoker, variant, server, [events], name);
    },
  };
}

/**
 * The database as the bottleneck: the server admits `limit` calls at once (Aurora at scale: more
 * concurrency adds waiting, not throughput) and `lambdas` Lambdas consume batches side by side, more than
 * enough to keep it busy, so that the calls each variant makes decide its throughput. A trial runs for
 * `seconds` (each Lambda starts no invocation after that, and finishes the one it runs), so that the
 * variants that make few calls are timed as long as the others.
 */
export function databaseBoundShape(settings: ShapeSettings, server: RemoteDataApi, lambdas: number, limit: number, seconds: number): Shape {
  const { batchSize } = settings;
  const name = `database-bound (${limit} calls at once)`;
  return {
    key: 'database-bound',
    name,
    description:
      `${lambdas} Lambdas side by side, each invoking batches of ${batchSize} new records one after another for ${seconds} s, against a ` +
      `server that runs ${limit} calls at once and queues the rest, no added latency`,
    messages: undefined,
    server,
    prepare: async (variant, invoker) => async () => {
      const deadline = performance.now() + seconds * 1000;
      let consumed = 0;
      await Promise.all(
        Array.from({ length: lambdas }, async () => {
          while (performance.now() < deadline) {
            await invoker.invoke(variant, freshRecords(batchSize), server, name);
            consumed += batchSize;
          }
        }),
      );
      return consumed;
    },
  };
}
