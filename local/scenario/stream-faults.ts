import type { Context } from 'aws-lambda';
import { FAULTS } from './fault-schedule.js';
import type { Delivery, FaultName, FaultSchedule } from './fault-schedule.js';
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
 * checkpoint or offset commit). Each record is a delivery named by its lane and position, its attempt
 * how many times it was handed to the handler, so a redelivered batch gets fresh decisions instead of
 * crashing forever.
 */
export class StreamInvocationFaults {
  readonly #schedule: FaultSchedule;
  readonly #recordId: (record: unknown) => string;
  /** Record to the times it was handed to the handler. */
  readonly #delivered = new Map<string, number>();
  /** Request id to the deliveries of its invocation. */
  readonly #invocations = new Map<string, readonly Delivery[]>();

  constructor(schedule: FaultSchedule, recordId: (record: unknown) => string) {
    this.#schedule = schedule;
    this.#recordId = recordId;
  }

  /** The handler with the schedule's 5xx, decided before each invocation. */
  wrap<Event>(
    handler: (event: Event, context: Context) => unknown,
    recordsOf: (event: Event) => readonly unknown[],
  ): (event: Event, context: Context) => Promise<unknown> {
    return async (event, context) => {
      const deliveries = recordsOf(event).map((record): Delivery => {
        const id = this.#recordId(record);
        const attempt = (this.#delivered.get(id) ?? 0) + 1;
        this.#delivered.set(id, attempt);
        return { id, attempt };
      });
      this.#invocations.set(context.awsRequestId, deliveries);
      return handler(event, await this.#schedule.beforeInvocation(deliveries, context));
    };
  }

  /** The `beforeCheckpoint` hook: 'crash' when the schedule's crash-after-commit strikes this invocation. */
  readonly beforeCheckpoint = (pending: PendingCheckpoint<unknown>): 'crash' | undefined => {
    const deliveries = this.#invocations.get(pending.requestId);
    this.#invocations.delete(pending.requestId);
    return deliveries && this.#schedule.crashesAfterCommit(deliveries) ? 'crash' : undefined;
  };
}
