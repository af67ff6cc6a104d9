import { channel } from 'node:diagnostics_channel';

/**
 * The diagnostics channel on which every `inbox()` handler publishes each record it failed or parked,
 * with the error, whatever its logger and log level: the local testbed subscribes to it to name the
 * handler's real error when nothing applied, even with the log silenced. A channel no one subscribes
 * to costs nothing.
 */
export const RECORD_FAILED_CHANNEL = 'sqs-inbox:record-failed';

/** What the channel carries: the record's id at its source (SQS messageId, ...) and why it failed. */
export interface RecordFailure {
  readonly id: string | undefined;
  readonly error: Error;
}

const failures = channel(RECORD_FAILED_CHANNEL);

/** Tells the channel's subscribers of a record that failed or was parked. */
export function publishFailure(failure: RecordFailure): void {
  failures.publish(failure);
}
