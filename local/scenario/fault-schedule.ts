import { createHash } from 'node:crypto';
import type { ScenarioResult } from './run-scenario.js';
import type { SQSRecord } from 'aws-lambda';
import type { FaultCall } from '../data-api/faults.js';
import type { DataApiServer } from '../data-api/server.js';
import type { PendingDelete, SqsEventHandler } from '../event-source.js';

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
  /** An invocation holding ~1.5% of first deliveries: the worker dies after its commits, before SQS deletes the batch. */
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
  /** An invocation holding ~1.5% of first deliveries starts its records just as the visibility timeout ends, racing the consumer that gets the batch next. */
  'visibility-expiry',
  /** An invocation holding ~1.5% of first deliveries: the next Data API call answers 500 without running, once per such delivery. */
  'server-errors',
  /** ~1.5% of messages have their body cut short (no longer JSON): they must end parked or in the dead-letter queue, never lost. */
  'poison',
] as const;

/** One of {@link FAULTS}. */
export type FaultName = (typeof FAULTS)[number];

/**
 * Each fault's rate and what it counts: `message`, each message produced; `delivery`, each message's
 * first delivery to a handler (an invocation is struck when one of its records is); `commit-point`,
 * each call at the commit point; `run`, it happens at the start and again half-way, whatever the size.
 * Those of a message or a delivery are 1.5%, so that the README's 300 messages make each of them 99%
 * likely (305 do).
 */
export const FAULT_RATES: Readonly<Record<FaultName, { readonly rate: number; readonly per: 'message' | 'delivery' | 'commit-point' | 'run' }>> = {
  'duplicate-sends': { rate: 0.05, per: 'message' },
  'crash-after-commit': { rate: 0.015, per: 'delivery' },
  'drop-commit': { rate: 0.03, per: 'commit-point' },
  'crash-in-transaction': { rate: 0.03, per: 'commit-point' },
  'auto-pause': { rate: 1, per: 'run' },
  'visibility-expiry': { rate: 0.015, per: 'delivery' },
  'server-errors': { rate: 0.015, per: 'delivery' },
  poison: { rate: 0.015, per: 'message' },
};

/** How likely a run makes each fault it was asked for, from the rates (ScenarioResult spells it out). */
export type FaultLikelihood = ScenarioResult['faultLikelihood'][number];

/** One record as a handler got it, named so that the same seed decides it the same way in every run. */
export interface Delivery {
  /** Stable across runs: the message's key (and which copy), or the stream record's lane and position. */
  readonly id: string;
  /** Its receive count: 1 the first time it is delivered. */
  readonly attempt: number;
}

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
 * The seeded fault engine of one scenario run: decides each fault from the seed and what it strikes,
 * never from when it comes, so the same seed gives the same decisions wherever timing allows:
 *
 * - per message (duplicate sends, poison): by the message's key;
 * - per delivery (crash after commit, visibility expiry, 5xx): by each record's stable id (its message's
 *   key, and which copy; not SQS's message id, a new UUID every run), at its first delivery (crash after
 *   commit: at the first that reaches its deletes), and an invocation is struck when one of its records is;
 * - at the commit point (lost answer, crash in the transaction): by what the call carries (the statements
 *   and parameters of its transaction, or the autocommit statement), and how many times that same call
 *   came before.
 *
 * It injects them through the producer, the event source hooks and the Data API server's faults. Nothing
 * runs inside the handler, so every handler meets the same faults.
 */
export class FaultSchedule {
  /** Faults injected so far, by name. */
  readonly injected: Record<string, number> = {};
  readonly #faults: ReadonlySet<FaultName>;
  #commitPointCalls = 0;
  /** SQS message id (a UUID, new every run) to the stable name of its message. */
  readonly #names = new Map<string, string>();
  /** Open transaction to the fingerprints of its statements so far. */
  readonly #transactions = new Map<string, string[]>();
  /** A call at the commit point to its identity, decided once for the faults that ask. */
  readonly #identities = new WeakMap<FaultCall, string>();
  /** Records whose crash-after-commit struck. */
  readonly #crashed = new Set<string>();
  /** Calls at the commit point seen, by their content: the occurrence of each. */
  readonly #occurrences = new Map<string, number>();
  /** Strings new every run (the run's queue URLs: a random tag, the endpoint's port) to their stable names. */
  readonly #runOwn: ReadonlyMap<string, string>;

