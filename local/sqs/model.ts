import { SystemClock, sleepOn } from './clock.js';
import type { Clock } from './clock.js';
import { checkBatchEntries, entryFailure } from './batch-entries.js';
import { SqsError, invalidAttributeValue, invalidParameter, missingParameter, queueDoesNotExist } from './errors.js';
import { pickFifoMessages } from './fifo-groups.js';
import type { StoredMessage } from './message.js';
import { Queue } from './queue.js';
import { isKnownAttributeName, normalizeAttribute, parseBoolean, parseQueueAttributes, unknownAttribute } from './queue-attributes.js';
import type { QueueConfig } from './queue-attributes.js';
import { hostOf, resolveQueueName } from './queue-ref.js';
import { ReceiptHandleExpired, decodeReceiptHandle, deleteVerdict, encodeReceiptHandle, visibilityVerdict } from './receipt-handles.js';
import { movedMessage } from './move-task.js';
import { receivedMessage } from './received.js';
import { DEDUP_WINDOW, checkSendBatch, isFifoId, sendToQueue } from './send.js';
import type { BatchEntryFailure, BatchResult, ReceivedMessage, SendMessageInput, SendMessageResult } from './types.js';

/** A queue as callers see it. */
export interface QueueInfo {
  /** The queue name (`orders.fifo`). */
  name: string;
  /** The queue URL: `<endpoint>/<accountId>/<name>`. */
  url: string;
  /** The queue ARN: `arn:aws:sqs:<region>:<accountId>:<name>`. */
  arn: string;
  /** Whether it is a FIFO queue. */
  fifo: boolean;
}

// Queue name texts: AWS's, as moto (moto/sqs/models.py) and local-aws-sqs (test/create-queue.test.ts)
// reproduce them; localstack's test_fifo_queue_requires_suffix and test_standard_queue_cannot_have_fifo_suffix
// (validated against AWS) give the code, InvalidParameterValue.
const QUEUE_NAME = /^[A-Za-z0-9_-]{1,80}$/;
const FIFO_QUEUE_NAME = /^[A-Za-z0-9_-]{1,75}\.fifo$/;
const BAD_QUEUE_NAME = 'Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length';
const BAD_FIFO_QUEUE_NAME =
  'The name of a FIFO queue can only include alphanumeric characters, hyphens, or underscores, must end with .fifo suffix and be 1 to 80 in length';
const PURGE_INTERVAL_MS = 60_000;
const MAX_VISIBILITY_TIMEOUT = 43_200;

/**
 * In-process SQS: standard and FIFO queues with visibility timeouts, receipt handles, receive counts,
 * redrive, retention, delays, FIFO group locks and five-minute deduplication, on an injected clock.
 *
 * Its message operations (send, receive, delete, change visibility) are internal: the local endpoint and
 * `SqsEventSource` call them, and your code reaches them as it reaches SQS, through `@aws-sdk/client-sqs` at
 * the endpoint (`local.sqs.endpoint`).
 *
 * @example
 * const local = await startLocal();
 * const queue = local.sqs.model.createQueue('orders.fifo', { FifoQueue: 'true', VisibilityTimeout: '30' });
 * // ... send with new SQSClient({ endpoint: local.sqs.endpoint, ... }), then:
 * const { visible, inFlight } = local.sqs.model.counts(queue.url);
 */
export class SqsModel {
  /** The clock the model's timers run on. */
  readonly clock: Clock;
  /** The region in queue URLs and ARNs. */
  readonly region: string;
  /** The account id in queue URLs and ARNs. */
  readonly accountId: string;
  #endpoint: string;
  /** Every host the model's queue URLs have carried: URLs handed out before a move keep working. */
  readonly #hosts = new Set<string>();
  readonly #queues = new Map<string, Queue>();

  constructor(
    options: {
      /**
       * The clock every timer of the model runs on: visibility timeouts, delays, retention, deduplication.
       * A `Clock` of your own lets a test jump ahead.
       * @default a new SystemClock
       */
      clock?: Clock | undefined;
      /** The region in queue URLs and ARNs. @default 'us-east-1' */
      region?: string | undefined;
      /** The account id in queue URLs and ARNs. @default '000000000000' */
      accountId?: string | undefined;
      /**
       * Base of queue URLs (`<endpoint>/<accountId>/<name>`). `startLocal()` sets it to its SQS endpoint's address.
       * @default `https://sqs.<region>.amazonaws.com`
       */
      endpoint?: string | undefined;
    } = {},
  ) {
    this.clock = options.clock ?? new SystemClock();
    this.region = options.region ?? 'us-east-1';
    this.accountId = options.accountId ?? '000000000000';
    this.#endpoint = '';
    this.setEndpoint(options.endpoint ?? `https://sqs.${this.region}.amazonaws.com`);
  }

