import { randomUUID } from 'node:crypto';
import { sleepOn } from '../sqs/clock.js';
import { collectBatch } from './batch-collector.js';
import { lastPositions, planAfterInvocation, splitExpired } from './batch-plan.js';
import type { PendingBatch, InvocationVerdict } from './batch-plan.js';
import { readStreamBatchResponse } from './batch-response.js';
import { ChangeSignal, waitForChange } from './change-signal.js';
import { DestinationError, deliver } from './destination.js';
import { StreamModelError } from './errors.js';
import { failureRecord } from './failure-record.js';
import { invokeWithTimeout } from './invoke.js';
import type { Ending } from './invoke.js';
import { functionArn, lambdaContext } from '../lambda-context.js';
import type { ResolvedStreamOptions } from './options.js';
import type { LaneRecord, PolledStream } from './stream-source.js';
import type { DiscardCondition, StreamDiscard, StreamEventSourceStats, StreamInvocationOutcome, StreamInvocationResult } from './types.js';

/** Where the function runs, for its ARN. */
export interface FunctionLocation {
  region: string;
  accountId: string;
}

/** A pause after a refused destination or a broken read, as the real poller backs off. */
const BACKOFF_MS = 1000;

/**
 * Lambda's event source mapping for a stream, shared by Kinesis, DynamoDB Streams and Kafka: one
 * poller per lane group (a shard; Kafka's partitions of one consumer), each invoking one batch at a
 * time, in order, and pollers in parallel. The checkpoint moves only after an invocation succeeded
 * (or a valid partial response named where to resume), or after records were given up on. Failures
 * follow the mapping's retry settings: retry, bisect, maximum retries, maximum record age, and the
 * on-failure destination. Each source's event source brings the source: its model, event and record
 * shapes (kinesis/, dynamodb/, kafka/), and shows it as a StreamEventSource.
 */
export class StreamPoller<R, Event> {
  /** See {@link StreamEventSource.stats}. */
  readonly stats: StreamEventSourceStats = {
    invocations: 0,
    recordsDelivered: 0,
    recordsCheckpointed: 0,
    partialResponses: 0,
    wholeBatchFailures: 0,
    handlerErrors: 0,
    timeouts: 0,
    crashes: 0,
    retries: 0,
    bisections: 0,
    recordsDiscarded: 0,
    destinationErrors: 0,
    abandonedInvocations: 0,
    activeInvocations: 0,
    maxConcurrentInvocations: 0,
  };
  readonly #source: PolledStream<R, Event>;
  readonly #options: ResolvedStreamOptions<R, Event>;
  readonly #location: FunctionLocation;
  /** Lane to the position of its last record done, as this mapping last read or wrote it. */
  readonly #checkpoints = new Map<string, bigint | undefined>();
  /** Lane to where the starting position put it, for lanes with no stored checkpoint. */
  #starts: Map<string, bigint | undefined> | undefined;
  #stop: AbortController | undefined;
  #pollers: Promise<void>[] = [];
  /** Handlers that ran past the function timeout and are still running. */
  readonly #abandoned = new Set<Promise<unknown>>();
  /** Fires after every invocation, discard and checkpoint, for drain(). */
  readonly #progress = new ChangeSignal();
  /** Each poller's batches waiting for a retry or a half's turn: records not yet done, maybe already trimmed. */
  readonly #queues = new Set<PendingBatch<R>[]>();
  /** Pollers holding a batch right now (collected, not yet settled). */
  #holding = 0;

  constructor(source: PolledStream<R, Event>, options: ResolvedStreamOptions<R, Event>, location: FunctionLocation) {
    this.#source = source;
    this.#options = options;
    this.#location = location;
  }

  /** See {@link StreamEventSource.running}. */
  get running(): boolean {
    return this.#stop !== undefined;
  }

