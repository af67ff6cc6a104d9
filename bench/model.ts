import type { CountedOperation } from '../local/data-api/stats.js';
import type { Operation } from '../local/data-api/stats.js';
import { CONCURRENCY, POWERTOOLS_REAL } from './consumers.js';
import type { Variant } from './consumers.js';
import { DYNAMODB_OPERATIONS } from './dynamodb.js';
import type { DynamoDbOperation } from './dynamodb.js';
import { LATENCY_MODEL, dataApiLatencies, dynamoDbLatencies, modelledMs } from './latency-model.js';
import { dynamoDbTotal, formatCount, ratio } from './measure.js';
import type { CallCount, Shape, ShapeResult } from './measure.js';
import { freshRecords } from './records.js';
import type { Table } from './report.js';
import type { RemoteDataApi, RemoteDynamoDb } from './servers.js';

/**
 * New records at the latency model's figures: one Lambda, `batches` invocations in a row of `batchSize`
 * new records, each Data API and DynamoDB call delayed at its server by what the model gives its operation.
 */
export function latencyModelShape(batchSize: number, batches: number, server: RemoteDataApi, dynamodb: RemoteDynamoDb): Shape {
  const name = 'latency model';
  return {
    key: 'model',
    name,
    description:
      `one Lambda, ${batches} invocations in a row of ${batchSize} new records (${Math.min(batchSize, CONCURRENCY)} in flight), every call delayed at its ` +
      'server by the latency model (bench/latency-model.ts)',
    messages: batchSize * batches,
    server,
    before: async () => {
      await server.latency(dataApiLatencies());
      await dynamodb.latency(dynamoDbLatencies());
    },
    after: async () => {
      await server.latency(0);
      await dynamodb.latency({});
    },
    prepare: async (variant, invoker) => {
      const events = Array.from({ length: batches }, () => freshRecords(batchSize));
      return async () => {
        for (const records of events) await invoker.invoke(variant, records, server, name);
      };
    },
  };
}

/** The calls one record waits for, in order: per record for the per-record variants (records run side by side), the whole batch's for the batch modes. */
export function sequentialCalls(
  variant: Variant,
  count: CallCount,
  batchSize: number,
): { dataApi: Partial<Record<Operation, number>>; dynamodb: Partial<Record<DynamoDbOperation, number>> } {
  const scale = variant.perBatch ? batchSize : 1;
  const dataApi: Partial<Record<Operation, number>> = {};
  for (const [operation, perMessage] of Object.entries(count.freshPerOperation) as [CountedOperation, number][]) {
    if (operation !== 'ExecuteSql' && perMessage > 0) dataApi[operation] = perMessage * scale;
  }
  const dynamodb: Partial<Record<DynamoDbOperation, number>> = {};
  for (const operation of DYNAMODB_OPERATIONS) if (count.dynamodb.fresh[operation] > 0) dynamodb[operation] = count.dynamodb.fresh[operation] * scale;
  return { dataApi, dynamodb };
}

const ms = (value: number) => `${value.toFixed(value < 10 ? 1 : 0)} ms`;

/** The latency model's table: per message, round trips, the modelled and the measured wall time, and the handler's CPU above bare. */
export function latencyModelTable(all: readonly Variant[], calls: ReadonlyMap<string, CallCount>, result: ShapeResult, batchSize: number, bare: string): Table {
  const cpuOf = (id: string) => result.variants.find((entry) => entry.id === id)!.cpu.handler;
  const rows = all.map((variant) => {
    const count = calls.get(variant.id)!;
    const path = sequentialCalls(variant, count, batchSize);
    const roundTrips = Object.values(path.dataApi).reduce((sum, n) => sum + (n ?? 0), 0) + Object.values(path.dynamodb).reduce((sum, n) => sum + (n ?? 0), 0);
    const modelled = modelledMs(path);
    const measured = result.variants.find((entry) => entry.id === variant.id)!;
    const perMessageMs = 1000 / measured.median;
    const against = (baseline: string) => (variant.id === baseline ? '1x' : `${(1 / ratio(result, variant.id, baseline).median).toFixed(2)}x`);
    return [
      variant.id,
      variant.atomic,
      `${formatCount(roundTrips)}${variant.perBatch ? ' per batch' : ''}`,
      `${formatCount(count.fresh)} + ${formatCount(dynamoDbTotal(count.dynamodb.fresh))}`,
      ms(modelled / batchSize),
      ms(perMessageMs),
      against(bare),
      against(POWERTOOLS_REAL),
      variant.id === bare ? '0' : String(Math.round(cpuOf(variant.id) - cpuOf(bare))),
      String(Math.round(measured.cpu.server)),
    ];
  });
  const model = [
    ...Object.entries(LATENCY_MODEL.dataApi).map(([operation, latency]) => `Data API ${operation} ${latency.ms} ms (${latency.basis})`),
    ...Object.entries(LATENCY_MODEL.dynamodb).map(([operation, latency]) => `DynamoDB ${operation} ${latency.ms} ms (${latency.basis})`),
  ];
  return {
    title: `0. Per message at the latency model: round trips, wall time, handler CPU (batches of ${batchSize}, ${CONCURRENCY} in flight, median of ${result.rounds} rounds)`,
    headers: [
      'variant',
      'atomic',
      'sequential round trips (a record waits for)',
      'calls / new message (Data API + DynamoDB)',
      'modelled wall time per message',
      'measured wall time per message',
      'wall time vs bare',
      `wall time vs ${POWERTOOLS_REAL}`,
      'handler CPU per message, µs above bare',
      "local servers' CPU per message, µs",
    ],
    rows,
    notes: [
      `The model (bench/latency-model.ts; sources in bench/README.md, "The latency model"): ${model.join(', ')}.`,
      'Sequential round trips: the calls a record waits for one after another, from the counts of section 1 (per record: the records of ' +
        'a batch run side by side; per batch for the batch modes, whose calls serve all of it). Modelled wall time per message: those calls at ' +
        `the model's latencies, one after another, for a batch of ${batchSize} (its records side by side), divided by its ${batchSize} messages, with nothing ` +
        'else (no CPU, no queueing): the figure to carry to AWS, and to redo with your own latencies.',
      `Measured wall time per message: one Lambda consuming ${result.shape.messages} new messages in batches of ${batchSize}, the latencies injected at ` +
        "the local Data API and DynamoDB by operation before each call runs, divided by the messages; it adds this machine's CPU and " +
        "loopback to the model, and the local servers' own work (last column: the local Data API and dynalite, in the server process; " +
        'dynalite, an emulator over an in-memory LevelDB, costs far more per call than the local Data API, which inflates ' +
        `${POWERTOOLS_REAL}'s measured wall time here, not on AWS). The ratios are medians of per-round ratios (variants interleaved in each round).`,
      'Handler CPU: the CPU time of the process that runs the handlers (the consumer code and its SDK clients, user + system), per ' +
        "message, minus bare's in the same shape: what the inbox (or Powertools) costs in the Lambda itself, which Lambda bills. Below 0: " +
        "fewer SDK calls than bare's one per record (the batch modes).",
      `${POWERTOOLS_REAL}: Powertools' own makeIdempotent + BatchProcessor + DynamoDBPersistenceLayer against dynalite, the effect the same ` +
        'INSERT over the Data API; its record and its effect live in two stores, so it is not atomic (section 5b).',
    ],
  };
}
