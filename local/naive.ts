import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { isFifo, runBatch, succeeded } from '../lambda/inbox/batch.js';
import type { Outcome } from '../lambda/inbox/batch.js';
import type { DataApiSession } from '../lambda/inbox/index.js';

/**
 * The hand-rolled consumer sqs-inbox replaces, kept as the baseline for the demo and the benchmarks:
 * check for a processed record, apply the effect, record the message, each its own autocommit call.
 * A crash or a lost response between the effect and the record applies the effect again on redelivery,
 * and two consumers racing on one message can both pass the check.
 */
export interface NaiveConsumer {
  readonly session: DataApiSession;
  /** A table with a `message_key text PRIMARY KEY` column, as a quoted, trusted identifier. */
  readonly processedTable: string;
  /** The message's idempotency key. */
  readonly keyOf: (record: SQSRecord) => string;
  /** Applies the effect (autocommit). */
  readonly effect: (record: SQSRecord) => Promise<void>;
  /** Fault hook between the effect and the record: throw to simulate the worker dying there. */
  readonly afterEffect?: ((record: SQSRecord) => void) | undefined;
}

/** One record, the naive way; never throws. */
export async function consumeNaively(consumer: NaiveConsumer, record: SQSRecord): Promise<Outcome> {
  try {
    const key = consumer.keyOf(record);
    const seen = await consumer.session.execute(`SELECT 1 FROM ${consumer.processedTable} WHERE message_key = :key`, { key });
    if (seen.rows.length > 0) return { kind: 'duplicate' };
    await consumer.effect(record);
    consumer.afterEffect?.(record);
    await consumer.session.execute(`INSERT INTO ${consumer.processedTable} (message_key) VALUES (:key) ON CONFLICT DO NOTHING`, { key });
    return { kind: 'processed' };
  } catch (error) {
    return { kind: 'failed', error: error instanceof Error ? error : new Error(String(error)) };
  }
}

/**
 * An SQS handler over a per-record function, with the inbox's own batch planning (FIFO groups in order,
 * skip-group on failure, `concurrency` in flight) and partial batch failures, so that a baseline differs
 * from `inbox()` only in how it consumes a record.
 */
export function batchHandler(
  consume: (record: SQSRecord) => Promise<Outcome>,
  options: { concurrency: number; mayStart?: (context?: RemainingTime) => boolean },
): (event: SQSEvent, context?: RemainingTime) => Promise<SQSBatchResponse> {
  return async (event, context) => {
    const outcomes = await runBatch(
      event.Records,
      { fifo: isFifo(event.Records), onFailure: 'skip-group', concurrency: options.concurrency, mayStart: () => options.mayStart?.(context) ?? true },
      consume,
    );
    return {
      batchItemFailures: event.Records.filter((_, index) => !succeeded(outcomes[index]!)).map((record) => ({ itemIdentifier: record.messageId })),
    };
  };
}

/** The part of a Lambda context a baseline reads. */
export interface RemainingTime {
  getRemainingTimeInMillis(): number;
}
