import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { SystemClock, sleepOn } from './clock.js';
import type { Clock } from './clock.js';
import { SqsError, invalidParameter, missingParameter } from './errors.js';
import { md5Hex, md5OfMessageAttributes } from './md5.js';
import { messageSize, validateBody, validateMessageAttributes, validateSystemAttributes } from './message.js';
import type { StoredMessage } from './message.js';
import { Queue, isInFlight } from './queue.js';
import { MAX_MESSAGE_SIZE, isKnownAttributeName, parseQueueAttributes } from './queue-attributes.js';
import type {
  BatchEntryFailure,
  BatchResult,
  MessageAttributeValue,
  QueueCounts,
  ReceiveMessagesInput,
  ReceivedMessage,
  SendBatchEntry,
  SendMessageInput,
  SendMessageResult,
} from './types.js';

/** Options of {@link SqsModel}. */
export interface SqsModelOptions {
  /**
   * The clock every timer of the model runs on: visibility timeouts, delays, retention, deduplication.
   * A {@link ManualClock} lets a test jump ahead.
   * @default a new SystemClock
   */
  clock?: Clock | undefined;
  /** The region in queue URLs and ARNs. @default 'us-east-1' */
  region?: string | undefined;
  /** The account id in queue URLs and ARNs. @default '000000000000' */
  accountId?: string | undefined;
  /**
   * Base of queue URLs (`<endpoint>/<accountId>/<name>`). `startSqs` sets it to its own address.
   * @default `https://sqs.<region>.amazonaws.com`
   */
  endpoint?: string | undefined;
}

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

const QUEUE_NAME = /^[A-Za-z0-9_-]{1,80}$/;
const FIFO_QUEUE_NAME = /^[A-Za-z0-9_-]{1,75}\.fifo$/;
const FIFO_ID = /^[A-Za-z0-9!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]{1,128}$/;
const BATCH_ENTRY_ID = /^[A-Za-z0-9_-]{1,80}$/;
const DEDUP_WINDOW_MS = 5 * 60_000;
const PURGE_INTERVAL_MS = 60_000;
const MAX_VISIBILITY_TIMEOUT = 43_200;
const SYSTEM_ATTRIBUTES = [
  'ApproximateReceiveCount',
  'ApproximateFirstReceiveTimestamp',
  'SentTimestamp',
  'SenderId',
  'MessageDeduplicationId',
  'MessageGroupId',
  'SequenceNumber',
  'AWSTraceHeader',
  'DeadLetterQueueSourceArn',
] as const;

/**
 * In-process SQS: standard and FIFO queues with visibility timeouts, receipt handles, receive counts,
 * redrive, retention, delays, FIFO group locks and five-minute deduplication, on an injected clock.
 *
 * @example
 * const clock = new ManualClock();
 * const sqs = new SqsModel({ clock });
 * sqs.createQueue('orders.fifo', { FifoQueue: 'true', VisibilityTimeout: '30' });
 * await sqs.sendMessage({ queue: 'orders.fifo', body: 'a', messageGroupId: 'g', messageDeduplicationId: 'k1' });
 * const [message] = await sqs.receiveMessages({ queue: 'orders.fifo' });
 */
export class SqsModel {
  /** The clock the model's timers run on. */
  readonly clock: Clock;
  /** The region in queue URLs and ARNs. */
  readonly region: string;
  /** The account id in queue URLs and ARNs. */
  readonly accountId: string;
  #endpoint: string;
  readonly #queues = new Map<string, Queue>();

  constructor(options: SqsModelOptions = {}) {
    this.clock = options.clock ?? new SystemClock();
    this.region = options.region ?? 'us-east-1';
    this.accountId = options.accountId ?? '000000000000';
    this.#endpoint = stripSlash(options.endpoint ?? `https://sqs.${this.region}.amazonaws.com`);
  }

  /** The base of queue URLs. */
  get endpoint(): string {
    return this.#endpoint;
  }

  /** Points queue URLs at `endpoint` (the HTTP front calls this with its own address). */
  setEndpoint(endpoint: string): void {
    this.#endpoint = stripSlash(endpoint);
  }

