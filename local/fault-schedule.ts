import { createHash } from 'node:crypto';
import type { SQSRecord } from 'aws-lambda';
import type { DataApiServer } from './data-api/server.js';
import type { PendingDelete, SqsEventHandler } from './event-source.js';

/**
 * The faults a scenario can inject, each at its own rate, decided by the seed. Every fault acts outside
 * the handler (the producer, the event source, the Data API server), so any handler meets the same ones.
 *
 * @example
 * await runScenario({ ...consumer, faults: FAULTS.filter((fault) => fault !== 'poison') });
 */
export const FAULTS = [
  /** The producer sends ~5% of messages twice with one idempotency key (a retry past SQS's 5-minute dedup window). */
  'duplicate-sends',
  /** ~4% of invocations: the worker dies after its commits, before SQS deletes the batch. */
  'crash-after-commit',
  /** ~3% of the calls at the commit point (see {@link CommitPoint}) run, but their answer never arrives. */
  'drop-commit',
  /**
   * ~3% of the calls at the commit point: the worker dies after its effect's statement, before the effect
   * is durable and recorded. A commit fails with HTTP 500 without running; an autocommit effect statement
   * runs and the worker never hears back.
   */
  'crash-in-transaction',
  /** Aurora auto-pause: every Data API call outside a transaction is refused for 800 ms, at the start and again half-way. */
  'auto-pause',
  /** ~3% of invocations start their records just as the visibility timeout ends, racing the consumer that gets the batch next. */
  'visibility-expiry',
  /** ~2% of invocations: the next Data API call answers 500 without running. */
  'server-errors',
  /** ~0.5% of messages have their body cut short (no longer JSON): they must end parked or in the dead-letter queue, never lost. */
  'poison',
] as const;

/** One of {@link FAULTS}. */
export type FaultName = (typeof FAULTS)[number];

const RATES: Record<FaultName, number> = {
  'duplicate-sends': 0.05,
  'crash-after-commit': 0.04,
  'drop-commit': 0.03,
  'crash-in-transaction': 0.03,
  'auto-pause': 1,
  'visibility-expiry': 0.03,
  'server-errors': 0.02,
  poison: 0.005,
};

/**
 * Where a handler's effect becomes durable: the Data API call that `drop-commit` and
 * `crash-in-transaction` aim at.
 *
 * - `'commit'`: CommitTransaction, for a handler that applies its effect inside a transaction
 *   (`inbox()` with `apply`, or your own transaction code).
 * - `{ statement }`: an autocommit ExecuteStatement or BatchExecuteStatement whose SQL `statement`
 *   accepts, for a handler whose effect is a single statement (`inbox()` with `statement`, or a
 *   check-then-apply consumer without an inbox). Match with `includes`, not `startsWith`: `inbox()` in
 *   single-statement mode prepends the claim (`WITH claimed AS (...)`) to your SQL. A run whose commit
 *   point never matches a call reports it in `problems`, since those two faults then never happen.
 *
 * @example
 * const commitPoint: CommitPoint = { statement: (sql) => sql.includes('INSERT INTO public.payments') };
 */
export type CommitPoint = 'commit' | { readonly statement: (sql: string) => boolean };

/**
 * The seeded fault engine of one scenario run: decides each fault from the seed and a stable identity
 * (message key; consumer, message id and receive count; the n-th call at the commit point), so the same
 * seed gives the same decisions, and injects it through the producer, the event source hooks and the
 * Data API server's faults. Nothing runs inside the handler, so every handler meets the same faults.
 */
export class FaultSchedule {
  /** Faults injected so far, by name. */
  readonly injected: Record<string, number> = {};
  readonly #faults: ReadonlySet<FaultName>;
  #commitPointMatched = false;

  constructor(
    private readonly seed: number,
    faults: readonly FaultName[],
    private readonly dataApi: Pick<DataApiServer, 'faults'>,
    private readonly commitPoint: CommitPoint,
  ) {
    this.#faults = new Set(faults);
  }

  /** Whether this message's body is to be cut short. */
  poisons(key: string): boolean {
    return this.#decide('poison', key);
  }

  /** Whether the producer sends this message a second time, with the same key. */
  resends(key: string): boolean {
    return this.#decide('duplicate-sends', key);
  }

