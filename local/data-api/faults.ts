import { DataApiErrorResponse, GatewayError } from './errors.js';
import type { Operation } from './stats.js';

/**
 * Fault injection for tests and the demo: every fault acts at the HTTP server, so the real SDK, its
 * retries and the real PostgreSQL all take part, and nothing is mocked.
 */

/**
 * One call as the faults see it: its operation and what its request named. A fault's `select`, and a
 * {@link Faults.watch} listener, get it, so that a fault can be decided by what the call is rather than
 * by when it came.
 */
export interface FaultCall {
  readonly operation: Operation;
  /** The statement (ExecuteStatement, BatchExecuteStatement). */
  readonly sql?: string | undefined;
  /** The request's `parameters` (ExecuteStatement) or `parameterSets` (BatchExecuteStatement), as sent. */
  readonly parameters?: unknown;
  /** The transaction the call runs in, or ends (CommitTransaction, RollbackTransaction). */
  readonly transactionId?: string | undefined;
}

const SERVER_ERRORS = {
  500: 'InternalServerErrorException',
  502: undefined, // a gateway's answer carries no error type
  503: 'ServiceUnavailableError',
  504: 'DatabaseUnavailableException',
} as const;

/** DatabaseResumingException is modelled for these operations only (not Commit or Rollback). */
const PAUSABLE: ReadonlySet<Operation> = new Set(['ExecuteStatement', 'BatchExecuteStatement', 'BeginTransaction']);

/**
 * The faults of one server. Faults add up: two latency faults add their delays; server errors and
 * dropped responses are used up in the order they were set.
 *
 * @example
 * server.faults.dropResponse({ operation: 'CommitTransaction' }); // the commit happens, its answer is lost
 * server.faults.serverError({ count: 2, status: 503 });          // the next 2 calls fail without running
 * server.faults.serverError({ count: 1, status: 502 });          // a proxy's 502 with no error type
 * server.faults.autoPause({ resumeAfterMs: 50 });
 * // a standing fault: 3% of commits lose their answer, until clear()
 * server.faults.dropResponse({ operation: 'CommitTransaction', count: Infinity, select: () => Math.random() < 0.03 });
 * server.faults.clear();
 */
export class Faults {
  private latencies: Array<{ readonly ms: number; readonly operation?: Operation | undefined }> = [];
  private drops: Array<{ operation?: Operation; match?: (sql: string) => boolean; select?: (call: FaultCall) => boolean; left: number }> = [];
  private serverErrors: Array<{ operation?: Operation; status: keyof typeof SERVER_ERRORS; select?: (call: FaultCall) => boolean; left: number }> = [];
  private watchers: Array<(call: FaultCall) => void> = [];
  private pause: { resumeAfterMs: number; firstCallAt?: number } | undefined;
  private slow: Array<{ ms: number; operation?: Operation; match?: (sql: string) => boolean; left: number }> = [];

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** Delays matching calls by `ms` before they run. Stays until `clear()`. */
  latency(fault: {
    /** Delay added before the call runs, in milliseconds. */
    readonly ms: number;
    /** Only calls of this operation. @default every operation */
    readonly operation?: Operation | undefined;
  }): void {
    if (!(fault.ms >= 0)) throw new RangeError(`latency.ms must be a number of milliseconds >= 0, got ${fault.ms}.`);
    this.latencies.push({ ...fault });
  }

  /**
   * Simulates an auto-paused Aurora Serverless v2 instance resuming: from the first call after this, every
   * ExecuteStatement, BatchExecuteStatement and BeginTransaction fails with DatabaseResumingException
   * until `resumeAfterMs` has passed since that first call. Commit, Rollback and statements inside an
   * open transaction are not affected: an instance only pauses when no connection is open.
   */
  autoPause(fault: {
    /** How long the instance takes to resume, counted from the first call after the fault is set. */
    readonly resumeAfterMs: number;
  }): void {
    if (!(fault.resumeAfterMs >= 0)) throw new RangeError(`autoPause.resumeAfterMs must be >= 0, got ${fault.resumeAfterMs}.`);
    this.pause = { resumeAfterMs: fault.resumeAfterMs };
  }

