import type { SQSRecord } from 'aws-lambda';
import type { CountedOperation } from '../local/data-api/stats.js';
import type { Variant } from './consumers.js';
import type { BenchDatabase } from './database.js';
import { freshRecords, redelivery, sqsEvent } from './records.js';
import type { RemoteDataApi, RemoteDynamoDb } from './servers.js';
import { DYNAMODB_OPERATIONS } from './dynamodb.js';
import type { DynamoDbOperation } from './dynamodb.js';

/**
 * Invokes variants' handlers and keeps, per variant, how many deliveries it was given (and how many were
 * first deliveries), so the run can check at the end that each applied exactly its effect per message
 * (and so did real work). A record reported failed is a problem of the run, named with the cause the
 * handler logged for it: no fault is injected, so it is a bug, or a timeout the report must name.
 */
export class Invoker {
  readonly firstDeliveries = new Map<string, number>();
  readonly deliveries = new Map<string, number>();
  readonly failures: string[] = [];

  constructor(
    private readonly database: BenchDatabase,
    /** The local DynamoDB, for the variants that keep their record there. */
    private readonly dynamodbEndpoint?: string,
  ) {}

  /** Invokes the variant's handler for `server` with one batch; resolves with the number of records reported failed. */
  async invoke(variant: Variant, records: readonly SQSRecord[], server: RemoteDataApi, during: string): Promise<number> {
    const fresh = records.filter((record) => record.attributes.ApproximateReceiveCount === '1').length;
    this.firstDeliveries.set(variant.id, (this.firstDeliveries.get(variant.id) ?? 0) + fresh);
    this.deliveries.set(variant.id, (this.deliveries.get(variant.id) ?? 0) + records.length);
    const handler = variant.handler(server.name, () => this.database.target(server), this.dynamodbEndpoint);
    const response = await handler(sqsEvent(records)).catch((error: unknown) => {
      // The whole invocation threw: every record comes back.
      for (const record of records) variant.failures.record(record.messageId, error);
      return { batchItemFailures: records.map((record) => ({ itemIdentifier: record.messageId })) };
    });
    const failed = response.batchItemFailures;
    if (failed.length > 0) {
      const causes = [...new Set(failed.map((failure) => variant.failures.take(failure.itemIdentifier)))];
      this.failures.push(
        `${variant.id}: ${failed.length} of ${records.length} records reported failed (${during}), with no fault injected; ` +
          `cause${causes.length === 1 ? '' : 's'}: ${causes.join(' | ')}`,
      );
    }
    return failed.length;
  }
}

/** Data API calls per message of one variant, for new messages and for their redeliveries. */
export interface CallCount {
  readonly fresh: number;
  readonly duplicate: number;
  /** e.g. "Begin 1 + Execute 2 + Commit 1". */
  readonly freshByOperation: string;
  readonly duplicateByOperation: string;
  /** Data API calls per new message, by operation. */
  readonly freshPerOperation: Record<CountedOperation, number>;
  /** DynamoDB calls per new message and per duplicate, by operation (all 0 for the variants that keep no record there). */
  readonly dynamodb: { readonly fresh: Record<DynamoDbOperation, number>; readonly duplicate: Record<DynamoDbOperation, number> };
}

/**
 * Counts the calls the server received while the variant consumed `batches` batches of `batchSize` new
 * records, then the same records delivered again in the same batches. Exact: the server counts every
 * request, and nothing else runs meanwhile.
 */
export async function countCalls(
  invoker: Invoker,
  server: RemoteDataApi,
  variant: Variant,
  batchSize = 10,
  batches = 2,
  dynamodb?: RemoteDynamoDb,
): Promise<CallCount> {
  const events = Array.from({ length: batches }, () => freshRecords(batchSize));
  const messages = batchSize * batches;
  const reset = () => Promise.all([server.resetStats(), dynamodb?.resetStats()]);
  const dynamoCounts = async () => perMessage(dynamodb ? await dynamodb.stats() : zeroDynamoDb(), messages);
  await reset();
  for (const records of events) await invoker.invoke(variant, records, server, 'counting calls, new messages');
  const freshCalls = await server.stats();
  const fresh = snapshot(freshCalls, messages);
  const dynamoFresh = await dynamoCounts();
  await reset();
  for (const records of events) await invoker.invoke(variant, records.map(redelivery), server, 'counting calls, redeliveries');
  const duplicate = snapshot(await server.stats(), messages);
  const dynamoDuplicate = await dynamoCounts();
  return {
    fresh: fresh.perMessage,
    duplicate: duplicate.perMessage,
    freshByOperation: fresh.byOperation,
    duplicateByOperation: duplicate.byOperation,
    freshPerOperation: perMessage(freshCalls, messages),
    dynamodb: { fresh: dynamoFresh, duplicate: dynamoDuplicate },
  };
}

function perMessage<Key extends string>(calls: Record<Key, number>, messages: number): Record<Key, number> {
  return Object.fromEntries(Object.entries<number>(calls).map(([operation, count]) => [operation, count / messages])) as Record<Key, number>;
}

const zeroDynamoDb = (): Record<DynamoDbOperation, number> =>
  Object.fromEntries(DYNAMODB_OPERATIONS.map((operation) => [operation, 0])) as Record<DynamoDbOperation, number>;

/** DynamoDB calls per message as "PutItem 1 + UpdateItem 1", or "none". */
export function dynamoDbSummary(calls: Record<DynamoDbOperation, number>): string {
  const parts = DYNAMODB_OPERATIONS.filter((operation) => calls[operation] > 0).map((operation) => `${operation} ${formatCount(calls[operation])}`);
  return parts.length ? parts.join(' + ') : 'none';
}

