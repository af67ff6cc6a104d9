import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash } from 'node:crypto';
import type { SQSRecord } from 'aws-lambda';
import type { SqsFaults } from '../../local/sqs/faults.js';
import type { PendingDelete, SqsEventHandler } from '../../local/event-source.js';
import { FAULTS } from '../../local/scenario/fault-schedule.js';
import type { Delivery } from '../../local/scenario/fault-schedule.js';

// Imports nothing but Node's own modules at run time: the CLI's usage lists these names without loading a package.

/**
 * The faults of the hand-off between the two stages of `runPipeline`, on top of every fault in
 * {@link FAULTS}. Both strike where a variant hands the invoice message on to SQS, whatever the variant.
 */
export const HAND_OFF_FAULTS = [
  /**
   * ~8% of the invocations that hand a message on: the worker dies at its first send. After its commits
   * for the outbox's relay and for "send after commit"; inside the transaction for "send in the handler".
   */
  'crash-before-send',
  /**
   * ~5% of the orders, at their first hand-off (the handler's or the sweeper's): the answers to the next 3
   * SendMessageBatch requests are lost, so the sender's every attempt fails though SQS took the messages.
   */
  'drop-send-response',
] as const;

/** One of {@link HAND_OFF_FAULTS}. */
export type HandOffFaultName = (typeof HAND_OFF_FAULTS)[number];

/** Every fault a pipeline run can inject: the scenario's, then the hand-off's. */
export const PIPELINE_FAULTS = [...FAULTS, ...HAND_OFF_FAULTS] as const;

/** One of {@link PIPELINE_FAULTS}. */
export type PipelineFaultName = (typeof PIPELINE_FAULTS)[number];

const RATES: Record<HandOffFaultName, number> = { 'crash-before-send': 0.08, 'drop-send-response': 0.05 };

/**
 * SendMessageBatch requests whose answer `drop-send-response` loses: as many as the senders' attempts
 * (sqsOutbox's default, and the naive senders'), so one send can fail for good though SQS took its message.
 */
export const DROPPED_ANSWERS = 3;

/** What a handed-on send sees: the worker died there. Nothing was sent. */
export class WorkerDiedError extends Error {
  constructor() {
    super('crash-before-send: the worker died before it handed the message on');
    this.name = 'WorkerDiedError';
  }
}

/** One invocation of a stage-one handler, as the hand-off faults follow it. */
interface Invocation {
  /** The event source's request id, which its beforeDelete hook sees. */
  readonly requestId: string;
  /** Stable across runs with one seed: the first record's name and its receive count. */
  readonly identity: string;
  /** Whether it sent before: a worker dies at its first send. */
  sent: boolean;
  died: boolean;
}

/**
 * The seeded hand-off faults of one pipeline run. Each stage-one invocation runs in its own async context
 * ({@link track}), so a send deep inside `inbox()` (the outbox's transport, or a send in `apply`) knows
 * which invocation it belongs to; a send outside any (the sweeper's) meets only the lost answers.
 */
export class HandOffFaults {
  /** Faults injected so far, by name. */
  readonly injected: Record<string, number> = {};
  readonly #faults: ReadonlySet<string>;
  readonly #current = new AsyncLocalStorage<Invocation>();
  readonly #died = new Set<string>();
  /** Orders handed on before: their answers are lost at their first hand-off only. */
  readonly #handedOn = new Set<string>();

  constructor(
    private readonly seed: number,
    faults: readonly string[],
    private readonly sqs: { readonly faults: SqsFaults },
  ) {
    this.#faults = new Set(faults);
  }

  /** A stage-one handler, each invocation followed by the faults, known by its first record as `delivery` names it. */
  track(handler: SqsEventHandler, delivery: (record: SQSRecord) => Delivery): SqsEventHandler {
    return (event, context) => {
      const first = event.Records[0];
      const identity = first ? `${delivery(first).id}:${delivery(first).attempt}` : '';
      return this.#current.run({ requestId: context.awsRequestId, identity, sent: false, died: false }, () => handler(event, context));
    };
  }

  /** The mapping's beforeDelete hook: an invocation whose worker died deletes nothing; else `otherwise` decides. */
  beforeDelete(otherwise: (pending: PendingDelete) => 'crash' | undefined): (pending: PendingDelete) => 'crash' | undefined {
    return (pending) => (this.#died.has(pending.requestId) ? 'crash' : otherwise(pending));
  }

  /**
   * Runs one send of `orders`, by the current invocation or the sweeper: throws {@link WorkerDiedError}
   * instead when the invocation's worker dies here (or died at an earlier send), and may first arrange
   * for the send's answers to be lost.
   */
  async send<T>(orders: readonly string[], run: () => Promise<T>): Promise<T> {
    const invocation = this.#current.getStore();
    if (invocation && (invocation.died || (!invocation.sent && this.#decide('crash-before-send', invocation.identity)))) {
      invocation.died = true;
      this.#died.add(invocation.requestId);
      throw new WorkerDiedError();
    }
    if (invocation) invocation.sent = true;
    // Decided per order, not per send: how many sends there are depends on timing, which orders there are does not.
    const first = orders.filter((order) => !this.#handedOn.has(order));
    for (const order of first) this.#handedOn.add(order);
    if (first.some((order) => this.#hits('drop-send-response', order))) {
      this.#count('drop-send-response');
      this.sqs.faults.dropResponses('SendMessageBatch', { times: DROPPED_ANSWERS });
    }
    return run();
  }

  #decide(fault: HandOffFaultName, identity: string): boolean {
    const hit = this.#hits(fault, identity);
    if (hit) this.#count(fault);
    return hit;
  }

  /** The same seed and identity give the same decision (as FaultSchedule decides its own faults). */
  #hits(fault: HandOffFaultName, identity: string): boolean {
    if (!this.#faults.has(fault)) return false;
    const digest = createHash('sha256').update(`${this.seed}|${fault}|${identity}`).digest();
    return digest.readUInt32BE(0) / 2 ** 32 < RATES[fault];
  }

  #count(fault: HandOffFaultName): void {
    this.injected[fault] = (this.injected[fault] ?? 0) + 1;
  }
}