  /**
   * Runs the next `count` matching calls for real, then destroys the connection without answering: the
   * caller cannot tell whether the call took effect (the SDK sees a socket error and may retry).
   *
   * @example
   * server.faults.dropResponse({ operation: 'ExecuteStatement', match: (sql) => sql.startsWith('INSERT INTO public.payments') });
   */
  dropResponse(
    fault: {
      /** Only calls of this operation. @default every operation */
      readonly operation?: Operation | undefined;
      /** Only calls whose SQL this accepts (ExecuteStatement, BatchExecuteStatement). @default every call */
      readonly match?: ((sql: string) => boolean) | undefined;
      /** How many matching calls lose their response; `Infinity` keeps the fault until `clear()`. @default 1 */
      readonly count?: number | undefined;
      /**
       * Asked for each call the rest of the fault matches, before it is used up: `false` lets that call
       * through. With `count: Infinity` it makes a standing fault that picks its calls, e.g. 3% at random,
       * or by what the call is.
       * @default every matching call
       */
      readonly select?: ((call: FaultCall) => boolean) | undefined;
    } = {},
  ): void {
    const left = fault.count ?? 1;
    if (!(left >= 1)) throw new RangeError(`dropResponse.count must be >= 1, got ${left}.`);
    this.drops.push({
      ...(fault.operation && { operation: fault.operation }),
      ...(fault.match && { match: fault.match }),
      ...(fault.select && { select: fault.select }),
      left,
    });
  }

  /**
   * Fails the next `count` matching calls with a 5xx (502: with no error type) without running them (the SDK retries these).
   *
   * @example
   * server.faults.serverError({ operation: 'CommitTransaction', count: Infinity, select: () => Math.random() < 0.03 });
   * // a proxy's 502 with no error type: the inbox classifies it 'network', not 'unavailable'
   * server.faults.serverError({ operation: 'CommitTransaction', count: 1, status: 502 });
   */
  serverError(fault: {
    /** How many matching calls fail; `Infinity` keeps the fault until `clear()`. */
    readonly count: number;
    /** Only calls of this operation. @default every operation */
    readonly operation?: Operation | undefined;
    /**
     * 500 InternalServerErrorException, 503 ServiceUnavailableError or 504 DatabaseUnavailableException;
     * or 502 with no error type, as a proxy or load balancer in front of the service answers, which the SDK
     * does not model and reports as an unknown error (a dropped connection, by contrast, reaches callers
     * as the SDK's TimeoutError).
     * @default 500
     */
    readonly status?: 500 | 502 | 503 | 504 | undefined;
    /** Asked for each call the rest of the fault matches, before it is used up: `false` lets that call through. @default every matching call */
    readonly select?: ((call: FaultCall) => boolean) | undefined;
  }): void {
    if (!(fault.count >= 1)) throw new RangeError(`serverError.count must be >= 1, got ${fault.count}.`);
    const status = fault.status ?? 500;
    if (!(status in SERVER_ERRORS)) throw new RangeError(`serverError.status must be 500, 502, 503 or 504, got ${status}.`);
    this.serverErrors.push({
      ...(fault.operation && { operation: fault.operation }),
      ...(fault.select && { select: fault.select }),
      status,
      left: fault.count,
    });
  }

  /**
   * Makes the next `count` matching statements take `ms` longer inside the database, as one waiting for a
   * row lock or on a slow plan does. Unlike a latency fault, the time passes inside PostgreSQL, after the
   * call reached it: the call goes on when its client has given up (a late effect, unless the database
   * cancels it), and the session's `statement_timeout` bounds it.
   *
   * @example
   * server.faults.slowStatement({ ms: 1500, match: (sql) => sql.includes('UPDATE public.orders') });
   */
  slowStatement(fault: {
    /**
     * How much longer, in milliseconds: the server first runs `SELECT pg_sleep(...)` on the call's own
     * connection (in its transaction, if it has one), a statement of its own that the session's
     * `statement_timeout` cancels like any other. Cancelled, the call fails as that statement and the
     * call's SQL does not run.
     */
    readonly ms: number;
    /** Only calls of this operation. @default ExecuteStatement and BatchExecuteStatement */
    readonly operation?: 'ExecuteStatement' | 'BatchExecuteStatement' | undefined;
    /** Only calls whose SQL this accepts. @default every call */
    readonly match?: ((sql: string) => boolean) | undefined;
    /** How many matching calls are slowed; `Infinity` keeps the fault until `clear()`. @default 1 */
    readonly count?: number | undefined;
  }): void {
    if (!(fault.ms >= 0)) throw new RangeError(`slowStatement.ms must be a number of milliseconds >= 0, got ${fault.ms}.`);
    const left = fault.count ?? 1;
    if (!(left >= 1)) throw new RangeError(`slowStatement.count must be >= 1, got ${left}.`);
    this.slow.push({ ms: fault.ms, ...(fault.operation && { operation: fault.operation }), ...(fault.match && { match: fault.match }), left });
  }

