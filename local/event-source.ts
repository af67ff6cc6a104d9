import { randomUUID } from 'node:crypto';
import type { Context, SQSBatchResponse, SQSEvent, SQSMessageAttributes, SQSRecord } from 'aws-lambda';
import { lambdaContext } from './lambda-context.js';
import { invokeWithTimeout } from './streams/invoke.js';
import { sleepOn } from './sqs/clock.js';
import type { Clock } from './sqs/clock.js';
import { SqsError } from './sqs/errors.js';
import type { SqsModel } from './sqs/model.js';
import type { ReceivedMessage } from './sqs/types.js';

/**
 * Any SQS handler: ours, Powertools', or hand-written. Its context is the full Lambda `Context`, its
 * remaining time counting down on the event source's clock.
 */
export type SqsEventHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse | void | null> | SQSBatchResponse | void | null;

/** Options of {@link SqsEventSource}; the limits are Lambda's, checked when the event source is made. */
export interface SqsEventSourceOptions {
  /** The SQS model to poll: `local.sqs.model` of the stack `startLocal()` started. */
  model: SqsModel;
  /** Queue name, URL or ARN. */
  queue: string;
  /** The function's handler: any SQS handler, such as the one `inbox()` returns. */
  handler: SqsEventHandler;
  /** Records per invocation: 1 to 10 for FIFO, 1 to 10,000 for standard. @default 10 */
  batchSize?: number | undefined;
  /** 0 to 300,000; must be 0 for FIFO and at least 1,000 when batchSize > 10. @default 0 */
  maximumBatchingWindowMs?: number | undefined;
  /** Concurrent invocations, 2 to 1,000 (Lambda's ScalingConfig.MaximumConcurrency). @default 5 */
  maxConcurrency?: number | undefined;
  /** The function timeout; must not exceed the queue's visibility timeout. @default 30000 */
  functionTimeoutMs?: number | undefined;
  /** The function name the handler sees in its context. @default 'local-sqs-consumer' */
  functionName?: string | undefined;
  /** FunctionResponseTypes: ["ReportBatchItemFailures"]; off, any normal return deletes the whole batch. @default true */
  reportBatchItemFailures?: boolean | undefined;
  /** The clock for batching windows and function timeouts. @default the model's clock */
  clock?: Clock | undefined;
  /**
   * Fault hook, called after the handler returned and its response was read, before any delete.
   * Return `'crash'` to simulate the worker dying there: nothing is deleted, even records whose effect
   * committed, and they reappear after their visibility timeout.
   */
  beforeDelete?: (pending: {
    /** The invocation's request id (`context.awsRequestId`). */
    requestId: string;
    /** Every record of the batch, in delivery order. */
    records: readonly SQSRecord[];
    /** The records the response lets the event source delete. */
    toDelete: readonly SQSRecord[];
    /** The records the response reported failed: they stay, to reappear after their visibility timeout. */
    failed: readonly SQSRecord[];
  }) => 'crash' | void | undefined;
  /** Called after every invocation, once its deletes are done, with how it ended. */
  onInvocation?:
    | ((outcome: {
        /** The invocation's request id (`context.awsRequestId`). */
        requestId: string;
        /** Every record of the batch, in delivery order. */
        records: readonly SQSRecord[];
        /**
         * `success`: every record deleted (or attempted). `partial`: the reported failures kept.
         * `invalid-response`, `error`, `timeout`: nothing deleted. `crash`: the handler returned, then the
         * injected crash stopped the deletes.
         */
        result: 'success' | 'partial' | 'invalid-response' | 'error' | 'timeout' | 'crash';
        /** Message ids deleted from the queue (a superseded receipt handle deletes nothing). */
        deleted: string[];
        /** Message ids left to reappear after their visibility timeout. */
        kept: string[];
        /** What the handler threw (`error`), or why the response was refused (`invalid-response`). */
        error?: unknown | undefined;
      }) => void)
    | undefined;
}

// Named here for the package's own code; the options above spell them out, so a user needs no more names.
/** What `beforeDelete` sees: the batch, and which records are about to be deleted. */
export type PendingDelete = Parameters<NonNullable<SqsEventSourceOptions['beforeDelete']>>[0];
/** How one invocation ended, as `onInvocation` sees it. */
export type InvocationOutcome = Parameters<NonNullable<SqsEventSourceOptions['onInvocation']>>[0];

