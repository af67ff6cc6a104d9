import { SqsError } from './errors.js';
import type { SqsErrorName } from './errors.js';

/** The batch operations whose entries can be failed one by one. */
export type BatchOperation = 'SendMessageBatch' | 'DeleteMessageBatch' | 'ChangeMessageVisibilityBatch';

/** The entry faults a batch request meets, as the front applies them. */
interface EntryFault {
  operation: BatchOperation;
  select: (id: string, index: number) => boolean;
  code: string;
  senderFault: boolean;
  message: string;
  mode: 'reject' | 'applyThenFail';
  times: number;
}

interface RequestFault {
  operation: string;
  kind: 'error' | 'drop';
  error: SqsError;
  times: number;
}

/** What the front takes from a SqsFaults: the faults a test set, each used up as it strikes. */
interface PendingFaults {
  /** The request-level fault for a request of `operation`, used up. */
  take(operation: string): { kind: 'error' | 'drop'; error: SqsError } | undefined;
  /** The entry fault for a batch request of `operation`, used up. */
  takeEntries(operation: BatchOperation): Omit<EntryFault, 'times' | 'operation'> | undefined;
}

/** Set by SqsFaults's static block, which alone reaches its private state. */
let pending: (faults: SqsFaults) => PendingFaults;

/**
 * Fault injection for the SQS front. Faults are consumed in the order they were added; `'*'`
 * matches every operation.
 *
 * @example
 * sqs.faults.failEntries('SendMessageBatch', { entries: 2 });        // first 2 entries fail once
 * sqs.faults.dropResponses('SendMessageBatch');                        // applied, but the caller sees a dropped connection
 * sqs.faults.failRequests('ReceiveMessage', { error: 'RequestThrottled', times: 3 });
 */
export class SqsFaults {
  #entryFaults: EntryFault[] = [];
  #requestFaults: RequestFault[] = [];

  static {
    pending = (faults) => ({
      take: (operation) => {
        const fault = faults.#requestFaults.find((f) => f.operation === operation || f.operation === '*');
        if (!fault) return undefined;
        fault.times -= 1;
        if (fault.times <= 0) faults.#requestFaults = faults.#requestFaults.filter((f) => f !== fault);
        return { kind: fault.kind, error: fault.error };
      },
      takeEntries: (operation) => {
        const fault = faults.#entryFaults.find((f) => f.operation === operation);
        if (!fault) return undefined;
        fault.times -= 1;
        if (fault.times <= 0) faults.#entryFaults = faults.#entryFaults.filter((f) => f !== fault);
        return fault;
      },
    });
  }

  /** Fails some entries of the next `times` requests of a batch operation. */
  failEntries(
    operation: 'SendMessageBatch' | 'DeleteMessageBatch' | 'ChangeMessageVisibilityBatch',
    options: {
      /**
       * Which entries fail: the first `n` entries, the entries with these `Id`s, or a predicate.
       */
      entries: number | readonly string[] | ((id: string, index: number) => boolean);
      /** `Code` of each failed entry. @default 'InternalError' */
      code?: string | undefined;
      /** `SenderFault` of each failed entry: true blames the request. @default false (a service fault, which callers retry) */
      senderFault?: boolean | undefined;
      /** `Message` of each failed entry. @default 'Injected fault' */
      message?: string | undefined;
      /**
       * `reject`: the entry is not applied. `applyThenFail`: applied (enqueued, deleted, changed), yet
       * reported as failed: the ambiguous outcome a retry must survive.
       * @default 'reject'
       */
      mode?: 'reject' | 'applyThenFail' | undefined;
      /** How many matching requests this fault hits. @default 1 */
      times?: number | undefined;
    },
  ): void {
    const { entries } = options;
    const select =
      typeof entries === 'number'
        ? (_id: string, index: number) => index < entries
        : typeof entries === 'function'
          ? entries
          : (id: string) => entries.includes(id);
    this.#entryFaults.push({
      operation,
      select,
      code: options.code ?? 'InternalError',
      senderFault: options.senderFault ?? false,
      message: options.message ?? 'Injected fault',
      mode: options.mode ?? 'reject',
      times: options.times ?? 1,
    });
  }

  /** Fails the next `times` requests of `operation` with an error response, before applying them. */
  failRequests(
    operation: string,
    options: {
      /** The error the requests fail with. @default 'InternalError' (HTTP 500; the SDK retries it) */
      error?: SqsErrorName | undefined;
      /** The error message. @default 'Injected fault: the service failed this request.' */
      message?: string | undefined;
      /** How many requests of the operation fail. @default 1 */
      times?: number | undefined;
    } = {},
  ): void {
    const error = new SqsError(options.error ?? 'InternalError', options.message ?? 'Injected fault: the service failed this request.');
    this.#requestFaults.push({ operation, kind: 'error', error, times: options.times ?? 1 });
  }

  /** Applies the next `times` requests of `operation`, then destroys the connection instead of answering. */
  dropResponses(operation: string, options: { times?: number | undefined } = {}): void {
    const error = new SqsError('InternalError', 'dropped');
    this.#requestFaults.push({ operation, kind: 'drop', error, times: options.times ?? 1 });
  }

  /** Removes every pending fault. */
  clear(): void {
    this.#entryFaults = [];
    this.#requestFaults = [];
  }

  /** How many faults still wait to fire. */
  get pending(): number {
    return this.#entryFaults.length + this.#requestFaults.length;
  }
}

/**
 * The faults a test set, as the front takes them. Apart from the class, so that a test sees only how to
 * set faults; the class's static block gives this its private state.
 */
export function pendingFaults(faults: SqsFaults): PendingFaults {
  return pending(faults);
}
