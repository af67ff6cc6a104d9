import type { SQSRecord } from 'aws-lambda';
import type { CountedOperation, Stats } from '../local/index.js';
import type { Variant } from './consumers.js';
import { freshRecords, redelivery, sqsEvent } from './records.js';

/**
 * Invokes variants' handlers and keeps, per variant, how many first deliveries it was given, so the run
 * can check at the end that each applied exactly its effect per new message (and so did real work).
 */
export class Invoker {
  readonly firstDeliveries = new Map<string, number>();

  /** Invokes the handler with one batch; any reported failure makes the measurement void, so it throws. */
  async invoke(variant: Variant, records: readonly SQSRecord[]): Promise<void> {
    const fresh = records.filter((record) => record.attributes.ApproximateReceiveCount === '1').length;
    this.firstDeliveries.set(variant.id, (this.firstDeliveries.get(variant.id) ?? 0) + fresh);
    const response = await variant.handler(sqsEvent(records));
    const failed = response.batchItemFailures.length;
    if (failed > 0) {
      throw new Error(`${variant.id}: ${failed} of ${records.length} records reported failed in a benchmark batch; no fault was injected, so this is a bug`);
    }
  }
}

/** Data API calls per message of one variant, for new messages and for their redeliveries. */
export interface CallCount {
  readonly fresh: number;
  readonly duplicate: number;
  /** e.g. "Begin 1 + Execute 2 + Commit 1". */
  readonly freshByOperation: string;
  readonly duplicateByOperation: string;
}

/**
 * Counts the calls the server received while the variant consumed `messages` new records, then the same
 * records delivered again. Exact: the server counts every request, and nothing else runs meanwhile.
 */
export async function countCalls(invoker: Invoker, stats: Stats, variant: Variant, messages = 20): Promise<CallCount> {
  const records = freshRecords(messages);
  stats.reset();
  await invoker.invoke(variant, records);
  const fresh = snapshot(stats, messages);
  stats.reset();
  await invoker.invoke(variant, records.map(redelivery));
  const duplicate = snapshot(stats, messages);
  return { fresh: fresh.perMessage, duplicate: duplicate.perMessage, freshByOperation: fresh.byOperation, duplicateByOperation: duplicate.byOperation };
}

const SHORT: Record<CountedOperation, string> = {
  BeginTransaction: 'Begin',
  ExecuteStatement: 'Execute',
  BatchExecuteStatement: 'BatchExecute',
  CommitTransaction: 'Commit',
  RollbackTransaction: 'Rollback',
  ExecuteSql: 'ExecuteSql',
};

function snapshot(stats: Stats, messages: number): { perMessage: number; byOperation: string } {
  const parts = (Object.keys(SHORT) as CountedOperation[])
    .filter((operation) => stats.calls[operation] > 0)
    .map((operation) => `${SHORT[operation]} ${formatCount(stats.calls[operation] / messages)}`);
  return { perMessage: stats.total() / messages, byOperation: parts.join(' + ') };
}

const formatCount = (value: number) => (Number.isInteger(value) ? String(value) : value.toFixed(2));

/** A batch shape to time: how one trial is prepared (untimed) and run (timed). */
export interface Shape {
  readonly name: string;
  readonly description: string;
  /** Messages one timed trial consumes. */
  readonly messages: number;
  /** Untimed setup for one trial of one variant; returns the timed part. */
  prepare(variant: Variant, invoker: Invoker): Promise<() => Promise<void>>;
  /** Around all the shape's rounds, e.g. to add latency to every Data API call. */
  readonly before?: () => void;
  readonly after?: () => void;
}

/** One variant's throughput over the rounds of one shape. */
export interface VariantThroughput {
  readonly id: string;
  /** Messages per second, one per round. */
  readonly perRound: readonly number[];
  readonly median: number;
  /** This variant's throughput over the baseline's in the same round, one per round. */
  readonly ratios: readonly number[];
  readonly medianRatio: number;
}

export interface ShapeResult {
  readonly shape: Shape;
  readonly rounds: number;
  readonly baseline: string;
  readonly variants: readonly VariantThroughput[];
}

/**
 * Times every variant on the shape in alternating rounds: each round runs every variant once, the
 * starting variant rotating each round, so that drift on a shared machine (other tenants, autovacuum,
 * table growth) falls on every variant alike. Each variant is compared to the baseline within the same
 * round, and the median of those ratios is reported. Warm the variants up before the first shape.
 */
export async function interleave(
  shape: Shape,
  variants: readonly Variant[],
  options: { rounds: number; baseline: string; invoker: Invoker; onRound?: (round: number) => void },
): Promise<ShapeResult> {
  const perRound = new Map<string, number[]>(variants.map((variant) => [variant.id, []]));
  shape.before?.();
  try {
    for (let round = 0; round < options.rounds; round++) {
      const offset = round % variants.length;
      const order = [...variants.slice(offset), ...variants.slice(0, offset)];
      for (const variant of order) {
        const run = await shape.prepare(variant, options.invoker);
        const started = performance.now();
        await run();
        const seconds = (performance.now() - started) / 1000;
        perRound.get(variant.id)!.push(shape.messages / seconds);
      }
      options.onRound?.(round);
    }
  } finally {
    shape.after?.();
  }
  const baseline = perRound.get(options.baseline);
  if (!baseline) throw new Error(`baseline "${options.baseline}" is not one of the variants`);
  return {
    shape,
    rounds: options.rounds,
    baseline: options.baseline,
    variants: variants.map((variant) => {
      const rates = perRound.get(variant.id)!;
      const ratios = rates.map((rate, round) => rate / baseline[round]!);
      return { id: variant.id, perRound: rates, median: median(rates), ratios, medianRatio: median(ratios) };
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