/** What an event source did so far: {@link SqsEventSource.stats}. */
export interface EventSourceStats {
  /** Handler invocations started. */
  invocations: number;
  /** Records handed to the handler, redeliveries included. */
  recordsDelivered: number;
  /** Records actually deleted from the queue. */
  recordsDeleted: number;
  /** Records the handler reported in a valid `batchItemFailures`. */
  recordsFailed: number;
  /** Invalid responses (bad, empty, null or unknown itemIdentifier; not JSON): the whole batch failed. */
  wholeBatchFailures: number;
  /** Invocations whose handler threw or rejected. */
  handlerErrors: number;
  /** Invocations that ran past the function timeout. */
  timeouts: number;
  /** Injected crashes before the deletes. */
  crashes: number;
  /** Timed-out handlers still running now (Lambda would have killed them); drain() and stop() wait for them. */
  abandonedInvocations: number;
  /**
   * Deletes that deleted nothing: the receipt handle was superseded by a later receive, or (FIFO) had
   * expired, which SQS refuses. The message comes back after its visibility timeout, as on Lambda.
   */
  staleDeletes: number;
  /** Invocations running now. */
  activeInvocations: number;
  /** The most invocations that ran at once. */
  maxConcurrentInvocations: number;
}

const MAX_RECEIVE = 10;
const LONG_POLL_SECONDS = 20;

/**
 * Lambda's SQS event source mapping, emulated over the in-process `SqsModel`: long-polling pollers,
 * batch size and batching window, at most `maxConcurrency` invocations at once, FIFO groups served one
 * batch at a time (SQS keeps a group locked while its oldest message is in flight), and the partial
 * batch response rules: an empty or null response deletes everything; an invalid, empty, null or
 * unknown `itemIdentifier` fails the whole batch; a throw or a timeout deletes nothing; otherwise only
 * the records not reported are deleted.
 *
 * @example
 * const source = new SqsEventSource({ model: sqs.model, queue: 'orders.fifo', handler });
 * source.start();
 * await source.drain({ timeoutMs: 60_000 });
 * await source.stop();
 */
export class SqsEventSource {
  /** Counters of what the event source did, updated as it runs. */
  readonly stats: EventSourceStats = {
    invocations: 0,
    recordsDelivered: 0,
    recordsDeleted: 0,
    recordsFailed: 0,
    wholeBatchFailures: 0,
    handlerErrors: 0,
    timeouts: 0,
    crashes: 0,
    abandonedInvocations: 0,
    staleDeletes: 0,
    activeInvocations: 0,
    maxConcurrentInvocations: 0,
  };
  readonly #model: SqsModel;
  readonly #queue: string;
  readonly #queueArn: string;
  readonly #handler: SqsEventHandler;
  readonly #batchSize: number;
  readonly #windowMs: number;
  readonly #maxConcurrency: number;
  readonly #timeoutMs: number;
  readonly #functionName: string;
  readonly #reportBatchItemFailures: boolean;
  readonly #clock: Clock;
  readonly #beforeDelete: SqsEventSourceOptions['beforeDelete'];
  readonly #onInvocation: SqsEventSourceOptions['onInvocation'];
  #stop: AbortController | undefined;
  #pollers: Promise<void>[] = [];
  readonly #idleListeners = new Set<() => void>();
  /** Handlers that ran past the function timeout and are still running. */
  readonly #abandoned = new Set<Promise<unknown>>();