/** All DynamoDB calls per message. */
export const dynamoDbTotal = (calls: Record<DynamoDbOperation, number>) => DYNAMODB_OPERATIONS.reduce((sum, operation) => sum + calls[operation], 0);

const SHORT: Record<CountedOperation, string> = {
  BeginTransaction: 'Begin',
  ExecuteStatement: 'Execute',
  BatchExecuteStatement: 'BatchExecute',
  CommitTransaction: 'Commit',
  RollbackTransaction: 'Rollback',
  ExecuteSql: 'ExecuteSql',
};

function snapshot(calls: Record<CountedOperation, number>, messages: number): { perMessage: number; byOperation: string } {
  const operations = Object.keys(SHORT) as CountedOperation[];
  const parts = operations.filter((operation) => calls[operation] > 0).map((operation) => `${SHORT[operation]} ${formatCount(calls[operation] / messages)}`);
  const total = operations.reduce((sum, operation) => sum + calls[operation], 0);
  return { perMessage: total / messages, byOperation: parts.join(' + ') };
}

/** A count per message: whole numbers as they are, else two decimals. */
export const formatCount = (value: number) => (Number.isInteger(value) ? String(value) : value.toFixed(2));

/** A batch shape to time: how one trial is prepared (untimed) and run (timed). */
export interface Shape {
  /** Short key, for the summary. */
  readonly key: string;
  readonly name: string;
  readonly description: string;
  /** Messages one timed trial consumes; undefined when the trial runs for a time and says how many it consumed. */
  readonly messages: number | undefined;
  /** The Data API server its handlers call. */
  readonly server: RemoteDataApi;
  /** Untimed setup for one trial of one variant; returns the timed part, which may return the messages it consumed. */
  prepare(variant: Variant, invoker: Invoker): Promise<() => Promise<number | void>>;
  /** Around all the shape's rounds, e.g. to add latency to every Data API call. */
  readonly before?: () => Promise<void>;
  readonly after?: () => Promise<void>;
}

/** One variant's throughput over the rounds of one shape. */
export interface VariantThroughput {
  readonly id: string;
  /** Messages per second, one per round. */
  readonly perRound: readonly number[];
  readonly median: number;
  /** CPU microseconds per message, median over the rounds: this process (the handlers and the SDK), and the Data API server's process. */
  readonly cpu: { readonly handler: number; readonly server: number };
}

export interface ShapeResult {
  readonly shape: Shape;
  readonly rounds: number;
  readonly variants: readonly VariantThroughput[];
}

/** A variant's throughput over another's, round by round: the median of the per-round ratios, and their range. */
export interface Ratio {
  readonly median: number;
  readonly min: number;
  readonly max: number;
}

/** `id`'s messages/s over `baseline`'s in the same round, for every round. */
export function ratio(result: ShapeResult, id: string, baseline: string): Ratio {
  const of = (wanted: string) => {
    const found = result.variants.find((variant) => variant.id === wanted);
    if (!found) throw new Error(`"${wanted}" is not a variant of ${result.shape.name}`);
    return found.perRound;
  };
  const base = of(baseline);
  const ratios = of(id).map((rate, round) => rate / base[round]!);
  return { median: median(ratios), min: Math.min(...ratios), max: Math.max(...ratios) };
}

/**
 * Times every variant on the shape in alternating rounds: each round runs every variant once, the
 * starting variant rotating each round, so that drift on a shared machine (other tenants, autovacuum,
 * table growth) falls on every variant alike. Ratios are taken within a round (see {@link ratio}).
 * Warm the variants up before the first shape.
 */
export async function interleave(
  shape: Shape,
  variants: readonly Variant[],
  options: { rounds: number; invoker: Invoker; serverCpuMicros: () => Promise<number>; onRound?: (round: number) => void },
): Promise<ShapeResult> {
  const perRound = new Map<string, number[]>(variants.map((variant) => [variant.id, []]));
  const cpu = new Map<string, { handler: number[]; server: number[] }>(variants.map((variant) => [variant.id, { handler: [], server: [] }]));
  await shape.before?.();
  try {
    for (let round = 0; round < options.rounds; round++) {
      const offset = round % variants.length;
      const order = [...variants.slice(offset), ...variants.slice(0, offset)];
      for (const variant of order) {
        const run = await shape.prepare(variant, options.invoker);
        const serverBefore = await options.serverCpuMicros();
        const handlerBefore = process.cpuUsage();
        const started = performance.now();
        const consumed = await run();
        const seconds = (performance.now() - started) / 1000;
        const handler = process.cpuUsage(handlerBefore);
        const server = (await options.serverCpuMicros()) - serverBefore;
        const messages = typeof consumed === 'number' ? consumed : shape.messages!;
        perRound.get(variant.id)!.push(messages / seconds);
        cpu.get(variant.id)!.handler.push((handler.user + handler.system) / messages);
        cpu.get(variant.id)!.server.push(server / messages);
      }
      options.onRound?.(round);
    }
  } finally {
    await shape.after?.();
  }
  return {
    shape,
    rounds: options.rounds,
    variants: variants.map((variant) => {
      const rates = perRound.get(variant.id)!;
      const used = cpu.get(variant.id)!;
      return { id: variant.id, perRound: rates, median: median(rates), cpu: { handler: median(used.handler), server: median(used.server) } };
    }),
  };
}

/** The median; the mean of the middle two for an even count. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** The p-th percentile (0-100) by nearest rank. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}