  /** The URL of the queue named `name` (whether or not it exists). */
  queueUrl(name: string): string {
    return `${this.#endpoint}/${this.accountId}/${name}`;
  }

  // ---- queues -------------------------------------------------------------------------------

  /**
   * CreateQueue. The same name with the same attributes returns the existing queue; with different
   * attributes it throws QueueNameExists.
   */
  createQueue(name: string, attributes: Readonly<Record<string, string>> = {}): QueueInfo {
    if (typeof name !== 'string' || name === '') throw missingParameter('QueueName');
    const fifo = attributes.FifoQueue === 'true';
    if (attributes.FifoQueue !== undefined && attributes.FifoQueue !== 'true' && attributes.FifoQueue !== 'false') {
      throw new SqsError('InvalidAttributeValue', `Invalid value for the parameter FifoQueue: ${JSON.stringify(attributes.FifoQueue)}. Use "true" or "false".`);
    }
    if (fifo ? !FIFO_QUEUE_NAME.test(name) : !QUEUE_NAME.test(name)) {
      throw new SqsError(
        'InvalidParameterValue',
        fifo || name.endsWith('.fifo')
          ? `Invalid queue name ${JSON.stringify(name)}: a FIFO queue needs FifoQueue=true and a name of 1 to 80 characters (alphanumeric, hyphen, underscore) ending in .fifo.`
          : `Invalid queue name ${JSON.stringify(name)}: use 1 to 80 alphanumeric characters, hyphens or underscores.`,
      );
    }
    const now = this.clock.now();
    const existing = this.#queues.get(name);
    if (existing) {
      for (const [key, value] of Object.entries(attributes)) {
        if (existing.config.raw[key] !== value) {
          throw new SqsError('QueueNameExists', `A queue already exists with the same name and a different value for attribute ${key}.`);
        }
      }
      return this.#info(existing);
    }
    const config = parseQueueAttributes(attributes, { creating: true, fifo });
    const arn = `arn:aws:sqs:${this.region}:${this.accountId}:${name}`;
    this.#checkRedrive(arn, fifo, config.redrivePolicy);
    const queue = new Queue({ name, arn, config, now });
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

  /** SetQueueAttributes: validates and applies `attributes` (strings, as SQS takes them) over the current ones. */
  setQueueAttributes(nameOrUrl: string, attributes: Readonly<Record<string, string>>): void {
    const queue = this.#queue(nameOrUrl);
    const config = parseQueueAttributes(attributes, { creating: false, fifo: queue.fifo, base: queue.config.raw });
    this.#checkRedrive(queue.arn, queue.fifo, config.redrivePolicy);
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
      if (name !== 'All' && !isKnownAttributeName(name)) {
        throw new SqsError('InvalidAttributeName', `Unknown Attribute ${name}.`);
      }
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
  counts(nameOrUrl: string): QueueCounts {
    const queue = this.#queue(nameOrUrl);
    const now = this.clock.now();
    queue.expire(now);
    return queue.counts(now);
  }

  /** Every stored message of a queue (a copy), for tests and the demo's final accounting. */
  peekMessages(nameOrUrl: string): StoredMessage[] {
    const queue = this.#queue(nameOrUrl);
    queue.expire(this.clock.now());
    return [...queue.messages.values()].map((m) => ({ ...m }));
  }

  /** Waits until `nameOrUrl` may have changed (a send, delete, visibility change), or `ms` of clock time. */
  async waitForChange(nameOrUrl: string, ms: number, signal?: AbortSignal): Promise<void> {
    const queue = this.#queue(nameOrUrl);
    const now = this.clock.now();
    await this.#waitForChange(queue, now + ms, signal);
  }

  /** PurgeQueue: deletes every message; a second purge within 60 seconds throws PurgeQueueInProgress, as on AWS. */
  purgeQueue(nameOrUrl: string): void {
    const queue = this.#queue(nameOrUrl);
    const now = this.clock.now();
    if (queue.lastPurgeAt !== undefined && now - queue.lastPurgeAt < PURGE_INTERVAL_MS) {
      throw new SqsError(
        'PurgeQueueInProgress',
        `Only one PurgeQueue operation on ${queue.name} is allowed every 60 seconds; retry after ${new Date(queue.lastPurgeAt + PURGE_INTERVAL_MS).toISOString()}.`,
      );
    }
    queue.lastPurgeAt = now;
    queue.messages.clear();
    queue.receiveAttempts.clear();
    queue.notify();
  }

  // ---- sending ------------------------------------------------------------------------------

  /** SendMessage, with SQS's validation, FIFO deduplication and MD5s. */
  async sendMessage(input: SendMessageInput): Promise<SendMessageResult> {
    return this.#send(this.#queue(input.queue), input);
  }

  /**
   * SendMessageBatch: up to 10 entries and 1 MiB in all (else the whole request throws); each entry
   * succeeds or fails on its own.
   */
  async sendMessageBatch(nameOrUrl: string, entries: readonly SendBatchEntry[]): Promise<BatchResult<SendMessageResult>> {
    const queue = this.#queue(nameOrUrl);
    checkBatchEntries(entries.map((e) => e.id));
    let total = 0;
    for (const entry of entries) {
      total += messageSize(typeof entry.body === 'string' ? entry.body : '', entry.messageAttributes);
    }
    if (total > MAX_MESSAGE_SIZE) {
      throw new SqsError(
        'BatchRequestTooLong',
        `Batch requests cannot be longer than ${MAX_MESSAGE_SIZE} bytes; this one is ${total}. Split it into smaller batches.`,
      );
    }
    const result: BatchResult<SendMessageResult> = { successful: [], failed: [] };
    for (const entry of entries) {
      try {
        result.successful.push({ id: entry.id, ...this.#send(queue, entry) });
      } catch (error) {
        result.failed.push(entryFailure(entry.id, error));
      }
    }
    return result;
  }

  #send(queue: Queue, input: Omit<SendMessageInput, 'queue'>): SendMessageResult {
    const body = validateBody(input.body);
    const now = this.clock.now();
    queue.expire(now);
    if (input.delaySeconds !== undefined) {
      if (!Number.isInteger(input.delaySeconds) || input.delaySeconds < 0 || input.delaySeconds > 900) {
        throw invalidParameter('DelaySeconds', input.delaySeconds, 'must be an integer from 0 to 900.');
      }
      if (queue.fifo && input.delaySeconds !== 0) {
        throw invalidParameter(
          'DelaySeconds',
          input.delaySeconds,
          'The request include parameter that is not valid for this queue type. FIFO queues take a delay only from the queue attribute DelaySeconds.',
        );
      }
    }
    const messageAttributes = validateMessageAttributes(input.messageAttributes);
    const messageSystemAttributes = validateSystemAttributes(input.messageSystemAttributes);
    const size = messageSize(body, messageAttributes);
    if (size > queue.config.maximumMessageSize) {
      throw new SqsError(
        'InvalidParameterValue',
        `One or more parameters are invalid. Reason: Message must be shorter than ${queue.config.maximumMessageSize} bytes (this one is ${size}, body plus message attributes).`,
      );
    }
    const md5OfMessageBody = md5Hex(body);
    const md5s = {
      md5OfMessageBody,
      ...optional('md5OfMessageAttributes', md5OfMessageAttributes(messageAttributes)),
      ...optional('md5OfMessageSystemAttributes', md5OfMessageAttributes(messageSystemAttributes)),
    };

    const groupId = input.messageGroupId;
    let dedupId = input.messageDeduplicationId;
    if (groupId !== undefined && !FIFO_ID.test(groupId)) {
      throw invalidParameter('MessageGroupId', groupId, 'use 1 to 128 characters: alphanumeric or punctuation !"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~.');
    }
    if (queue.fifo) {
      if (groupId === undefined) throw missingParameter('MessageGroupId');
      if (dedupId === undefined) {
        if (!queue.config.contentBasedDeduplication) {
          throw new SqsError(
            'InvalidParameterValue',
            'The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly',
          );
        }
        dedupId = createHash('sha256').update(body, 'utf8').digest('hex');
      } else if (!FIFO_ID.test(dedupId)) {
        throw invalidParameter('MessageDeduplicationId', dedupId, 'use 1 to 128 characters: alphanumeric or punctuation.');
      }
      const key = queue.config.deduplicationScope === 'messageGroup' ? `${groupId}\u0000${dedupId}` : dedupId;
      const seen = queue.dedup.get(key);
      if (seen) {
        // AWS accepts a duplicate and answers with the first message's id, but does not deliver it.
        return { messageId: seen.messageId, ...optional('sequenceNumber', seen.sequenceNumber), ...md5s, deduplicated: true };
      }
      const messageId = randomUUID();
      const sequenceNumber = queue.nextSequenceNumber();
      queue.dedup.set(key, { messageId, sequenceNumber, expiresAt: now + DEDUP_WINDOW_MS });
      this.#enqueue(queue, {
        messageId, body, md5OfBody: md5OfMessageBody, messageAttributes, messageSystemAttributes,
        senderId: this.accountId, sentTimestamp: now, enqueuedAt: now,
        visibleAt: now + queue.config.delaySeconds * 1000, receiveCount: 0,
        messageGroupId: groupId, messageDeduplicationId: dedupId, sequenceNumber,
      });
      return { messageId, sequenceNumber, ...md5s, deduplicated: false };
    }
    if (dedupId !== undefined) {
      throw invalidParameter('MessageDeduplicationId', dedupId, 'The request include parameter that is not valid for this queue type.');
    }
    const messageId = randomUUID();
    const delay = input.delaySeconds ?? queue.config.delaySeconds;
    this.#enqueue(queue, {
      messageId, body, md5OfBody: md5OfMessageBody, messageAttributes, messageSystemAttributes,
      senderId: this.accountId, sentTimestamp: now, enqueuedAt: now, visibleAt: now + delay * 1000, receiveCount: 0,
      ...optional('messageGroupId', groupId),
    });
    return { messageId, ...md5s, deduplicated: false };
  }

  #enqueue(queue: Queue, message: StoredMessage): void {
    queue.messages.set(message.messageId, message);
    queue.notify();
  }

  // ---- receiving ----------------------------------------------------------------------------

  /**
   * ReceiveMessage. Long polls for up to `waitTimeSeconds` of clock time, waking as soon as a message
   * can be returned. FIFO: skips groups with a message in flight; takes as many consecutive messages of
   * one group as it can before moving to the next group.
   */
  async receiveMessages(input: ReceiveMessagesInput): Promise<ReceivedMessage[]> {
    const queue = this.#queue(input.queue);
    const max = input.maxNumberOfMessages ?? 1;
    if (!Number.isInteger(max) || max < 1 || max > 10) {
      throw invalidParameter('MaxNumberOfMessages', max, 'must be an integer from 1 to 10.');
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
    if (attemptId !== undefined && !FIFO_ID.test(attemptId)) {
      throw invalidParameter('ReceiveRequestAttemptId', attemptId, 'use 1 to 128 alphanumeric or punctuation characters.');
    }
    const deadline = this.clock.now() + wait * 1000;
    for (;;) {
      const now = this.clock.now();
      queue.expire(now);
      const taken = this.#take(queue, now, max, visibility, queue.fifo ? attemptId : undefined);
      if (taken.length > 0 || now >= deadline || input.signal?.aborted || queue.deleted) {
        return taken.map((m) => snapshot(m, input.attributeNames ?? [], input.messageAttributeNames ?? []));
      }
      await this.#waitForChange(queue, deadline, input.signal);
    }
  }

  #take(queue: Queue, now: number, max: number, visibility: number, attemptId: string | undefined): StoredMessage[] {
    if (attemptId !== undefined) {
      const previous = queue.receiveAttempts.get(attemptId);
      if (previous) {
        const messages = previous.messages.map((p) => queue.messages.get(p.messageId));
        const unchanged = messages.every(
          (m, i) => m && m.receiptHandle === previous.messages[i]?.receiptHandle && !queue.visibilityChanged.has(m.messageId),
        );
        if (unchanged) {
          // Same messages, same receipt handles; the retry resets their visibility timeout.
          for (const m of messages) if (m) m.visibleAt = now + visibility * 1000;
          return messages.filter((m): m is StoredMessage => m !== undefined);
        }
        queue.receiveAttempts.delete(attemptId);
      }
    }
    const picked = queue.fifo ? this.#pickFifo(queue, now, max) : this.#pickStandard(queue, now, max);
    for (const message of picked) {
      message.receiveCount += 1;
      message.firstReceiveTimestamp ??= now;
      message.visibleAt = now + visibility * 1000;
      message.receiptHandle = encodeReceiptHandle(queue.name, message.messageId);
      queue.visibilityChanged.delete(message.messageId);
    }
    if (attemptId !== undefined && picked.length > 0) {
      queue.receiveAttempts.set(attemptId, {
        expiresAt: now + DEDUP_WINDOW_MS,
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

  #pickFifo(queue: Queue, now: number, max: number): StoredMessage[] {
    // Groups in the order of their oldest message; a group with anything in flight is locked.
    const groups = new Map<string, StoredMessage[]>();
    const locked = new Set<string>();
    for (const message of queue.messages.values()) {
      const group = message.messageGroupId ?? '';
      if (isInFlight(message, now)) locked.add(group);
      let list = groups.get(group);
      if (!list) groups.set(group, (list = []));
      list.push(message);
    }
    const picked: StoredMessage[] = [];
    for (const [group, messages] of groups) {
      if (picked.length >= max) break;
      if (locked.has(group)) continue;
      for (const message of messages) {
        if (picked.length >= max) break;
        // A delayed message blocks the rest of its group: order within a group is never skipped.
        if (message.visibleAt > now) break;
        if (this.#redriveIfExhausted(queue, message, now)) continue;
        picked.push(message);
      }
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
      ...(dlq.fifo ? { sequenceNumber: dlq.nextSequenceNumber() } : {}),
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

  // ---- deleting and visibility --------------------------------------------------------------

  /**
   * DeleteMessage. Only the latest receipt handle deletes; an older one (the message was received again
   * since) succeeds and does nothing, as AWS allows. Returns whether a message was deleted.
   */
  deleteMessage(nameOrUrl: string, receiptHandle: string): boolean {
    const queue = this.#queue(nameOrUrl);
    const messageId = decodeReceiptHandle(queue.name, receiptHandle);
    const message = queue.messages.get(messageId);
    if (!message || message.receiptHandle !== receiptHandle) return false;
    queue.messages.delete(messageId);
    queue.visibilityChanged.delete(messageId);
    queue.notify();
    return true;
  }

  /** DeleteMessageBatch: {@link SqsModel.deleteMessage} per entry, each succeeding or failing on its own. */
  deleteMessageBatch(
    nameOrUrl: string,
    entries: readonly { id: string; receiptHandle: string }[],
  ): BatchResult<Record<never, never>> {
    return this.#eachEntry(nameOrUrl, entries, (entry) => void this.deleteMessage(nameOrUrl, entry.receiptHandle));
  }

  /** ChangeMessageVisibility: the new timeout counts from now; 0 makes the message visible at once. */
  changeMessageVisibility(nameOrUrl: string, receiptHandle: string, visibilityTimeout: number): void {
    const queue = this.#queue(nameOrUrl);
    if (!Number.isInteger(visibilityTimeout) || visibilityTimeout < 0 || visibilityTimeout > MAX_VISIBILITY_TIMEOUT) {
      throw invalidParameter('VisibilityTimeout', visibilityTimeout, `must be an integer from 0 to ${MAX_VISIBILITY_TIMEOUT}.`);
    }
    const messageId = decodeReceiptHandle(queue.name, receiptHandle);
    const message = queue.messages.get(messageId);
    const now = this.clock.now();
    if (!message || message.receiptHandle !== receiptHandle) {
      throw invalidParameter('ReceiptHandle', receiptHandle, 'The receipt handle has expired.');
    }
    if (!isInFlight(message, now)) {
      throw new SqsError('MessageNotInflight', `Message ${messageId} is not in flight: its visibility timeout already expired.`);
    }
    message.visibleAt = now + visibilityTimeout * 1000;
    queue.visibilityChanged.add(messageId);
    queue.notify();
  }

  /** ChangeMessageVisibilityBatch: {@link SqsModel.changeMessageVisibility} per entry, each succeeding or failing on its own. */
  changeMessageVisibilityBatch(
    nameOrUrl: string,
    entries: readonly { id: string; receiptHandle: string; visibilityTimeout: number }[],
  ): BatchResult<Record<never, never>> {
    return this.#eachEntry(nameOrUrl, entries, (entry) => this.changeMessageVisibility(nameOrUrl, entry.receiptHandle, entry.visibilityTimeout));
  }

  /** Runs a batch operation entry by entry: one entry's error fails that entry only, as SQS reports it. */
  #eachEntry<Entry extends { id: string }>(nameOrUrl: string, entries: readonly Entry[], apply: (entry: Entry) => void): BatchResult<Record<never, never>> {
    this.#queue(nameOrUrl);
    checkBatchEntries(entries.map((e) => e.id));
    const result: BatchResult<Record<never, never>> = { successful: [], failed: [] };
    for (const entry of entries) {
      try {
        apply(entry);
        result.successful.push({ id: entry.id });
      } catch (error) {
        result.failed.push(entryFailure(entry.id, error));
      }
    }
    return result;
  }

  // ---- helpers ------------------------------------------------------------------------------

  #queue(nameOrUrl: string): Queue {
    const name = queueNameOf(nameOrUrl);
    const queue = name === undefined ? undefined : this.#queues.get(name);
    if (!queue) {
      throw new SqsError('QueueDoesNotExist', `The specified queue does not exist: ${JSON.stringify(nameOrUrl)}. Create it first, or check the name or URL.`);
    }
    return queue;
  }

  #info(queue: Queue): QueueInfo {
    return { name: queue.name, url: this.queueUrl(queue.name), arn: queue.arn, fifo: queue.fifo };
  }

  #checkRedrive(sourceArn: string, fifo: boolean, policy: { deadLetterTargetArn: string } | undefined): void {
    if (!policy) return;
    const reason = (text: string): SqsError =>
      invalidParameter('RedrivePolicy', JSON.stringify(policy), text);
    const dlq = [...this.#queues.values()].find((q) => q.arn === policy.deadLetterTargetArn);
    if (!dlq) throw reason('Dead letter target does not exist. Create the dead-letter queue first.');
    if (dlq.fifo !== fifo) {
      throw reason(`Dead-letter queue must be same type of queue as the source: a ${fifo ? 'FIFO' : 'standard'} queue needs a ${fifo ? 'FIFO' : 'standard'} dead-letter queue.`);
    }
    const allow = dlq.config.redriveAllowPolicy;
    if (allow?.redrivePermission === 'denyAll' || (allow?.redrivePermission === 'byQueue' && !allow.sourceQueueArns.includes(sourceArn))) {
      throw reason(`Queue ${dlq.name} does not allow this queue as a source: its RedriveAllowPolicy denies it.`);
    }
  }
}

/** Request-level checks shared by every batch operation. */
export function checkBatchEntries(ids: readonly string[]): void {
  if (ids.length === 0) throw new SqsError('EmptyBatchRequest', 'There should be at least one entry in the request.');
  if (ids.length > 10) {
    throw new SqsError('TooManyEntriesInBatchRequest', `Maximum number of entries per request are 10. You have sent ${ids.length}.`);
  }
  const seen = new Set<string>();
  for (const id of ids) {
    if (typeof id !== 'string' || !BATCH_ENTRY_ID.test(id)) {
      throw new SqsError(
        'InvalidBatchEntryId',
        `A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long: ${JSON.stringify(id)}.`,
      );
    }
    if (seen.has(id)) throw new SqsError('BatchEntryIdsNotDistinct', `Id ${id} repeated: batch entry ids must be distinct within a request.`);
    seen.add(id);
  }
}

function entryFailure(id: string, error: unknown): BatchEntryFailure {
  if (error instanceof SqsError) return { id, code: error.queryCode, message: error.message, senderFault: error.senderFault };
  return { id, code: 'InternalError', message: String(error), senderFault: false };
}

function snapshot(message: StoredMessage, attributeNames: readonly string[], messageAttributeNames: readonly string[]): ReceivedMessage {
  const all = attributeNames.includes('All');
  const attributes: Record<string, string> = {};
  const values: Record<(typeof SYSTEM_ATTRIBUTES)[number], string | undefined> = {
    ApproximateReceiveCount: String(message.receiveCount),
    ApproximateFirstReceiveTimestamp: String(message.firstReceiveTimestamp ?? ''),
    SentTimestamp: String(message.sentTimestamp),
    SenderId: message.senderId,
    MessageDeduplicationId: message.messageDeduplicationId,
    MessageGroupId: message.messageGroupId,
    SequenceNumber: message.sequenceNumber,
    AWSTraceHeader: message.messageSystemAttributes.AWSTraceHeader?.stringValue,
    DeadLetterQueueSourceArn: message.deadLetterQueueSourceArn,
  };
  for (const name of SYSTEM_ATTRIBUTES) {
    const value = values[name];
    if (value !== undefined && (all || attributeNames.includes(name))) attributes[name] = value;
  }
  const messageAttributes: Record<string, MessageAttributeValue> = {};
  for (const [name, value] of Object.entries(message.messageAttributes)) {
    if (wantsAttribute(name, messageAttributeNames)) messageAttributes[name] = { ...value };
  }
  const md5 = md5OfMessageAttributes(messageAttributes);
  return {
    messageId: message.messageId,
    receiptHandle: message.receiptHandle ?? '',
    body: message.body,
    md5OfBody: message.md5OfBody,
    attributes,
    messageAttributes,
    ...optional('md5OfMessageAttributes', md5),
  };
}

function wantsAttribute(name: string, patterns: readonly string[]): boolean {
  return patterns.some((p) => p === 'All' || p === '.*' || p === name || (p.endsWith('.*') && name.startsWith(p.slice(0, -1))));
}

function encodeReceiptHandle(queueName: string, messageId: string): string {
  return Buffer.from(`${queueName}\n${messageId}\n${randomBytes(24).toString('base64')}`, 'utf8').toString('base64');
}

function decodeReceiptHandle(queueName: string, receiptHandle: string): string {
  const invalid = new SqsError('ReceiptHandleIsInvalid', `The input receipt handle "${String(receiptHandle).slice(0, 100)}" is not a valid receipt handle.`);
  if (typeof receiptHandle !== 'string' || !/^[A-Za-z0-9+/]+=*$/.test(receiptHandle)) throw invalid;
  const parts = Buffer.from(receiptHandle, 'base64').toString('utf8').split('\n');
  if (parts.length !== 3 || parts[0] !== queueName || !parts[1]) throw invalid;
  return parts[1];
}

/**
 * The queue name in a queue name, URL or ARN, as SQS resolves its `QueueUrl` parameter; undefined for an
 * empty or non-string value.
 *
 * @example
 * queueNameOf('http://127.0.0.1:4566/000000000000/orders.fifo'); // 'orders.fifo'
 */
export function queueNameOf(nameOrUrl: string): string | undefined {
  if (typeof nameOrUrl !== 'string' || nameOrUrl === '') return undefined;
  if (nameOrUrl.startsWith('arn:')) return nameOrUrl.split(':').at(-1);
  if (nameOrUrl.includes('/')) {
    const path = nameOrUrl.replace(/[?#].*$/, '').replace(/\/+$/, '');
    return path.split('/').at(-1);
  }
  return nameOrUrl;
}

function stripSlash(url: string): string {
  return url.replace(/\/+$/, '');
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}