  constructor(options: SqsEventSourceOptions) {
    const queue = options.model.getQueue(options.queue);
    const attributes = options.model.getQueueAttributes(queue.url, ['VisibilityTimeout']);
    const visibilityMs = Number(attributes.VisibilityTimeout) * 1000;
    const batchSize = options.batchSize ?? 10;
    const windowMs = options.maximumBatchingWindowMs ?? 0;
    const maxConcurrency = options.maxConcurrency ?? 5;
    const timeoutMs = options.functionTimeoutMs ?? 30_000;
    const problems: string[] = [];
    if (typeof options.handler !== 'function') problems.push('handler must be a function (event, context) => response.');
    const maxBatch = queue.fifo ? 10 : 10_000;
    if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > maxBatch) {
      problems.push(`batchSize must be an integer from 1 to ${maxBatch} for a ${queue.fifo ? 'FIFO' : 'standard'} queue; got ${batchSize}.`);
    }
    if (!Number.isInteger(windowMs) || windowMs < 0 || windowMs > 300_000) {
      problems.push(`maximumBatchingWindowMs must be an integer from 0 to 300000; got ${windowMs}.`);
    } else if (queue.fifo && windowMs !== 0) {
      problems.push('maximumBatchingWindowMs must be 0 for a FIFO queue: Lambda does not support a batching window on FIFO.');
    } else if (batchSize > 10 && windowMs < 1000) {
      problems.push(`maximumBatchingWindowMs must be at least 1000 when batchSize (${batchSize}) is over 10.`);
    }
    if (!Number.isInteger(maxConcurrency) || maxConcurrency < 2 || maxConcurrency > 1000) {
      problems.push(`maxConcurrency must be an integer from 2 to 1000 (Lambda's MaximumConcurrency); got ${maxConcurrency}.`);
    }
    if (!Number.isInteger(timeoutMs) || timeoutMs < 1) {
      problems.push(`functionTimeoutMs must be a positive integer; got ${timeoutMs}.`);
    } else if (timeoutMs > visibilityMs) {
      problems.push(
        `functionTimeoutMs (${timeoutMs}) exceeds the visibility timeout of queue ${queue.name} (${visibilityMs} ms): raise the queue's VisibilityTimeout (6x the function timeout is AWS's advice) or lower functionTimeoutMs.`,
      );
    }
    if (problems.length > 0) throw new RangeError(`SqsEventSource: ${problems.join(' ')}`);

