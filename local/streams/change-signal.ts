import { sleepOn } from '../sqs/clock.js';
import type { Clock } from '../sqs/clock.js';

/** The longest single real timer Node allows; a longer wait is cut to this and simply waits again. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * "Something changed": a model notifies it when a record arrives, an event source when a checkpoint
 * moves, so that pollers and `drain()` wake at once instead of polling on a timer.
 */
export class ChangeSignal {
  readonly #listeners = new Set<() => void>();

  /** Calls `listener` on every notify until the returned function is called. */
  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  /** Wakes every current listener. */
  notify(): void {
    for (const listener of [...this.#listeners]) listener();
  }
}

/** Sleeps up to `ms` of `clock` time, waking early when any of `signals` fires or `abort` aborts. */
export async function waitForChange(clock: Clock, signals: readonly Pick<ChangeSignal, 'subscribe'>[], ms: number, abort?: AbortSignal): Promise<void> {
  if (abort?.aborted) return;
  const wake = new AbortController();
  const onWake = (): void => wake.abort();
  const unsubscribe = signals.map((signal) => signal.subscribe(onWake));
  abort?.addEventListener('abort', onWake, { once: true });
  try {
    await sleepOn(clock, Math.min(Math.max(0, ms), MAX_TIMER_MS), wake.signal);
  } finally {
    for (const stop of unsubscribe) stop();
    abort?.removeEventListener('abort', onWake);
  }
}