  constructor(
    private readonly seed: number,
    faults: readonly FaultName[],
    private readonly dataApi: Pick<DataApiServer, 'faults'>,
    private readonly commitPoint: CommitPoint,
    /** What a statement may carry that is new every run, by a stable name: an outbox row's destination URL. */
    runOwn: Readonly<Record<string, string>> = {},
  ) {
    this.#faults = new Set(faults);
    // Longest first, so that a URL is named whole before any shorter one inside it.
    this.#runOwn = new Map(Object.entries(runOwn).sort(([a], [b]) => b.length - a.length));
  }

  /**
   * Names the messages of a queue once they are sent: each after its idempotency key, a second copy with
   * the same key as its copy. Records of messages never named go by their idempotency-key attribute.
   */
  name(
    messages: readonly { readonly messageId: string; readonly messageAttributes: Readonly<Record<string, { readonly stringValue?: string | undefined }>> }[],
  ): void {
    const copies = new Map<string, number>();
    for (const message of messages) {
      const key = message.messageAttributes['idempotency-key']?.stringValue;
      if (key === undefined) continue;
      const copy = (copies.get(key) ?? 0) + 1;
      copies.set(key, copy);
      this.#names.set(message.messageId, copy === 1 ? key : `${key}#${copy}`);
    }
  }

