/**
 * A counting gate: at most `limit` holders at once, the rest wait in arrival order (FIFO). A wait can be
 * bounded (`timeoutMs`) and given up (`signal`, e.g. the HTTP client went away), so a waiter that nobody
 * waits for any more never takes a place.
 */
export class Gate {
  private held = 0;
  private readonly waiters: Array<{ grant: () => void }> = [];

  constructor(private readonly limit: number) {}

  /** Holders now. */
  get size(): number {
    return this.held;
  }

  /**
   * Waits for a place and returns the function that gives it back (idempotent). Rejects with the error
   * `onTimeout()` makes when `timeoutMs` passes first, or with the signal's reason when it aborts first.
   */
  acquire(options: { timeoutMs?: number | undefined; onTimeout?: () => Error; signal?: AbortSignal | undefined } = {}): Promise<() => void> {
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    if (this.held < this.limit && this.waiters.length === 0) return Promise.resolve(this.take());
    return new Promise((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const waiter = {
        grant: () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          resolve(this.take());
        },
      };
      const leave = (error: Error) => {
        const index = this.waiters.indexOf(waiter);
        if (index < 0) return;
        this.waiters.splice(index, 1);
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        reject(error);
      };
      const onAbort = () => leave(signal?.reason as Error);
      signal?.addEventListener('abort', onAbort, { once: true });
      if (options.timeoutMs !== undefined && options.timeoutMs !== Infinity) {
        timer = setTimeout(() => leave(options.onTimeout?.() ?? new Error(`Gate: no place within ${options.timeoutMs} ms.`)), options.timeoutMs);
        timer.unref();
      }
      this.waiters.push(waiter);
    });
  }

  private take(): () => void {
    this.held += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.held -= 1;
      // Hand the place straight to the first waiter, so a newcomer cannot overtake it.
      if (this.held < this.limit) this.waiters.shift()?.grant();
    };
  }
}