  /**
   * Tells `listener` of every call (but ExecuteSql) before any fault is decided for it, until `clear()`:
   * what a standing fault needs to know of the calls it does not select, e.g. a transaction's statements
   * before its commit.
   */
  watch(listener: (call: FaultCall) => void): void {
    this.watchers.push(listener);
  }

  /** Removes every fault and watcher. */
  clear(): void {
    this.watchers = [];
    this.slow = [];
    this.latencies = [];
    this.drops = [];
    this.serverErrors = [];
    this.pause = undefined;
  }

  /** @internal The delay to add before a call of this operation. */
  delayFor(operation: Operation): number {
    return this.latencies.filter((fault) => !fault.operation || fault.operation === operation).reduce((sum, fault) => sum + fault.ms, 0);
  }

  /** @internal Tells the watchers of a call, before its faults are decided. */
  seen(call: FaultCall): void {
    for (const listener of this.watchers) listener(call);
  }

  /**
   * @internal The error a call must fail with before running, if any (a `DataApiErrorResponse`, or a
   * proxy's `GatewayError`); uses up a server error.
   */
  failureFor(call: FaultCall): Error | undefined {
    const { operation } = call;
    const inTransaction = typeof call.transactionId === 'string' && call.transactionId.length > 0;
    const serverError = this.serverErrors.find((fault) => (!fault.operation || fault.operation === operation) && (!fault.select || fault.select(call)));
    if (serverError) {
      serverError.left -= 1;
      if (serverError.left === 0) this.serverErrors.splice(this.serverErrors.indexOf(serverError), 1);
      const type = SERVER_ERRORS[serverError.status];
      if (!type) return new GatewayError(`Injected fault: Bad Gateway (HTTP ${serverError.status}, no error type); the call did not run.`);
      return new DataApiErrorResponse(type, `Injected fault: ${type} (HTTP ${serverError.status}); the call did not run.`);
    }
    // Aurora pauses only when no connection is open, so a call inside an open transaction never meets a
    // paused instance.
    if (this.pause && PAUSABLE.has(operation) && !inTransaction) {
      const now = this.now();
      this.pause.firstCallAt ??= now;
      if (now - this.pause.firstCallAt < this.pause.resumeAfterMs) {
        return new DataApiErrorResponse(
          'DatabaseResumingException',
          'The Aurora DB instance db-LOCAL is resuming after being auto-paused. Please wait a few seconds and try again.',
        );
      }
      this.pause = undefined;
    }
    return undefined;
  }

  /** @internal How much longer this statement takes in the database; uses up a slow statement. */
  slowdownFor(operation: Operation, sql: string | undefined): number {
    if (sql === undefined || (operation !== 'ExecuteStatement' && operation !== 'BatchExecuteStatement')) return 0;
    const fault = this.slow.find((slow) => (!slow.operation || slow.operation === operation) && (!slow.match || slow.match(sql)));
    if (!fault) return 0;
    fault.left -= 1;
    if (fault.left === 0) this.slow.splice(this.slow.indexOf(fault), 1);
    return fault.ms;
  }

  /** @internal Whether this call's response is to be dropped; uses up a dropped response. */
  dropsResponse(call: FaultCall): boolean {
    const { operation, sql } = call;
    const drop = this.drops.find(
      (fault) =>
        (!fault.operation || fault.operation === operation) &&
        (!fault.match || (sql !== undefined && fault.match(sql))) &&
        (!fault.select || fault.select(call)),
    );
    if (!drop) return false;
    drop.left -= 1;
    if (drop.left === 0) this.drops.splice(this.drops.indexOf(drop), 1);
    return true;
  }
}