  /** See {@link StreamEventSource.start}. */
  start(): void {
    if (this.#stop) return;
    const groups = this.#source.pollerLanes();
    if (!this.#starts) {
      const starts = new Map<string, bigint | undefined>();
      for (const lane of groups.flat()) {
        starts.set(lane, this.#options.startingPosition === 'LATEST' ? this.#source.newest(lane) : undefined);
      }
      this.#starts = starts;
    }
    for (const lane of groups.flat()) this.#reload(lane);
    const stop = new AbortController();
    this.#stop = stop;
    this.#pollers = groups.map((lanes) => {
      const poller = this.#poll(lanes, stop.signal);
      // A poller stopped by a throwing callback is reported by stop(), not as an unhandled rejection.
      poller.catch(() => undefined);
      return poller;
    });
  }

  /** See {@link StreamEventSource.stop}. */
  async stop(): Promise<void> {
    const stop = this.#stop;
    if (!stop) return;
    stop.abort();
    const ended = await Promise.allSettled(this.#pollers);
    await Promise.allSettled([...this.#abandoned]);
    this.#pollers = [];
    this.#stop = undefined;
    const failed = ended.find((result): result is PromiseRejectedResult => result.status === 'rejected');
    if (failed) throw failed.reason;
  }

  /** See {@link StreamEventSource.drain}. */
  async drain({ timeoutMs }: { timeoutMs: number }): Promise<boolean> {
    const clock = this.#options.clock;
    const deadline = clock.now() + timeoutMs;
    for (;;) {
      if (this.#isIdle()) return true;
      const now = clock.now();
      if (now >= deadline) return false;
      await waitForChange(clock, [...this.#source.signals, this.#progress], deadline - now);
    }
  }

  /** See {@link StreamEventSource.checkpoint}. */
  checkpoint(lane: string): string | undefined {
    const after = this.#source.loadCheckpoint(lane);
    return after === undefined ? undefined : this.#source.describeCheckpoint(after);
  }

  #isIdle(): boolean {
    if (this.stats.activeInvocations > 0 || this.#abandoned.size > 0 || this.#holding > 0) return false;
    if ([...this.#queues].some((queue) => queue.length > 0)) return false;
    return this.#source
      .pollerLanes()
      .flat()
      .every((lane) => {
        const newest = this.#source.newest(lane);
        const done = this.#checkpoints.get(lane);
        return newest === undefined || (done !== undefined && done >= newest);
      });
  }

  /** The stored checkpoint, else where the starting position put the lane. */
  #reload(lane: string): void {
    const stored = this.#source.loadCheckpoint(lane);
    this.#checkpoints.set(lane, stored ?? this.#starts?.get(lane));
  }

  async #poll(lanes: string[], signal: AbortSignal): Promise<void> {
    const queue: PendingBatch<R>[] = [];
    this.#queues.add(queue);
    let rotation = 0;
    try {
      while (!signal.aborted) {
        let batch = queue.shift();
        try {
          if (!batch) {
            const records = await collectBatch({
              source: this.#source,
              lanes,
              checkpoint: (lane) => this.#checkpoints.get(lane),
              batchSize: this.#options.batchSize,
              windowMs: this.#options.windowMs,
              clock: this.#options.clock,
              rotation: rotation++,
              signal,
            });
            if (records.length === 0) continue;
            batch = { records, retries: 0 };
          }
          this.#holding += 1;
          const next = await this.#process(batch, signal);
          if (next === 'crashed') {
            // The worker died: its retry state is gone; the next one starts again from the checkpoints.
            queue.length = 0;
            for (const lane of lanes) this.#reload(lane);
          } else {
            queue.unshift(...next);
          }
        } catch (error) {
          if (signal.aborted) return;
          // A bug in a callback is the caller's to see (stop() rethrows it); only the service can refuse.
          if (!(error instanceof DestinationError || error instanceof StreamModelError)) throw error;
          // A refused destination or a failed read: keep the batch and try again after a pause.
          if (batch) queue.unshift(batch);
          await sleepOn(this.#options.clock, BACKOFF_MS, signal);
        } finally {
          if (batch) this.#holding -= 1;
          this.#progress.notify();
        }
      }
    } finally {
      // A stopped poller's retries are dropped: a restart reads again from the checkpoints.
      this.#queues.delete(queue);
    }
  }

  /** Runs one batch: skips what is too old, invokes, then checkpoints, retries or discards. */
  async #process(batch: PendingBatch<R>, signal: AbortSignal): Promise<PendingBatch<R>[] | 'crashed'> {
    const options = this.#options;
    const { expired, live } = splitExpired(batch.records, options.clock.now(), options.maximumRecordAgeMs, (lane) => this.#source.oldest(lane));
    if (expired.length > 0) await this.#discard(expired, 'RecordAgeExceeded', batch.retries, batch.last);
    if (live.length === 0) return [];
    const current: PendingBatch<R> = { ...batch, records: live };
    const records = current.records.map((r) => r.record);
    const requestId = randomUUID();
    const verdict = this.#verdict(await this.#invoke(current.records, requestId), current.records);
    const plan = planAfterInvocation(current, verdict, requestId, {
      bisect: options.bisect,
      maximumRetryAttempts: options.maximumRetryAttempts,
    });
    const result: StreamInvocationResult = verdict.kind === 'failure' ? verdict.result : verdict.kind;
    const outcome = (overrides: Partial<StreamInvocationOutcome<R>>): StreamInvocationOutcome<R> => ({
      requestId,
      records,
      result,
      retry: batch.retries,
      checkpoints: this.#describe(current.records),
      bisected: plan.bisected,
      ...(verdict.kind === 'failure' && verdict.error !== undefined ? { error: verdict.error } : {}),
      ...overrides,
    });
    if (plan.advance.size > 0) {
      const checkpoints = Object.fromEntries([...plan.advance].map(([lane, after]) => [lane, this.#source.describeCheckpoint(after)]));
      const pendingResult = verdict.kind === 'partial' ? 'partial' : 'success';
      if (options.beforeCheckpoint?.({ requestId, records, result: pendingResult, checkpoints }) === 'crash') {
        this.stats.crashes += 1;
        this.#report(outcome({ result: 'crash' }));
        return 'crashed';
      }
      this.#advance(plan.advance);
      this.stats.recordsCheckpointed += current.records.filter((r) => r.position <= (plan.advance.get(r.lane) ?? -1n)).length;
    }
    let discarded: StreamDiscard<R> | undefined;
    if (plan.discard.length > 0) {
      const ending = verdict.kind === 'partial' ? 'partial' : 'function-error';
      discarded = await this.#discard(plan.discard, 'RetryAttemptsExhausted', batch.retries + 1, { requestId, ending });
    }
    this.stats.bisections += plan.bisected ? 1 : 0;
    this.stats.retries += plan.next.filter((next) => next.retries > batch.retries).length;
    this.#report(outcome({ discarded }));
    if (verdict.kind !== 'success') await this.#pause(signal);
    return plan.next;
  }

  /** Calls the handler with Lambda's event for the batch, on the function timeout. */
  async #invoke(batch: readonly LaneRecord<R>[], requestId: string): Promise<Ending> {
    const options = this.#options;
    const context = lambdaContext({
      functionName: options.functionName,
      region: this.#location.region,
      accountId: this.#location.accountId,
      requestId,
      deadline: options.clock.now() + options.functionTimeoutMs,
      clock: options.clock,
    });
    this.stats.invocations += 1;
    this.stats.recordsDelivered += batch.length;
    this.stats.activeInvocations += 1;
    this.stats.maxConcurrentInvocations = Math.max(this.stats.maxConcurrentInvocations, this.stats.activeInvocations);
    try {
      const ending = await invokeWithTimeout(options.handler, this.#source.event(batch), context, options.clock, options.functionTimeoutMs);
      if (ending.kind === 'timeout') this.#abandon(ending.running);
      return ending;
    } finally {
      this.stats.activeInvocations -= 1;
    }
  }

  /** Reads how an invocation ended, and its response under the ReportBatchItemFailures setting. */
  #verdict(ending: Ending, batch: readonly LaneRecord<R>[]): InvocationVerdict {
    if (ending.kind === 'timeout') {
      this.stats.timeouts += 1;
      return { kind: 'failure', result: 'timeout' };
    }
    if (ending.kind === 'threw') {
      this.stats.handlerErrors += 1;
      return { kind: 'failure', result: 'error', error: ending.error };
    }
    // Off, the response is not even read: any normal return is a complete success.
    if (!this.#options.reportBatchItemFailures) return { kind: 'success' };
    const response = readStreamBatchResponse(ending.value, batch, (id, records) => this.#source.identify(id, records));
    if ('invalid' in response) {
      this.stats.wholeBatchFailures += 1;
      return { kind: 'failure', result: 'invalid-response', error: new Error(response.invalid) };
    }
    if (response.failedFrom.size === 0) return { kind: 'success' };
    this.stats.partialResponses += 1;
    return { kind: 'partial', failedFrom: response.failedFrom };
  }

  /** Lambda would kill a timed-out handler; one process cannot, so drain() and stop() wait for it. */
  #abandon(running: Promise<unknown>): void {
    this.stats.abandonedInvocations += 1;
    this.#abandoned.add(running);
    void running.finally(() => {
      this.#abandoned.delete(running);
      this.stats.abandonedInvocations -= 1;
      this.#progress.notify();
    });
  }

  /**
   * Gives up on records: sends the failure record to the destination (a refusal throws, and the
   * poller tries the batch again later), then checkpoints past them so the lane moves on.
   */
  async #discard(
    records: readonly LaneRecord<R>[],
    condition: DiscardCondition,
    invokeCount: number,
    last: PendingBatch<R>['last'],
  ): Promise<StreamDiscard<R>> {
    const options = this.#options;
    const document = failureRecord({
      requestId: last?.requestId ?? randomUUID(),
      functionArn: functionArn(this.#location.region, this.#location.accountId, options.functionName),
      condition,
      approximateInvokeCount: invokeCount,
      lastInvocation: last?.ending ?? 'never-invoked',
      now: options.clock.now(),
      batchInfo: this.#source.batchInfo(records),
    });
    if (options.onFailure) {
      try {
        await deliver(options.onFailure, document);
      } catch (error) {
        this.stats.destinationErrors += 1;
        throw error;
      }
    }
    this.#advance(lastPositions(records));
    this.stats.recordsDiscarded += records.length;
    const discard: StreamDiscard<R> = { condition, records: records.map((r) => r.record), failureRecord: document, delivered: options.onFailure !== undefined };
    options.onDiscard?.(discard);
    this.#progress.notify();
    return discard;
  }

  /** Writes checkpoints: to the source's store (the mapping's own, or Kafka's consumer group) and here. */
  #advance(positions: ReadonlyMap<string, bigint>): void {
    for (const [lane, after] of positions) {
      const current = this.#checkpoints.get(lane);
      if (current !== undefined && current >= after) continue;
      this.#source.saveCheckpoint(lane, after);
      this.#checkpoints.set(lane, after);
    }
  }

  /** The stored checkpoints of the batch's lanes; a lane where nothing was checkpointed yet is left out. */
  #describe(batch: readonly LaneRecord<R>[]): Record<string, string> {
    const described: Record<string, string> = {};
    for (const lane of new Set(batch.map((r) => r.lane))) {
      const checkpoint = this.checkpoint(lane);
      if (checkpoint !== undefined) described[lane] = checkpoint;
    }
    return described;
  }

  #report(outcome: StreamInvocationOutcome<R>): void {
    this.#options.onInvocation?.(outcome);
    this.#progress.notify();
  }

  /** Between a failure and its retry: the configured pause, or at least a turn of the event loop. */
  async #pause(signal: AbortSignal): Promise<void> {
    if (this.#options.retryDelayMs > 0) await sleepOn(this.#options.clock, this.#options.retryDelayMs, signal);
    else await new Promise<void>((resolve) => setImmediate(resolve));
  }
}