    this.#model = options.model;
    this.#queue = queue.url;
    this.#queueArn = queue.arn;
    this.#handler = options.handler;
    this.#batchSize = batchSize;
    this.#windowMs = windowMs;
    this.#maxConcurrency = maxConcurrency;
    this.#timeoutMs = timeoutMs;
    this.#functionName = options.functionName ?? 'local-sqs-consumer';
    this.#reportBatchItemFailures = options.reportBatchItemFailures ?? true;
    this.#clock = options.clock ?? options.model.clock;
    this.#beforeDelete = options.beforeDelete;
    this.#onInvocation = options.onInvocation;
  }

  /** True between `start()` and `stop()`. */
  get running(): boolean {
    return this.#stop !== undefined;
  }

  /** Starts `maxConcurrency` pollers. Calling it again while running does nothing. */
  start(): void {
    if (this.#stop) return;
    const stop = new AbortController();
    this.#stop = stop;
    this.#pollers = Array.from({ length: this.#maxConcurrency }, () => this.#poll(stop.signal));
  }

  /** Stops polling and waits for invocations in progress, and for timed-out handlers still running. */
  async stop(): Promise<void> {
    const stop = this.#stop;
    if (!stop) return;
    stop.abort();
    await Promise.all(this.#pollers);
    await Promise.allSettled([...this.#abandoned]);
    this.#pollers = [];
    this.#stop = undefined;
  }

  /**
   * Resolves `true` once the queue holds no visible, delayed or in-flight message and no invocation is
   * running, timed-out ones included; `false` when `timeoutMs` (on the clock) passes first.
   */
  async drain({ timeoutMs }: { timeoutMs: number }): Promise<boolean> {
    const deadline = this.#clock.now() + timeoutMs;
    for (;;) {
      const counts = this.#model.counts(this.#queue);
      if (counts.visible + counts.inFlight + counts.delayed === 0 && this.stats.activeInvocations === 0 && this.#abandoned.size === 0) return true;
      const now = this.#clock.now();
      if (now >= deadline) return false;
      const wake = new AbortController();
      const onIdle = (): void => wake.abort();
      this.#idleListeners.add(onIdle);
      try {
        await this.#model.waitForChange(this.#queue, deadline - now, wake.signal);
      } finally {
        this.#idleListeners.delete(onIdle);
      }
    }
  }

  async #poll(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      let messages: ReceivedMessage[];
      try {
        messages = await this.#collect(signal);
      } catch {
        if (signal.aborted) return;
        // The queue went away or the model refused: back off a little, as the real poller would.
        await sleepOn(this.#clock, 1000, signal);
        continue;
      }
      if (messages.length === 0) continue;
      await this.#invoke(messages);
    }
  }

  async #collect(signal: AbortSignal): Promise<ReceivedMessage[]> {
    const receive = (max: number, wait: number): Promise<ReceivedMessage[]> =>
      this.#model.receiveMessages({
        queue: this.#queue,
        maxNumberOfMessages: max,
        waitTimeSeconds: wait,
        attributeNames: ['All'],
        messageAttributeNames: ['All'],
        signal,
      });
    const batch = await receive(Math.min(MAX_RECEIVE, this.#batchSize), LONG_POLL_SECONDS);
    if (batch.length === 0 || this.#windowMs === 0) return batch;
    const windowEnd = this.#clock.now() + this.#windowMs;
    while (batch.length < this.#batchSize && !signal.aborted) {
      const more = await receive(Math.min(MAX_RECEIVE, this.#batchSize - batch.length), 0);
      batch.push(...more);
      const now = this.#clock.now();
      if (now >= windowEnd) break;
      if (more.length === 0) await this.#model.waitForChange(this.#queue, windowEnd - now, signal);
    }
    return batch;
  }

  async #invoke(messages: ReceivedMessage[]): Promise<void> {
    const requestId = randomUUID();
    const records = messages.map((m) => this.#record(m));
    const deadline = this.#clock.now() + this.#timeoutMs;
    const context = this.#context(requestId, deadline);
    this.stats.invocations += 1;
    this.stats.recordsDelivered += records.length;
    this.stats.activeInvocations += 1;
    this.stats.maxConcurrentInvocations = Math.max(this.stats.maxConcurrentInvocations, this.stats.activeInvocations);
    let outcome: InvocationOutcome;
    try {
      outcome = await this.#run(requestId, records, context);
    } finally {
      this.stats.activeInvocations -= 1;
    }
    this.#onInvocation?.(outcome);
    for (const listener of [...this.#idleListeners]) listener();
  }

  async #run(requestId: string, records: SQSRecord[], context: Context): Promise<InvocationOutcome> {
    const allKept = (result: InvocationOutcome['result'], error?: unknown): InvocationOutcome => ({
      requestId,
      records,
      result,
      deleted: [],
      kept: records.map((r) => r.messageId),
      ...(error === undefined ? {} : { error }),
    });
    const ending = await invokeWithTimeout(this.#handler, { Records: records }, context, this.#clock, this.#timeoutMs);
    if (ending.kind === 'timeout') {
      this.stats.timeouts += 1;
      // Lambda would kill it; one process cannot, so it is abandoned, and drain() and stop() wait for it:
      // a caller that checks the database after drain() must not race a handler still writing.
      const { running } = ending;
      this.stats.abandonedInvocations += 1;
      this.#abandoned.add(running);
      void running.finally(() => {
        this.#abandoned.delete(running);
        this.stats.abandonedInvocations -= 1;
        for (const listener of [...this.#idleListeners]) listener();
      });
      return allKept('timeout');
    }
    if (ending.kind === 'threw') {
      this.stats.handlerErrors += 1;
      return allKept('error', ending.error);
    }
    const verdict = this.#reportBatchItemFailures ? readBatchResponse(ending.value, records) : { failed: new Set<string>() };
    if ('invalid' in verdict) {
      this.stats.wholeBatchFailures += 1;
      return allKept('invalid-response', new Error(verdict.invalid));
    }
    this.stats.recordsFailed += verdict.failed.size;
    const toDelete = records.filter((r) => !verdict.failed.has(r.messageId));
    const failed = records.filter((r) => verdict.failed.has(r.messageId));
    if (this.#beforeDelete?.({ requestId, records, toDelete, failed }) === 'crash') {
      this.stats.crashes += 1;
      return allKept('crash');
    }
    const deleted: string[] = [];
    for (const record of toDelete) {
      if (this.#delete(record.receiptHandle)) deleted.push(record.messageId);
      else this.stats.staleDeletes += 1;
    }
    this.stats.recordsDeleted += deleted.length;
    return {
      requestId,
      records,
      result: failed.length === 0 ? 'success' : 'partial',
      deleted,
      kept: failed.map((r) => r.messageId),
    };
  }

  /** A refused delete (a FIFO handle that expired while the handler ran) leaves the message to come back. */
  #delete(receiptHandle: string): boolean {
    try {
      return this.#model.deleteMessage(this.#queue, receiptHandle);
    } catch (error) {
      if (error instanceof SqsError) return false;
      throw error;
    }
  }

  #record(message: ReceivedMessage): SQSRecord {
    const a = message.attributes;
    const messageAttributes: SQSMessageAttributes = {};
    for (const [name, value] of Object.entries(message.messageAttributes)) {
      messageAttributes[name] = {
        dataType: value.dataType,
        ...(value.stringValue !== undefined ? { stringValue: value.stringValue } : {}),
        ...(value.binaryValue !== undefined ? { binaryValue: Buffer.from(value.binaryValue).toString('base64') } : {}),
        stringListValues: [],
        binaryListValues: [],
      };
    }
    return {
      messageId: message.messageId,
      receiptHandle: message.receiptHandle,
      body: message.body,
      attributes: {
        ApproximateReceiveCount: a.ApproximateReceiveCount ?? '1',
        SentTimestamp: a.SentTimestamp ?? '',
        SenderId: a.SenderId ?? '',
        ApproximateFirstReceiveTimestamp: a.ApproximateFirstReceiveTimestamp ?? '',
        ...pick(a, ['SequenceNumber', 'MessageGroupId', 'MessageDeduplicationId', 'AWSTraceHeader', 'DeadLetterQueueSourceArn']),
      },
      messageAttributes,
      md5OfBody: message.md5OfBody,
      ...(message.md5OfMessageAttributes !== undefined ? { md5OfMessageAttributes: message.md5OfMessageAttributes } : {}),
      eventSource: 'aws:sqs',
      eventSourceARN: this.#queueArn,
      awsRegion: this.#model.region,
    };
  }

  #context(requestId: string, deadline: number): Context {
    return lambdaContext({
      functionName: this.#functionName,
      region: this.#model.region,
      accountId: this.#model.accountId,
      requestId,
      deadline,
      clock: this.#clock,
    });
  }
}

/**
 * Reads a handler's return value as Lambda does with ReportBatchItemFailures on: the value goes through
 * JSON; no response, null, no list, or an empty list is complete success; anything malformed, and any
 * empty, null, misnamed or unknown itemIdentifier, fails the whole batch.
 */
export function readBatchResponse(value: unknown, records: readonly Pick<SQSRecord, 'messageId'>[]): { failed: Set<string> } | { invalid: string } {
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch (error) {
    return { invalid: `response is not serialisable to JSON: ${String(error)}` };
  }
  if (json === undefined) return { failed: new Set() };
  const parsed: unknown = JSON.parse(json);
  if (parsed === null) return { failed: new Set() };
  if (typeof parsed !== 'object' || Array.isArray(parsed)) {
    return { invalid: `response must be an object like { batchItemFailures: [...] }; got ${json.slice(0, 100)}` };
  }
  const list = (parsed as Record<string, unknown>).batchItemFailures;
  if (list === undefined || list === null) return { failed: new Set() };
  if (!Array.isArray(list)) return { invalid: 'batchItemFailures must be a list of { itemIdentifier } objects.' };
  const ids = new Set(records.map((r) => r.messageId));
  const failed = new Set<string>();
  for (const item of list) {
    if (typeof item !== 'object' || item === null || Array.isArray(item)) {
      return { invalid: `batchItemFailures holds ${JSON.stringify(item)}, not an { itemIdentifier } object.` };
    }
    if (!('itemIdentifier' in item)) {
      return { invalid: `batchItemFailures entry ${JSON.stringify(item)} has no itemIdentifier key.` };
    }
    const id = (item as { itemIdentifier: unknown }).itemIdentifier;
    if (typeof id !== 'string' || id === '') {
      return { invalid: `itemIdentifier ${JSON.stringify(id)} is empty or not a string.` };
    }
    if (!ids.has(id)) return { invalid: `itemIdentifier ${id} is not the messageId of a record in this batch.` };
    failed.add(id);
  }
  return { failed };
}

function pick(source: Record<string, string>, keys: readonly string[]): Record<string, string> {
  const result: Record<string, string> = {};
  for (const key of keys) {
    const value = source[key];
    if (value !== undefined) result[key] = value;
  }
  return result;
}