  /** Aurora auto-pauses now (when the fault is on): the run calls this at the start and half-way. */
  pause(): void {
    if (!this.#faults.has('auto-pause')) return;
    this.#count('auto-pause');
    this.dataApi.faults.autoPause({ resumeAfterMs: 800 });
  }

  /**
   * Sets the standing faults at the commit point on the Data API server: call it once its faults were
   * cleared, before the consumers start. Each call at the commit point is decided in turn.
   */
  armCommitPoint(): void {
    const faults = this.dataApi.faults;
    let drops = 0;
    let crashes = 0;
    const drop = () => this.#decide('drop-commit', drops++);
    const crash = () => this.#decide('crash-in-transaction', crashes++);
    if (this.commitPoint === 'commit') {
      // Dying before the commit: the commit never runs. The server asks this fault first of every
      // CommitTransaction (it was set before any other), so being asked is the commit point matching.
      const select = () => {
        this.#commitPointMatched = true;
        return crash();
      };
      faults.serverError({ operation: 'CommitTransaction', count: Infinity, status: 500, select });
      faults.dropResponse({ operation: 'CommitTransaction', count: Infinity, select: drop });
    } else {
      const { statement } = this.commitPoint;
      const match = (sql: string) => {
        const matched = statement(sql);
        if (matched) this.#commitPointMatched = true;
        return matched;
      };
      // An autocommit effect is durable once its statement ran: dying right after it is never hearing back.
      faults.dropResponse({ match, count: Infinity, select: () => crash() || drop() });
    }
  }

  /**
   * The problem to report when `drop-commit` or `crash-in-transaction` was asked for but no call of the
   * whole run was at the commit point: they were never injected, and a run that passes proved nothing
   * about them.
   */
  commitPointProblem(): string | undefined {
    const aimed = (['drop-commit', 'crash-in-transaction'] as const).filter((fault) => this.#faults.has(fault));
    if (aimed.length === 0 || this.#commitPointMatched) return undefined;
    const never = `commit point never matched: ${aimed.join(' and ')} ${aimed.length > 1 ? 'were' : 'was'} never injected`;
    return this.commitPoint === 'commit'
      ? `${never}; the handler made no CommitTransaction call. If its effect is one autocommit statement, name it: ` +
          'commitPoint: { statement: (sql) => sql.includes(...) } (inbox() single-statement SQL starts with "WITH claimed AS")'
      : `${never}; check commitPoint (inbox() single-statement SQL starts with "WITH claimed AS": match it with sql.includes(...), not sql.startsWith(...))`;
  }

  /** The handler of event source mapping `instance`, with the per-invocation faults (5xx, visibility expiry). */
  wrap(handler: SqsEventHandler, instance: number, visibilitySeconds: number): SqsEventHandler {
    return async (event, context) => {
      const first = event.Records[0]!;
      const invocation = `${instance}:${first.messageId}:${attemptOf(first)}`;
      if (this.#decide('server-errors', invocation)) this.dataApi.faults.serverError({ count: 1, status: 500 });
      let run = context;
      if (this.#decide('visibility-expiry', invocation)) {
        // A consumer whose run outlives the queue's visibility timeout (the misconfiguration the CDK
        // constructs refuse): it starts its records just before SQS hands the same batch to another
        // consumer, still believing it has time, so the two race on the same claims.
        const until = Date.now() + visibilitySeconds * 3000;
        await new Promise((resolve) => setTimeout(resolve, visibilitySeconds * 950));
        run = { ...context, getRemainingTimeInMillis: () => until - Date.now() };
      }
      // Lambda stops a timed-out invocation; the handler sees its remaining time run out and starts no
      // further record, which is as close as one process gets to being killed. The event source waits
      // for such abandoned handlers before it calls the queue drained.
      return handler(event, run);
    };
  }

  /** The event source's `beforeDelete` hook of mapping `instance`: the worker dies after its commits. */
  beforeDelete(instance: number): (pending: PendingDelete) => 'crash' | undefined {
    return (pending) => {
      const first = pending.records[0];
      if (!first) return undefined;
      return this.#decide('crash-after-commit', `${instance}:${first.messageId}:${attemptOf(first)}`) ? 'crash' : undefined;
    };
  }

  #decide(fault: FaultName, ...parts: (string | number)[]): boolean {
    if (!this.#faults.has(fault)) return false;
    const hit = uniform(this.seed, fault, ...parts) < RATES[fault];
    if (hit) this.#count(fault);
    return hit;
  }

  #count(fault: FaultName): void {
    this.injected[fault] = (this.injected[fault] ?? 0) + 1;
  }
}

function attemptOf(record: SQSRecord): number {
  return Number(record.attributes.ApproximateReceiveCount);
}

/** A uniform number in [0, 1) from the seed and the parts: the same inputs always give the same fault. */
function uniform(seed: number, ...parts: (string | number)[]): number {
  const digest = createHash('sha256').update(`${seed}|${parts.join('|')}`).digest();
  return digest.readUInt32BE(0) / 2 ** 32;
}
