import type { Context } from 'aws-lambda';
import { sleepOn } from '../sqs/clock.js';
import type { Clock } from '../sqs/clock.js';

/** How a handler call ended. */
export type Ending = { kind: 'returned'; value: unknown } | { kind: 'threw'; error: unknown } | { kind: 'timeout'; running: Promise<unknown> };

/**
 * Calls `handler` and races it against the function timeout on `clock`. A handler that runs past the
 * timeout is reported as `timeout` with its still-running promise: Lambda would kill it, one process
 * cannot, so the caller keeps it to wait for before it calls itself idle.
 */
export async function invokeWithTimeout<Event>(
  handler: (event: Event, context: Context) => unknown,
  event: Event,
  context: Context,
  clock: Clock,
  timeoutMs: number,
): Promise<Ending> {
  const timer = new AbortController();
  const running = Promise.resolve().then(() => handler(event, context));
  const handled = running.then(
    (value): Ending => ({ kind: 'returned', value }),
    (error: unknown): Ending => ({ kind: 'threw', error }),
  );
  const timedOut = sleepOn(clock, timeoutMs, timer.signal).then((): Ending => ({ kind: 'timeout', running: handled }));
  const ending = await Promise.race([handled, timedOut]);
  timer.abort();
  return ending;
}
