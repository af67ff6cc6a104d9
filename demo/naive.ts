import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { runBatch } from '../lambda/inbox/lanes/lanes.js';
import type { Outcome } from '../lambda/inbox/lanes/lanes.js';
import type { InboxSession } from '../lambda/inbox/transport/session.js';
import { sqsInboxSource } from '../lambda/inbox/sources/sqs.js';
import type { InboxSource } from '../lambda/inbox/sources/source.js';

/**
 * The hand-rolled consumer sqs-inbox replaces, kept as the baseline for the demo and the benchmarks:
 * check for a processed record, apply the effect, record the message, each its own autocommit call.
 * A crash or a lost response between the effect and the record applies the effect again on redelivery,
 * and two consumers racing on one message can both pass the check.
 */
export interface NaiveConsumer<Raw = SQSRecord> {
  readonly session: InboxSession;
  /** A table with a `message_key text PRIMARY KEY` column, as a quoted, trusted identifier. */
  readonly processedTable: string;
  /** The message's idempotency key. */
  readonly keyOf: (record: Raw) => string;
  /** Applies the effect (autocommit). */
  readonly effect: (record: Raw) => Promise<void>;
  /** Fault hook between the effect and the record: throw to simulate the worker dying there. */
  readonly afterEffect?: ((record: Raw) => void) | undefined;
}

/** One record, the naive way; never throws. */
export async function consumeNaively<Raw>(consumer: NaiveConsumer<Raw>, record: Raw): Promise<Outcome> {
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
 * A handler over a per-record function, with the inbox's own batch planning (lanes in order, skip-group on
 * failure, `concurrency` in flight) and the source's failure report, so that a baseline differs from the
 * inbox only in how it consumes a record. SQS unless another source is given.
 */
export function batchHandler(
  consume: (record: SQSRecord) => Promise<Outcome>,
  options: { concurrency: number; mayStart?: (context?: RemainingTime) => boolean },
): (event: SQSEvent, context?: RemainingTime) => Promise<SQSBatchResponse>;
export function batchHandler<Raw, Response, Event>(
  consume: (record: Raw) => Promise<Outcome>,
  options: { concurrency: number; mayStart?: (context?: RemainingTime) => boolean },
  source: InboxSource<Raw, Response, unknown>,
): (event: Event, context?: RemainingTime) => Promise<Response>;
export function batchHandler(
  // The overloads type the record; here it is whatever the source's records are.
  consume: (record: never) => Promise<Outcome>,
  options: { concurrency: number; mayStart?: (context?: RemainingTime) => boolean },
  // The overloads tie the source's types together; here it is any source.
  source: InboxSource<any, any, any> = sqsInboxSource,
): (event: never, context?: RemainingTime) => Promise<any> {
  return async (event, context) => {
    const records = source.records(event);
    const outcomes = await runBatch(
      records,
      {
        ordered: records.some((record) => record.lane !== undefined),
        onFailure: 'skip-group',
        concurrency: options.concurrency,
        mayStart: () => options.mayStart?.(context) ?? true,
      },
      (record) => consume(record.raw as never),
    );
    return source.respond(records, outcomes);
  };
}

/** The part of a Lambda context a baseline reads. */
export interface RemainingTime {
  getRemainingTimeInMillis(): number;
}