  /** The base of queue URLs. */
  get endpoint(): string {
    return this.#endpoint;
  }

  /**
   * Points queue URLs at `endpoint` (the HTTP front calls this with its own address).
   * @internal
   */
  setEndpoint(endpoint: string): void {
    this.#endpoint = endpoint.replace(/\/+$/, '');
    const host = hostOf(this.#endpoint);
    if (host) this.#hosts.add(host);
  }

  /** The URL of the queue named `name` (whether or not it exists). */
  queueUrl(name: string): string {
    return `${this.#endpoint}/${this.accountId}/${name}`;
  }

  // ---- queues -------------------------------------------------------------------------------

  /**
   * CreateQueue. The same name with the same attributes returns the existing queue; with different
   * attributes it throws QueueNameExists. `FifoQueue` (`true` in any case) makes a FIFO queue; on a
   * standard queue the attribute does not exist, so `FifoQueue=false` is `Unknown Attribute FifoQueue.`
   * (what AWS answers, as users report it, and local-aws-sqs's test/create-queue.test.ts expects).
   */
  createQueue(name: string, attributes: Readonly<Record<string, string>> = {}): QueueInfo {
    if (typeof name !== 'string' || name === '') throw missingParameter('QueueName');
    let fifo = false;
    if (attributes.FifoQueue !== undefined) {
      const value = parseBoolean(attributes.FifoQueue);
      if (value === undefined) throw invalidAttributeValue('FifoQueue');
      if (value === 'false') throw unknownAttribute('FifoQueue', 'a standard queue takes no FifoQueue attribute: leave it out');
      fifo = true;
    }
    if (fifo ? !FIFO_QUEUE_NAME.test(name) : !QUEUE_NAME.test(name)) {
      throw new SqsError('InvalidParameterValue', fifo ? BAD_FIFO_QUEUE_NAME : BAD_QUEUE_NAME, {
        advice: name.endsWith('.fifo') && !fifo ? 'a FIFO queue needs the attribute FifoQueue=true' : undefined,
      });
    }
    const existing = this.#queues.get(name);
    if (existing) {
      for (const [key, value] of Object.entries(attributes)) {
        if (existing.config.raw[key] !== normalizeAttribute(key, value)) {
          // Recorded: localstack test_sqs.snapshot.json, test_create_queue_with_different_attributes_raises_exception.
          throw new SqsError('QueueNameExists', `A queue already exists with the same name and a different value for attribute ${key}`);
        }
      }
      return this.#info(existing);
    }
    const config = parseQueueAttributes(attributes, { fifo });
    const arn = `arn:aws:sqs:${this.region}:${this.accountId}:${name}`;
    this.#checkRedrive(arn, fifo, config);
    const queue = new Queue({ name, arn, config, now: this.clock.now() });
    this.#queues.set(name, queue);
    return this.#info(queue);
  }

  /** Resolves a queue by name, URL or ARN; throws QueueDoesNotExist. */
  getQueue(nameOrUrl: string): QueueInfo {
    return this.#info(this.#queue(nameOrUrl));
  }

  /** ListQueues: every queue whose name starts with `prefix`. */
  listQueues(prefix = ''): QueueInfo[] {
    return [...this.#queues.values()].filter((q) => q.name.startsWith(prefix)).map((q) => this.#info(q));
  }

  /** DeleteQueue: the queue and its messages are gone at once. */
  deleteQueue(nameOrUrl: string): void {
    const queue = this.#queue(nameOrUrl);
    queue.deleted = true;
    this.#queues.delete(queue.name);
    queue.notify();
  }

  /**
   * SetQueueAttributes: validates and applies `attributes` (strings, as SQS takes them) over the current
   * ones. The queue type cannot change: `FifoQueue` is unknown to a standard queue, `true` changes nothing
   * on a FIFO queue, and `false` is refused (recorded: localstack test_sqs.snapshot.json, test_set_unsupported_attribute_fifo).
   */
  setQueueAttributes(nameOrUrl: string, attributes: Readonly<Record<string, string>>): void {
    const queue = this.#queue(nameOrUrl);
    if (attributes.FifoQueue !== undefined) {
      if (!queue.fifo) throw unknownAttribute('FifoQueue', 'the queue type is fixed when the queue is created');
      const value = parseBoolean(attributes.FifoQueue);
      if (value === 'false') throw invalidAttributeValue('FifoQueue', 'Modifying queue type is not supported.');
      if (value === undefined) throw invalidAttributeValue('FifoQueue');
    }
    const config = parseQueueAttributes(attributes, { fifo: queue.fifo, base: queue.config.raw });
    this.#checkRedrive(queue.arn, queue.fifo, config);
    queue.config = config;
    queue.lastModifiedTimestamp = this.clock.now();
    queue.notify();
  }

  /** GetQueueAttributes: `All` or names; every value a string as SQS sends it. */
  getQueueAttributes(nameOrUrl: string, attributeNames: readonly string[] = ['All']): Record<string, string> {
    const queue = this.#queue(nameOrUrl);
    const now = this.clock.now();
    queue.expire(now);
    for (const name of attributeNames) {
      if (name !== 'All' && !isKnownAttributeName(name)) throw unknownAttribute(name);
    }
    const counts = queue.counts(now);
    const all: Record<string, string> = {
      ...queue.config.raw,
      QueueArn: queue.arn,
      ApproximateNumberOfMessages: String(counts.visible),
      ApproximateNumberOfMessagesNotVisible: String(counts.inFlight),
      ApproximateNumberOfMessagesDelayed: String(counts.delayed),
      CreatedTimestamp: String(Math.floor(queue.createdTimestamp / 1000)),
      LastModifiedTimestamp: String(Math.floor(queue.lastModifiedTimestamp / 1000)),
    };
    if (attributeNames.includes('All')) return all;
    const selected: Record<string, string> = {};
    for (const name of attributeNames) {
      const value = all[name];
      if (value !== undefined) selected[name] = value;
    }
    return selected;
  }

  /** Exact counts (the model is not distributed, so "approximate" is exact here). */
  counts(nameOrUrl: string): {
    /** Messages a receive could return now (ApproximateNumberOfMessages). */
    visible: number;
    /** Messages received and not yet deleted or visible again (ApproximateNumberOfMessagesNotVisible). */
    inFlight: number;
    /** Messages still in their delay (ApproximateNumberOfMessagesDelayed). */
    delayed: number;
  } {
    const queue = this.#queue(nameOrUrl);
    const now = this.clock.now();
    queue.expire(now);
    return queue.counts(now);
  }

  /**
   * Every stored message of a queue (a copy), for tests and the demo's final accounting.
   * @internal
   */
  peekMessages(nameOrUrl: string): StoredMessage[] {
    const queue = this.#queue(nameOrUrl);
    queue.expire(this.clock.now());
    return [...queue.messages.values()].map((m) => ({ ...m }));
  }

  /**
   * Waits until `nameOrUrl` may have changed (a send, delete, visibility change), or `ms` of clock time.
   * @internal
   */
  async waitForChange(nameOrUrl: string, ms: number, signal?: AbortSignal): Promise<void> {
    const queue = this.#queue(nameOrUrl);
    const now = this.clock.now();
    await this.#waitForChange(queue, now + ms, signal);
  }

  /**
   * PurgeQueue: deletes every message and forgets the FIFO deduplication ids, so a message sent again
   * after a purge is delivered (localstack test_purge_queue_clears_fifo_deduplication_cache, validated
   * against AWS). A second purge within 60 seconds throws PurgeQueueInProgress, with AWS's text
   * (recorded: localstack test_sqs.snapshot.json, test_successive_purge_calls_fail).
   */
  purgeQueue(nameOrUrl: string): void {
    const queue = this.#queue(nameOrUrl);
    const now = this.clock.now();
    if (queue.lastPurgeAt !== undefined && now - queue.lastPurgeAt < PURGE_INTERVAL_MS) {
      throw new SqsError('PurgeQueueInProgress', `Only one PurgeQueue operation on ${queue.name} is allowed every 60 seconds.`, {
        advice: `retry after ${new Date(queue.lastPurgeAt + PURGE_INTERVAL_MS).toISOString()}`,
      });
    }
    queue.lastPurgeAt = now;
    queue.messages.clear();
    queue.dedup.clear();
    queue.receiveAttempts.clear();
    queue.visibilityChanged.clear();
    queue.notify();
  }

  // ---- sending ------------------------------------------------------------------------------

  /**
   * SendMessage, with SQS's validation, FIFO deduplication and MD5s.
   * @internal
   */
  async sendMessage(input: SendMessageInput): Promise<SendMessageResult> {
    return sendToQueue(this.#queue(input.queue), input, this.clock.now(), this.accountId);
  }

  /**
   * SendMessageBatch: up to 10 entries and 1 MiB in all, and on a FIFO queue every entry with its group
   * (and deduplication) id, else the whole request throws and nothing is sent; past those checks each
   * entry succeeds or fails on its own.
   * @internal
   */
  async sendMessageBatch(nameOrUrl: string, entries: readonly (Omit<SendMessageInput, 'queue'> & { id: string })[]): Promise<BatchResult<SendMessageResult>> {
    const queue = this.#queue(nameOrUrl);
    checkBatchEntries(
      entries.map((e) => e.id),
      'SendMessageBatchRequestEntry',
    );
    checkSendBatch(queue, entries);
    const result: BatchResult<SendMessageResult> = { successful: [], failed: [] };
    for (const entry of entries) {
      try {
        result.successful.push({ id: entry.id, ...sendToQueue(queue, entry, this.clock.now(), this.accountId) });
      } catch (error) {
        result.failed.push(entryFailure(entry.id, error));
      }
    }
    return result;
  }

  // ---- receiving ----------------------------------------------------------------------------

  /**
   * ReceiveMessage. Long polls for up to `waitTimeSeconds` of clock time, waking as soon as a message
   * can be returned. FIFO: a group is available while its oldest message is not in flight; as many
   * consecutive messages of one group as can be taken before the next group.
   * @internal
   */
  async receiveMessages(input: {
    /** Queue name, URL or ARN. */
    queue: string;
    /** 1 to 10. @default 1 */
    maxNumberOfMessages?: number | undefined;
    /** Seconds, 0 to 43,200; overrides the queue's VisibilityTimeout for these messages. */
    visibilityTimeout?: number | undefined;
    /** Seconds, 0 to 20; long poll. @default the queue's ReceiveMessageWaitTimeSeconds */
    waitTimeSeconds?: number | undefined;
    /** System attribute names to return, or `All`. */
    attributeNames?: readonly string[] | undefined;
    /** Message attribute names to return: `All`, `.*`, a name, or a prefix `foo.*`. */
    messageAttributeNames?: readonly string[] | undefined;
    /** FIFO only: a retry with the same id within 5 minutes returns the same messages. */
    receiveRequestAttemptId?: string | undefined;
    /** Ends a long poll early (returns what is there, usually nothing). */
    signal?: AbortSignal | undefined;
  }): Promise<ReceivedMessage[]> {
    const queue = this.#queue(input.queue);
    const max = input.maxNumberOfMessages ?? 1;
    if (!Number.isInteger(max) || max < 1 || max > 10) {
      // Recorded: localstack test_sqs.snapshot.json, test_send_receive_max_number_of_messages.
      throw invalidParameter('MaxNumberOfMessages', max, 'Must be between 1 and 10, if provided.');
    }
    const visibility = input.visibilityTimeout ?? queue.config.visibilityTimeout;
    if (!Number.isInteger(visibility) || visibility < 0 || visibility > MAX_VISIBILITY_TIMEOUT) {
      throw invalidParameter('VisibilityTimeout', visibility, `must be an integer from 0 to ${MAX_VISIBILITY_TIMEOUT}.`);
    }
    const wait = input.waitTimeSeconds ?? queue.config.receiveMessageWaitTimeSeconds;
    if (!Number.isInteger(wait) || wait < 0 || wait > 20) {
      throw invalidParameter('WaitTimeSeconds', wait, 'must be an integer from 0 to 20.');
    }
    const attemptId = input.receiveRequestAttemptId;
    if (attemptId !== undefined && !isFifoId(attemptId)) {
      throw invalidParameter('ReceiveRequestAttemptId', attemptId, 'use 1 to 128 alphanumeric or punctuation characters.');
    }
    const deadline = this.clock.now() + wait * 1000;
    for (;;) {
      const now = this.clock.now();
      queue.expire(now);
      const taken = this.#take(queue, now, max, visibility, queue.fifo ? attemptId : undefined);
      if (taken.length > 0 || now >= deadline || input.signal?.aborted || queue.deleted) {
        return taken.map((m) => receivedMessage(m, input.attributeNames ?? [], input.messageAttributeNames ?? []));
      }
      await this.#waitForChange(queue, deadline, input.signal);
    }
  }

  #take(queue: Queue, now: number, max: number, visibility: number, attemptId: string | undefined): StoredMessage[] {
    if (attemptId !== undefined) {
      const previous = queue.receiveAttempts.get(attemptId);
      if (previous) {
        const messages = previous.messages.map((p) => queue.messages.get(p.messageId));
        const unchanged = messages.every((m, i) => m && m.receiptHandle === previous.messages[i]?.receiptHandle && !queue.visibilityChanged.has(m.messageId));
        if (unchanged) {
          // Same messages, same receipt handles; the retry resets their visibility timeout.
          for (const m of messages) if (m) m.visibleAt = now + visibility * 1000;
          return messages.filter((m): m is StoredMessage => m !== undefined);
        }
        queue.receiveAttempts.delete(attemptId);
      }
    }
    const picked = queue.fifo
      ? pickFifoMessages(queue.messages.values(), now, max, (m) => this.#redriveIfExhausted(queue, m, now))
      : this.#pickStandard(queue, now, max);
    for (const message of picked) {
      message.receiveCount += 1;
      message.firstReceiveTimestamp ??= now;
      message.visibleAt = now + visibility * 1000;
      message.receiptHandle = encodeReceiptHandle(queue.name, message.messageId);
      queue.visibilityChanged.delete(message.messageId);
    }
    if (attemptId !== undefined && picked.length > 0) {
      queue.receiveAttempts.set(attemptId, {
        expiresAt: now + DEDUP_WINDOW,
        messages: picked.map((m) => ({ messageId: m.messageId, receiptHandle: m.receiptHandle ?? '' })),
      });
    }
    return picked;
  }

  #pickStandard(queue: Queue, now: number, max: number): StoredMessage[] {
    const picked: StoredMessage[] = [];
    for (const message of queue.messages.values()) {
      if (picked.length >= max) break;
      if (message.visibleAt > now) continue;
      if (this.#redriveIfExhausted(queue, message, now)) continue;
      picked.push(message);
    }
    return picked;
  }

  /** Moves a message received maxReceiveCount times to the dead-letter queue instead of delivering it. */
  #redriveIfExhausted(queue: Queue, message: StoredMessage, now: number): boolean {
    const policy = queue.config.redrivePolicy;
    if (!policy || message.receiveCount < policy.maxReceiveCount) return false;
    const dlq = [...this.#queues.values()].find((q) => q.arn === policy.deadLetterTargetArn);
    if (!dlq) return false;
    queue.messages.delete(message.messageId);
    queue.visibilityChanged.delete(message.messageId);
    const moved: StoredMessage = {
      ...message,
      visibleAt: now,
      deadLetterQueueSourceArn: queue.arn,
      // AWS: a FIFO dead-letter queue resets the enqueue time for retention; a standard one keeps it.
      enqueuedAt: dlq.fifo ? now : message.enqueuedAt,
      // AWS (the developer guide's DLQ redrive page): moved to a FIFO dead-letter queue, "the original message's
      // deduplication ID will be replaced with the original message's ID".
      ...(dlq.fifo ? { sequenceNumber: dlq.nextSequenceNumber(), messageDeduplicationId: message.messageId } : {}),
    };
    delete moved.receiptHandle;
    dlq.messages.set(moved.messageId, moved);
    dlq.notify();
    queue.notify();
    return true;
  }

  async #waitForChange(queue: Queue, deadline: number, signal: AbortSignal | undefined): Promise<void> {
    const now = this.clock.now();
    const wake = Math.min(deadline, queue.nextWakeAt(now) ?? Number.POSITIVE_INFINITY);
    const stop = new AbortController();
    const abort = (): void => stop.abort();
    signal?.addEventListener('abort', abort, { once: true });
    const unsubscribe = queue.onChange(abort);
    try {
      await sleepOn(this.clock, Math.max(0, wake - now), stop.signal);
    } finally {
      unsubscribe();
      signal?.removeEventListener('abort', abort);
    }
  }

  // ---- dead-letter redrive ------------------------------------------------------------------

  /**
   * StartMessageMoveTask, as the console's DLQ redrive runs it: every message of the dead-letter queue
   * `sourceArn` that is not in flight goes, in queue order, to `destinationArn` or else back to the queue it
   * was dead-lettered from, as a new message (move-task.ts). AWS runs the task in the background; here it is
   * done when the call returns. The source must be some queue's dead-letter queue, and a destination of the
   * same type, as AWS requires.
   * @internal
   */
  startMessageMoveTask(input: { sourceArn: string; destinationArn?: string | undefined }): { taskHandle: string; moved: number } {
    const source = this.#queue(input.sourceArn);
    const isDeadLetterQueue = [...this.#queues.values()].some((q) => q.config.redrivePolicy?.deadLetterTargetArn === source.arn);
    if (!isDeadLetterQueue) {
      throw invalidParameter(
        'SourceArn',
        input.sourceArn,
        'Source queue must be configured as a Dead Letter Queue.',
        'give the ARN of a queue that another queue dead-letters to',
      );
    }
    const named = input.destinationArn === undefined ? undefined : this.#queue(input.destinationArn);
    if (named && named.fifo !== source.fifo) {
      throw invalidParameter('DestinationArn', input.destinationArn, 'The destination queue must be the same type as the source queue.');
    }
    const now = this.clock.now();
    source.expire(now);
    let moved = 0;
    for (const message of [...source.messages.values()]) {
      if (message.receiveCount > 0 && message.visibleAt > now) continue;
      const destination = named ?? [...this.#queues.values()].find((q) => q.arn === message.deadLetterQueueSourceArn);
      if (!destination) continue;
      source.messages.delete(message.messageId);
      source.visibilityChanged.delete(message.messageId);
      const redriven = movedMessage(message, destination, now);
      destination.messages.set(redriven.messageId, redriven);
      destination.notify();
      moved += 1;
    }
    source.notify();
    return { taskHandle: Buffer.from(JSON.stringify({ source: source.arn, at: now })).toString('base64'), moved };
  }

  // ---- deleting and visibility --------------------------------------------------------------

  /**
   * DeleteMessage. Standard queue: the latest receipt handle deletes, even after the visibility timeout;
   * an older one succeeds and deletes nothing. FIFO queue: the handle must still be in flight, else
   * InvalidParameterValue "The receipt handle has expired." (see receipt-handles.ts for the sources).
   * Returns whether a message was deleted.
   * @internal
   */
  deleteMessage(nameOrUrl: string, receiptHandle: string): boolean {
    const queue = this.#queue(nameOrUrl);
    const messageId = decodeReceiptHandle(queue.name, receiptHandle);
    const message = queue.messages.get(messageId);
    if (deleteVerdict(queue.fifo, message, receiptHandle, this.clock.now()) === 'ignore') return false;
    queue.messages.delete(messageId);
    queue.visibilityChanged.delete(messageId);
    queue.notify();
    return true;
  }

  /**
   * DeleteMessageBatch: {@link SqsModel.deleteMessage} per entry, each succeeding or failing on its own;
   * an expired FIFO handle fails its entry with `ReceiptHandleIsInvalid`.
   * @internal
   */
  deleteMessageBatch(nameOrUrl: string, entries: readonly { id: string; receiptHandle: string }[]): BatchResult<Record<never, never>> {
    return this.#eachEntry(nameOrUrl, entries, 'DeleteMessageBatchRequestEntry', (entry) => void this.deleteMessage(nameOrUrl, entry.receiptHandle));
  }

  /**
   * ChangeMessageVisibility: the new timeout counts from now; 0 makes the message visible at once.
   * Standard queue: after the timeout ran out the call succeeds and changes nothing. FIFO queue: the
   * handle must still be in flight. A deleted message cannot be changed.
   * @internal
   */
  changeMessageVisibility(nameOrUrl: string, receiptHandle: string, visibilityTimeout: number): void {
    const queue = this.#queue(nameOrUrl);
    if (!Number.isInteger(visibilityTimeout) || visibilityTimeout < 0 || visibilityTimeout > MAX_VISIBILITY_TIMEOUT) {
      throw invalidParameter('VisibilityTimeout', visibilityTimeout, `must be an integer from 0 to ${MAX_VISIBILITY_TIMEOUT}.`);
    }
    const messageId = decodeReceiptHandle(queue.name, receiptHandle);
    const message = queue.messages.get(messageId);
    const now = this.clock.now();
    if (visibilityVerdict(queue.fifo, message, receiptHandle, now) === 'ignore' || !message) return;
    message.visibleAt = now + visibilityTimeout * 1000;
    queue.visibilityChanged.add(messageId);
    queue.notify();
  }

  /**
   * ChangeMessageVisibilityBatch: {@link SqsModel.changeMessageVisibility} per entry, each succeeding or failing on its own.
   * @internal
   */
  changeMessageVisibilityBatch(
    nameOrUrl: string,
    entries: readonly { id: string; receiptHandle: string; visibilityTimeout: number }[],
  ): BatchResult<Record<never, never>> {
    return this.#eachEntry(nameOrUrl, entries, 'ChangeMessageVisibilityBatchRequestEntry', (entry) =>
      this.changeMessageVisibility(nameOrUrl, entry.receiptHandle, entry.visibilityTimeout),
    );
  }

  /** Runs a batch operation entry by entry: one entry's error fails that entry only, as SQS reports it. */
  #eachEntry<Entry extends { id: string }>(
    nameOrUrl: string,
    entries: readonly Entry[],
    entryType: string,
    apply: (entry: Entry) => void,
  ): BatchResult<Record<never, never>> {
    this.#queue(nameOrUrl);
    checkBatchEntries(
      entries.map((e) => e.id),
      entryType,
    );
    const result: BatchResult<Record<never, never>> = { successful: [], failed: [] };
    for (const entry of entries) {
      try {
        apply(entry);
        result.successful.push({ id: entry.id });
      } catch (error) {
        const failure: BatchEntryFailure =
          error instanceof ReceiptHandleExpired && entryType === 'DeleteMessageBatchRequestEntry' ? error.batchEntry(entry.id) : entryFailure(entry.id, error);
        result.failed.push(failure);
      }
    }
    return result;
  }

  // ---- helpers ------------------------------------------------------------------------------

  #queue(reference: string): Queue {
    const name = resolveQueueName(reference, { accountId: this.accountId, region: this.region, hosts: this.#hosts });
    const queue = name === undefined ? undefined : this.#queues.get(name);
    if (!queue) throw queueDoesNotExist(reference);
    return queue;
  }

  #info(queue: Queue): QueueInfo {
    return { name: queue.name, url: this.queueUrl(queue.name), arn: queue.arn, fifo: queue.fifo };
  }

  /**
   * The redrive checks that need the other queues, with AWS's reasons as local-aws-sqs's
   * test/create-queue.test.ts expects them (Inqnuam/local-aws-sqs).
   */
  #checkRedrive(sourceArn: string, fifo: boolean, config: QueueConfig): void {
    const policy = config.redrivePolicy;
    if (!policy) return;
    const reason = (text: string, advice?: string): SqsError => invalidParameter('RedrivePolicy', config.raw.RedrivePolicy, text, advice);
    const dlq = [...this.#queues.values()].find((q) => q.arn === policy.deadLetterTargetArn);
    if (!dlq) throw reason('Dead letter target does not exist.', 'create the dead-letter queue first');
    if (dlq.fifo !== fifo) {
      throw reason(
        'Dead-letter queue must be same type of queue as the source..',
        `a ${fifo ? 'FIFO' : 'standard'} queue needs a ${fifo ? 'FIFO' : 'standard'} dead-letter queue`,
      );
    }
    const allow = dlq.config.redriveAllowPolicy;
    if (allow?.redrivePermission === 'denyAll' || (allow?.redrivePermission === 'byQueue' && !allow.sourceQueueArns.includes(sourceArn))) {
      throw reason(`Queue ${dlq.name} does not allow this queue as a source.`, 'its RedriveAllowPolicy denies it');
    }
  }
}
