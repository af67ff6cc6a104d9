import type { Context, SQSEvent } from 'aws-lambda';
import type { PendingDelete } from '../event-source.js';
import { FAULTS } from '../fault-schedule.js';
import type { FaultName, FaultSchedule } from '../fault-schedule.js';
import type { PendingCheckpoint } from '../streams/types.js';

/**
 * The faults of {@link FAULTS} a stream run injects. Not `visibility-expiry`: a stream has no visibility
 * timeout, one batch per shard runs at a time. Not `poison`: a stream retries a bad record until it
 * succeeds or is discarded, which is the on-failure destination's story, not this demo's.
 */
export const STREAM_FAULTS = FAULTS.filter((fault) => fault !== 'visibility-expiry' && fault !== 'poison') as readonly FaultName[];

/**
 * The schedule's per-invocation faults on a stream event source: `server-errors` before the handler,
 * `crash-after-commit` as the `beforeCheckpoint` crash (the worker dies after its commits, before the
 * checkpoint or offset commit). The schedule decides from an SQS-shaped identity: the batch's first
 * record (lane and position) stands for the message id, and how many times that record opened a batch
 * for the receive count, so a redelivered batch gets a fresh decision instead of crashing forever.
 */
export class StreamInvocationFaults {
  readonly #schedule: FaultSchedule;
  readonly #recordId: (record: unknown) => string;
  /** First record of a batch to the batches it opened. */
  readonly #opened = new Map<string, number>();
  /** Request id to the (first record, attempt) it was decided by. */
  readonly #attempts = new Map<string, { id: string; attempt: number }>();

  constructor(schedule: FaultSchedule, recordId: (record: unknown) => string) {
    this.#schedule = schedule;
    this.#recordId = recordId;
  }

  /** The handler with the schedule's 5xx, decided before each invocation. */
  wrap<Event>(handler: (event: Event, context: Context) => unknown, recordsOf: (event: Event) => readonly unknown[]): (event: Event, context: Context) => Promise<unknown> {
    // Only server-errors is decided here (visibility-expiry is never among a stream run's faults).
    const decide = this.#schedule.wrap(async () => ({ batchItemFailures: [] }), 0, 1);
    return async (event, context) => {
      const first = recordsOf(event)[0];
      if (first !== undefined) {
        const id = this.#recordId(first);
        const attempt = (this.#opened.get(id) ?? 0) + 1;
        this.#opened.set(id, attempt);
        this.#attempts.set(context.awsRequestId, { id, attempt });
        await decide(sqsShaped(id, attempt), context);
      }
      return handler(event, context);
    };
  }

  /** The `beforeCheckpoint` hook: 'crash' when the schedule's crash-after-commit strikes this invocation. */
  readonly beforeCheckpoint = (pending: PendingCheckpoint<unknown>): 'crash' | undefined => {
    const decided = this.#attempts.get(pending.requestId);
    this.#attempts.delete(pending.requestId);
    if (!decided) return undefined;
    const { Records } = sqsShaped(decided.id, decided.attempt);
    return this.#schedule.beforeDelete(0)({ requestId: pending.requestId, records: Records, toDelete: Records, failed: [] } satisfies PendingDelete);
  };
}

function sqsShaped(id: string, attempt: number): SQSEvent {
  return { Records: [{ messageId: id, attributes: { ApproximateReceiveCount: String(attempt) } }] } as unknown as SQSEvent;
}