  /** An SQS record as the schedule decides it. */
  delivery(record: SQSRecord): Delivery {
    const id = this.#names.get(record.messageId) ?? record.messageAttributes?.['idempotency-key']?.stringValue ?? record.messageId;
    return { id, attempt: Number(record.attributes.ApproximateReceiveCount) };
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
   * cleared, before the consumers start. Each call at the commit point is decided by what it carries.
   */
  armCommitPoint(): void {
    const faults = this.dataApi.faults;
    faults.watch((call) => this.#watch(call));
    const drop = (call: FaultCall) => this.#decide('drop-commit', this.#identity(call));
    const crash = (call: FaultCall) => this.#decide('crash-in-transaction', this.#identity(call));
    if (this.commitPoint === 'commit') {
      // Dying before the commit: the commit never runs. The server asks this fault first of every
      // CommitTransaction (it was set before any other), so being asked is the commit point matching.
      const select = (call: FaultCall) => {
        this.#commitPointCalls++;
        return crash(call);
      };
      faults.serverError({ operation: 'CommitTransaction', count: Infinity, status: 500, select });
      faults.dropResponse({ operation: 'CommitTransaction', count: Infinity, select: drop });
    } else {
      const { statement } = this.commitPoint;
      const match = (sql: string) => statement(sql);
      // An autocommit effect is durable once its statement ran: dying right after it is never hearing back.
      const select = (call: FaultCall) => {
        this.#commitPointCalls++;
        return crash(call) || drop(call);
      };
      faults.dropResponse({ match, count: Infinity, select });
    }
  }

  /**
   * The problem to report when `drop-commit` or `crash-in-transaction` was asked for but no call of the
   * whole run was at the commit point: they were never injected, and a run that passes proved nothing
   * about them.
   */
  commitPointProblem(commitCall: 'CommitTransaction' | 'COMMIT' = 'CommitTransaction'): string | undefined {
    const aimed = this.#commitPointFaults();
    if (aimed.length === 0 || this.#commitPointCalls > 0) return undefined;
    const never = `commit point never matched: ${aimed.join(' and ')} ${aimed.length > 1 ? 'were' : 'was'} never injected`;
    return this.commitPoint === 'commit'
      ? `${never}; the handler made no ${commitCall} call. If its effect is one autocommit statement, name it: ` +
          'commitPoint: { statement: (sql) => sql.includes(...) } (inbox() single-statement SQL starts with "WITH claimed AS")'
      : `${never}; check commitPoint (inbox() single-statement SQL starts with "WITH claimed AS": match it with sql.includes(...), not sql.startsWith(...))`;
  }

  /** How likely a run of `messages` messages made each fault it was asked for, and how often it struck. */
  likelihood(messages: number): FaultLikelihood[] {
    return [...this.#faults].map((fault) => {
      const { rate, per } = FAULT_RATES[fault];
      const perMessage = per === 'commit-point' ? this.#commitPointCalls / messages : 1;
      const units = per === 'run' ? 1 : Math.ceil(Math.log(0.01) / Math.log(1 - rate));
      return { fault, rate, per, injected: this.injected[fault] ?? 0, messagesFor99: perMessage > 0 ? Math.ceil(units / perMessage) : undefined };
    });
  }

  /**
   * One problem per fault asked for that never struck (but those {@link commitPointProblem} names): a run
   * that passes proved nothing about them. Each says how many messages make the fault likely.
   */
  unfiredProblems(messages: number): string[] {
    const unmatched = this.#commitPointCalls === 0 ? this.#commitPointFaults() : [];
    return this.likelihood(messages)
      .filter(({ fault, injected }) => injected === 0 && !(unmatched as readonly string[]).includes(fault))
      .map(({ fault, rate, per, messagesFor99 }) => {
        const odds = messagesFor99 === undefined ? '' : `: at ${rate * 100}% of ${UNIT_NAMES[per]}, ~${messagesFor99} messages make it 99% likely`;
        return `${fault} was never injected, so this run proved nothing about it (${messages} messages${odds}); raise messages or try another seed, or leave it out of faults`;
      });
  }

  /**
   * The per-invocation faults before a handler runs: a 5xx on the next Data API call, and (given the
   * visibility timeout) a start just as it ends. Returns the context the handler is to run with.
   */
  async beforeInvocation<C extends { getRemainingTimeInMillis(): number }>(
    deliveries: readonly Delivery[],
    context: C,
    visibilitySeconds?: number,
  ): Promise<C> {
    const errors = this.#strikes('server-errors', deliveries);
    if (errors > 0) this.dataApi.faults.serverError({ count: errors, status: 500 });
    if (visibilitySeconds === undefined || this.#strikes('visibility-expiry', deliveries) === 0) return context;
    // A consumer whose run outlives the queue's visibility timeout (the misconfiguration the CDK
    // constructs refuse): it starts its records just before SQS hands the same batch to another
    // consumer, still believing it has time, so the two race on the same claims.
    const until = Date.now() + visibilitySeconds * 3000;
    await new Promise((resolve) => setTimeout(resolve, visibilitySeconds * 950));
    return { ...context, getRemainingTimeInMillis: () => until - Date.now() };
  }

  /**
   * Whether the worker dies after its commits, before SQS deletes the batch (or the stream checkpoints).
   * A record the seed picks strikes the first invocation holding it that gets this far: one that timed
   * out or threw never reaches its deletes, and which one does first depends on timing; that one does.
   */
  crashesAfterCommit(deliveries: readonly Delivery[]): boolean {
    if (!this.#faults.has('crash-after-commit')) return false;
    const struck = deliveries.filter(
      ({ id }) => !this.#crashed.has(id) && uniform(this.seed, 'crash-after-commit', id) < FAULT_RATES['crash-after-commit'].rate,
    );
    for (const { id } of struck) {
      this.#crashed.add(id);
      this.#count('crash-after-commit');
    }
    return struck.length > 0;
  }

  /** An SQS handler with the per-invocation faults (5xx, visibility expiry). */
  wrap(handler: SqsEventHandler, visibilitySeconds: number): SqsEventHandler {
    return async (event, context) => {
      // Lambda stops a timed-out invocation; the handler sees its remaining time run out and starts no
      // further record, which is as close as one process gets to being killed. The event source waits
      // for such abandoned handlers before it calls the queue drained.
      const run = await this.beforeInvocation(
        event.Records.map((record) => this.delivery(record)),
        context,
        visibilitySeconds,
      );
      return handler(event, run);
    };
  }

  /** The SQS event source's `beforeDelete` hook: the worker dies after its commits. */
  beforeDelete(): (pending: PendingDelete) => 'crash' | undefined {
    return (pending) => (this.crashesAfterCommit(pending.records.map((record) => this.delivery(record))) ? 'crash' : undefined);
  }

  #commitPointFaults(): FaultName[] {
    return (['drop-commit', 'crash-in-transaction'] as const).filter((fault) => this.#faults.has(fault));
  }

  /** Keeps each open transaction's statements, so that its commit is known by what it commits. */
  #watch(call: FaultCall): void {
    const { transactionId } = call;
    if (transactionId === undefined || transactionId === '') return;
    if (call.operation === 'ExecuteStatement' || call.operation === 'BatchExecuteStatement') {
      const statements = this.#transactions.get(transactionId) ?? [];
      statements.push(this.#fingerprint(call));
      this.#transactions.set(transactionId, statements);
    } else if (call.operation === 'CommitTransaction') {
      this.#identity(call);
      this.#transactions.delete(transactionId);
    } else if (call.operation === 'RollbackTransaction') {
      this.#transactions.delete(transactionId);
    }
  }

  /**
   * A call at the commit point by what it carries: its transaction's statements and parameters (a
   * commit), or its own (an autocommit statement), and how many times the same call came before.
   */
  #identity(call: FaultCall): string {
    let identity = this.#identities.get(call);
    if (identity !== undefined) return identity;
    const inTransaction = call.transactionId ? (this.#transactions.get(call.transactionId) ?? []) : [this.#fingerprint(call)];
    const content = createHash('sha256')
      .update(`${call.operation}\u0001${inTransaction.join('\u0001')}`)
      .digest('hex');
    const occurrence = (this.#occurrences.get(content) ?? 0) + 1;
    this.#occurrences.set(content, occurrence);
    identity = `${content}:${occurrence}`;
    this.#identities.set(call, identity);
    return identity;
  }

  /**
   * A statement and its parameters, with what is new every run named stably: SQS message ids by their
   * messages' names, the run's own strings (queue URLs) by theirs. Else the same seed would strike other
   * commits each run, and a fault could go unfired in one run of many.
   */
  #fingerprint(call: FaultCall): string {
    let text = `${call.sql ?? ''}\u0000${JSON.stringify(call.parameters ?? null)}`.replace(UUID, (id) => this.#names.get(id) ?? id);
    for (const [own, name] of this.#runOwn) text = text.replaceAll(own, name);
    return text;
  }

  /**
   * How many of the invocation's records strike it: those at their first delivery that the seed picks.
   * Only first deliveries: every message has exactly one, whatever the timing, while which records share
   * a redelivered batch (and so whether there is one) depends on timing. Counted per delivery struck, so
   * the counts do not depend on which records shared a batch either.
   */
  #strikes(fault: FaultName, deliveries: readonly Delivery[]): number {
    if (!this.#faults.has(fault)) return 0;
    const struck = deliveries.filter(({ id, attempt }) => attempt === 1 && uniform(this.seed, fault, id) < FAULT_RATES[fault].rate).length;
    for (let i = 0; i < struck; i++) this.#count(fault);
    return struck;
  }

  #decide(fault: FaultName, ...parts: (string | number)[]): boolean {
    if (!this.#faults.has(fault)) return false;
    const hit = uniform(this.seed, fault, ...parts) < FAULT_RATES[fault].rate;
    if (hit) this.#count(fault);
    return hit;
  }

  #count(fault: FaultName): void {
    this.injected[fault] = (this.injected[fault] ?? 0) + 1;
  }
}

const UNIT_NAMES: Record<FaultLikelihood['per'], string> = {
  message: 'messages',
  delivery: 'first deliveries',
  'commit-point': 'the calls at the commit point',
  run: 'runs',
};

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

/** A uniform number in [0, 1) from the seed and the parts: the same inputs always give the same fault. */
export function uniform(seed: number, ...parts: (string | number)[]): number {
  const digest = createHash('sha256')
    .update(`${seed}|${parts.join('|')}`)
    .digest();
  return digest.readUInt32BE(0) / 2 ** 32;
}
