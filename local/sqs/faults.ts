import { SqsError } from './errors.js';
import type { SqsErrorName } from './errors.js';

/** The batch operations whose entries can be failed one by one. */
export type BatchOperation = 'SendMessageBatch' | 'DeleteMessageBatch' | 'ChangeMessageVisibilityBatch';

/** Options of {@link SqsFaults.failEntries}. */
export interface EntryFaultOptions {
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
}

/** Options of {@link SqsFaults.failRequests}. */
export interface RequestFaultOptions {
  /** The error the requests fail with. @default 'InternalError' (HTTP 500; the SDK retries it) */
  error?: SqsErrorName | undefined;
  /** The error message. @default 'Injected fault: the service failed this request.' */
  message?: string | undefined;
  /** How many requests of the operation fail. @default 1 */
  times?: number | undefined;
}

interface EntryFault extends Required<Omit<EntryFaultOptions, 'entries'>> {
  operation: BatchOperation;
  select: (id: string, index: number) => boolean;
}

interface RequestFault {
  operation: string;
  kind: 'error' | 'drop';
  error: SqsError;
  times: number;
}

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

  /** Fails some entries of the next `times` requests of a batch operation. */
  failEntries(operation: BatchOperation, options: EntryFaultOptions): void {
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
  failRequests(operation: string, options: RequestFaultOptions = {}): void {
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

  /** @internal the server asks for the request-level fault of this request, and consumes it. */
  takeRequestFault(operation: string): { kind: 'error' | 'drop'; error: SqsError } | undefined {
    const fault = this.#requestFaults.find((f) => f.operation === operation || f.operation === '*');
    if (!fault) return undefined;
    fault.times -= 1;
    if (fault.times <= 0) this.#requestFaults = this.#requestFaults.filter((f) => f !== fault);
    return { kind: fault.kind, error: fault.error };
  }

  /** @internal the entry fault for this batch request, consumed. */
  takeEntryFault(operation: BatchOperation): Omit<EntryFault, 'times' | 'operation'> | undefined {
    const fault = this.#entryFaults.find((f) => f.operation === operation);
    if (!fault) return undefined;
    fault.times -= 1;
    if (fault.times <= 0) this.#entryFaults = this.#entryFaults.filter((f) => f !== fault);
    return fault;
  }
}
