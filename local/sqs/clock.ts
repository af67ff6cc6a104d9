/**
 * Time for the local runtime. Everything that measures a timeout (visibility, delay, retention,
 * deduplication window, long polls, function timeouts) reads this, never `Date.now()` directly,
 * so tests can drive a five-minute dedup window or a 12-hour visibility timeout in microseconds.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /**
   * Resolves once `ms` of this clock's time has passed, or right away when `signal` aborts.
   * Optional: a clock without it is slept on with a real timer.
   */
  sleep?(ms: number, signal?: AbortSignal): Promise<void>;
}

/** Sleeps `ms` on `clock`: its own `sleep` when it has one, a real timer otherwise. */
export function sleepOn(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  if (clock.sleep) return clock.sleep(ms, signal);
  return realSleep(ms, signal);
}

function realSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, Math.max(0, ms));
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** The wall clock. */
export class SystemClock implements Clock {
  /** `Date.now()`. */
  now(): number {
    return Date.now();
  }
  /** A real timer of `ms`, cut short when `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return realSleep(ms, signal);
  }
}

interface Sleeper {
  at: number;
  resolve: () => void;
}

/**
 * A clock that moves only when told to. `advance(ms)` wakes every sleeper whose time has come,
 * in time order.
 *
 * @example
 * const clock = new ManualClock(Date.UTC(2025, 0, 1));
 * clock.advance(30_000); // a 30 s visibility timeout has now expired
 */
export class ManualClock implements Clock {
  #now: number;
  #sleepers: Sleeper[] = [];
  /** @param start - the time to start at, in epoch milliseconds. @default 1_700_000_000_000 (2023-11-14) */
  constructor(start = 1_700_000_000_000) {
    this.#now = start;
  }
  /** The time it was started at or moved to. */
  now(): number {
    return this.#now;
  }
  /** Resolves when `advance()` or `set()` reaches `now() + ms`, or when `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const sleeper: Sleeper = {
        at: this.#now + Math.max(0, ms),
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const onAbort = (): void => {
        this.#sleepers = this.#sleepers.filter((s) => s !== sleeper);
        sleeper.resolve();
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      if (sleeper.at <= this.#now) return sleeper.resolve();
      this.#sleepers.push(sleeper);
    });
  }
  /** Moves time forward by `ms` and wakes the sleepers that are due. */
  advance(ms: number): void {
    if (!(ms >= 0)) throw new RangeError(`ManualClock.advance: ms must be >= 0, got ${ms}`);
    this.set(this.#now + ms);
  }
  /** Sets the time (never backwards) and wakes the sleepers that are due. */
  set(epochMs: number): void {
    if (epochMs < this.#now) throw new RangeError('ManualClock.set: time cannot go backwards');
    this.#now = epochMs;
    const due = this.#sleepers.filter((s) => s.at <= epochMs).sort((a, b) => a.at - b.at);
    this.#sleepers = this.#sleepers.filter((s) => s.at > epochMs);
    for (const s of due) s.resolve();
  }
  /** How many sleepers wait; lets a test know a long poll is parked. */
  get pendingSleepers(): number {
    return this.#sleepers.length;
  }
}
