/**
 * The producer (package export `sqs-inbox/producer`): sends messages to SQS with a stable idempotency key
 * per logical message, so that the consumer's inbox recognises a resend. Needs `@aws-sdk/client-sqs`.
 *
 * @example
 * import { createProducer } from 'sqs-inbox/producer';
 * @module
 */

import type * as ClientSqs from '@aws-sdk/client-sqs';
import type { MessageAttributeValue, SQSClient, SendMessageBatchRequestEntry } from '@aws-sdk/client-sqs';
import { PeerDependencyError, importPeer } from '../peers.js';
import { FIFO_ID_PATTERN } from '../contract.js';
import { InboxError } from '../errors.js';
import { MAX_SQS_MESSAGE_BYTES, SQS_ATTRIBUTE_NAME, sqsMessageBytes } from './sqs-limits.js';
import { uuidv7 } from './uuidv7.js';

/** The package's root error class, which the producer's errors extend. */
export { InboxError } from '../errors.js';

/**
 * The SQS client package, an optional peer: loaded at the first send rather than imported, so that a
 * missing one is a {@link PeerDependencyError} naming the install command, not Node's ERR_MODULE_NOT_FOUND
 * at import (a static import fails before any code of ours runs).
 */
let clientSqs: Promise<typeof ClientSqs> | undefined;
function loadClientSqs(): Promise<typeof ClientSqs> {
  clientSqs ??= importPeer(
    '@aws-sdk/client-sqs',
    () => import('@aws-sdk/client-sqs'),
    (cause) => new PeerDependencyError('sqs-inbox/producer', '@aws-sdk/client-sqs', 'npm install @aws-sdk/client-sqs', cause),
  );
  return clientSqs;
}

const MAX_BATCH_ENTRIES = 10;
const MAX_ATTRIBUTES = 10;
const RETRYABLE_CODES = new Set([
  'InternalError',
  'InternalFailure',
  'ServiceUnavailable',
  'RequestThrottled',
  'ThrottlingException',
  'KMS.ThrottlingException',
]);

/** One logical message to send. */
export interface OutgoingMessage {
  /** The message body; an object is sent as its JSON. */
  body: string | object;
  /** MessageGroupId: required on FIFO queues; on standard queues it enables fair queuing. */
  groupId?: string | undefined;
  /**
   * The idempotency key: give the same key for the same logical message, whatever process sends it.
   * 1 to 128 characters (alphanumeric and punctuation), since on FIFO it is the MessageDeduplicationId.
   * @default a new UUIDv7, chosen once per call and reused by every retry within it
   */
  key?: string | undefined;
  /** Message attributes; a plain string is a `String` attribute. At most 9 (the key takes the tenth). */
  attributes?: Record<string, string | MessageAttributeValue> | undefined;
  /** Per-message delay in seconds, standard queues only. */
  delaySeconds?: number | undefined;
}

/** A message SQS accepted. */
export interface SentMessage {
  /** Position in the array given to `send`. */
  index: number;
  /** The idempotency key it was sent with: the one given, or the UUIDv7 chosen for it. */
  key: string;
  /** The MessageId SQS assigned. */
  messageId: string;
  /** FIFO only. */
  sequenceNumber?: string | undefined;
}

/** A message that was not sent after every retry; resend it with the same `key`. */
export interface FailedMessage {
  /** Position in the array given to `send`. */
  index: number;
  /** The SendMessageBatch entry Id used for it (`m<index>`). */
  id: string;
  /** The idempotency key it was (or would have been) sent with. */
  key: string;
  /** The SQS error code (`InvalidParameterValue`, `InternalError`, ...) or `GroupBlocked`. */
  code: string;
  /** The error message. */
  message: string;
  /**
   * True when SQS refused the entry as the sender's fault, so resending it unchanged fails again; also
   * true for `GroupBlocked`, which was held back unsent.
   */
  senderFault: boolean;
  /** How many times it was sent. */
  attempts: number;
}

/** Why one message given to `send` is invalid, as {@link InvalidMessagesError} lists it. */
export interface MessageProblem {
  /** Position in the array given to `send`. */
  index: number;
  /** The field at fault: `body`, `key`, `groupId`, `delaySeconds` or `attributes`; `''` when the message is not an object. */
  field: string;
  /** What is wrong and how to fix it. */
  message: string;
}

/** Base class of the producer's errors, under the package's root `InboxError`: callers branch on the subclass. */
export class ProducerError extends InboxError {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** Some messages could not be sent as given; nothing was sent. `problems` names each one and the fix. */
export class InvalidMessagesError extends ProducerError {
  /** Every invalid message, with the field at fault and the fix. */
  readonly problems: readonly MessageProblem[];
  constructor(problems: readonly MessageProblem[]) {
    super(
      `Nothing was sent: ${problems.length} message(s) are invalid: ${problems
        .slice(0, 5)
        .map((p) => `messages[${p.index}].${p.field}: ${p.message}`)
        .join('; ')}${problems.length > 5 ? '; ...' : ''}`,
    );
    this.problems = problems;
  }
}

/**
 * Some messages were still not accepted after every retry. `sent` holds those that were; resend the
 * `failures` with the same keys (safe: the key deduplicates on FIFO and in the consumer's inbox).
 */
export class SendFailedError extends ProducerError {
  /** The messages not sent, in input order. */
  readonly failures: readonly FailedMessage[];
  /** The messages that were sent, in input order. */
  readonly sent: readonly SentMessage[];
  constructor(failures: readonly FailedMessage[], sent: readonly SentMessage[]) {
    super(
      `${failures.length} message(s) were not sent: ${failures
        .slice(0, 5)
        .map((f) => `messages[${f.index}] (key ${f.key}): ${f.code}: ${f.message}`)
        .join('; ')}${failures.length > 5 ? '; ...' : ''}. Resend them with the same keys.`,
    );
    this.failures = failures;
    this.sent = sent;
  }
}

/** Options of {@link createProducer}. */
export interface ProducerOptions {
  /** The SQS client to send with. */
  client: SQSClient;
  /** The queue URL (`https://sqs.<region>.amazonaws.com/<account>/<name>`). */
  queueUrl: string;
  /**
   * Whether the queue is FIFO: the key then also becomes the MessageDeduplicationId, and a failed message
   * holds back the later messages of its group (see `strictGroupOrder`).
   * @default true when queueUrl ends in `.fifo`
   */
  fifo?: boolean | undefined;
  /** The String message attribute that carries the key. @default 'idempotency-key' */
  keyAttribute?: string | undefined;
  /** Sends per entry, including the first, for entries SQS failed on its side. @default 5 */
  maxAttempts?: number | undefined;
  /** First backoff before a retry; doubles each time, with full jitter. @default 50 */
  baseDelayMs?: number | undefined;
  /** Longest backoff before a retry, however many attempts came before. @default 2000 */
  maxDelayMs?: number | undefined;
  /** The queue's MaximumMessageSize, if lowered. @default 1048576 */
  maxMessageBytes?: number | undefined;
  /**
   * FIFO: send at most one message of a group per SendMessageBatch request. SQS may fail one entry of a
   * request and accept the next: two entries of one group in one request then land out of order when the
   * failed one is retried, and nothing can undo that (a resend of the later ones is deduplicated). So a
   * group's next message goes out only once the one before it is in (or is held back with GroupBlocked).
   * The cost: one request per message of a group (a burst of 25 messages of one group takes 25 requests
   * instead of 3); messages of different groups still share requests. `false` packs up to 10 messages of a
   * group per request and gives up the group's order when an entry fails.
   * @default true
   */
  strictGroupOrder?: boolean | undefined;
  /** Time for UUIDv7 keys. @default Date.now */
  now?: (() => number) | undefined;
  /** Waits between retries. @default a timer */
  sleep?: ((ms: number) => Promise<void>) | undefined;
}

/** Sends messages with stable idempotency keys; made by {@link createProducer}. */
export interface Producer {
  /**
   * Sends `messages` in SendMessageBatch requests of at most 10 entries and 1 MiB, in order, retrying
   * entries SQS failed on its side with the same keys. Resolves with every message's key and MessageId,
   * in input order; throws InvalidMessagesError before sending anything invalid, and SendFailedError
   * when some entries still failed.
   */
  send(messages: readonly OutgoingMessage[]): Promise<{ sent: SentMessage[] }>;
}

interface Prepared {
  index: number;
  key: string;
  groupId: string | undefined;
  size: number;
  entry: SendMessageBatchRequestEntry;
}

/**
 * A producer that gives every logical message a stable idempotency key (a UUIDv7 unless you pass one),
 * set as the `idempotency-key` String attribute and, on FIFO queues, as the MessageDeduplicationId.
 *
 * @example
 * const producer = createProducer({ client: new SQSClient({}), queueUrl: process.env.QUEUE_URL! });
 * const { sent } = await producer.send([
 *   { body: { orderId: 'o-1', total: 42 }, groupId: 'customer-7', key: 'order-o-1' },
 *   { body: 'plain text', groupId: 'customer-9' },
 * ]);
 */
export function createProducer(options: ProducerOptions): Producer {
  const fifo = options.fifo ?? options.queueUrl.endsWith('.fifo');
  const keyAttribute = options.keyAttribute ?? 'idempotency-key';
  const maxAttempts = options.maxAttempts ?? 5;
  const baseDelayMs = options.baseDelayMs ?? 50;
  const maxDelayMs = options.maxDelayMs ?? 2000;
  const maxMessageBytes = options.maxMessageBytes ?? MAX_SQS_MESSAGE_BYTES;
  const strictGroupOrder = options.strictGroupOrder ?? true;
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const problems: string[] = [];
  if (!options.client) problems.push('client: pass an SQSClient.');
  if (typeof options.queueUrl !== 'string' || !/^https?:\/\//.test(options.queueUrl)) {
    problems.push(`queueUrl: pass the queue URL (https://sqs.<region>.amazonaws.com/<account>/<name>); got ${JSON.stringify(options.queueUrl)}.`);
  }
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1) problems.push(`maxAttempts: use an integer >= 1; got ${maxAttempts}.`);
  if (!(baseDelayMs >= 0) || !(maxDelayMs >= baseDelayMs)) problems.push('baseDelayMs/maxDelayMs: use 0 <= baseDelayMs <= maxDelayMs.');
  if (!Number.isInteger(maxMessageBytes) || maxMessageBytes < 1024 || maxMessageBytes > MAX_SQS_MESSAGE_BYTES) {
    problems.push(`maxMessageBytes: use the queue's MaximumMessageSize, 1024 to ${MAX_SQS_MESSAGE_BYTES}; got ${maxMessageBytes}.`);
  }
  if (!SQS_ATTRIBUTE_NAME.test(keyAttribute)) {
    problems.push(`keyAttribute: ${JSON.stringify(keyAttribute)} is not a valid message attribute name.`);
  }
  if (problems.length > 0) throw new ProducerError(`createProducer: ${problems.join(' ')}`);

  function prepare(message: OutgoingMessage, index: number, issues: MessageProblem[]): Prepared | undefined {
    const problem = (field: string, text: string): undefined => {
      issues.push({ index, field, message: text });
      return undefined;
    };
    if (typeof message !== 'object' || message === null) return problem('', 'pass an object { body, groupId?, key?, attributes? }.');
    let body: string;
    if (typeof message.body === 'string') body = message.body;
    else if (typeof message.body === 'object' && message.body !== null) body = JSON.stringify(message.body);
    else return problem('body', 'pass a non-empty string or a JSON-serialisable object.');
    if (body.length === 0) return problem('body', 'SQS rejects an empty body; send at least one character.');
    const key = message.key ?? uuidv7(now());
    if (typeof key !== 'string' || !FIFO_ID_PATTERN.test(key)) {
      return problem('key', `use 1 to 128 characters, alphanumeric or punctuation (it becomes the MessageDeduplicationId); got ${JSON.stringify(key)}.`);
    }
    if (fifo && (typeof message.groupId !== 'string' || !FIFO_ID_PATTERN.test(message.groupId))) {
      return problem('groupId', 'a FIFO queue needs a MessageGroupId of 1 to 128 alphanumeric or punctuation characters.');
    }
    if (message.groupId !== undefined && (typeof message.groupId !== 'string' || !FIFO_ID_PATTERN.test(message.groupId))) {
      return problem('groupId', 'use 1 to 128 alphanumeric or punctuation characters.');
    }
    if (message.delaySeconds !== undefined) {
      if (fifo) return problem('delaySeconds', 'FIFO queues take no per-message delay; set the queue attribute DelaySeconds instead.');
      if (!Number.isInteger(message.delaySeconds) || message.delaySeconds < 0 || message.delaySeconds > 900) {
        return problem('delaySeconds', 'use an integer from 0 to 900.');
      }
    }
    const attributes: Record<string, MessageAttributeValue> = {};
    for (const [name, value] of Object.entries(message.attributes ?? {})) {
      if (name === keyAttribute) {
        return problem(`attributes.${name}`, `${keyAttribute} is set by the producer from \`key\`; pass the key as \`key\` instead.`);
      }
      attributes[name] = typeof value === 'string' ? { DataType: 'String', StringValue: value } : value;
    }
    if (Object.keys(attributes).length > MAX_ATTRIBUTES - 1) {
      return problem('attributes', `at most ${MAX_ATTRIBUTES - 1} attributes: SQS allows ${MAX_ATTRIBUTES} and the key takes one.`);
    }
    attributes[keyAttribute] = { DataType: 'String', StringValue: key };
    const size = sqsMessageBytes(body, attributes);
    if (size > maxMessageBytes) {
      return problem(
        'body',
        `the message is ${size} bytes (body plus attributes), over the ${maxMessageBytes}-byte SQS limit; store the payload elsewhere (for example S3) and send a reference.`,
      );
    }
    const entry: SendMessageBatchRequestEntry = {
      Id: `m${index}`,
      MessageBody: body,
      MessageAttributes: attributes,
      ...(message.groupId !== undefined ? { MessageGroupId: message.groupId } : {}),
      ...(fifo ? { MessageDeduplicationId: key } : {}),
      ...(message.delaySeconds !== undefined ? { DelaySeconds: message.delaySeconds } : {}),
    };
    return { index, key, groupId: message.groupId, size, entry };
  }

  async function send(messages: readonly OutgoingMessage[]): Promise<{ sent: SentMessage[] }> {
    if (!Array.isArray(messages)) throw new ProducerError('send: pass an array of messages.');
    const issues: MessageProblem[] = [];
    const prepared = messages.map((m, i) => prepare(m, i, issues));
    if (issues.length > 0) throw new InvalidMessagesError(issues);
    const ready = prepared.filter((p): p is Prepared => p !== undefined);
    const { SendMessageBatchCommand } = await loadClientSqs();

    const sent: SentMessage[] = [];
    const failures: FailedMessage[] = [];
    // FIFO: once a message of a group is lost for good, later ones of that group stay unsent, or the
    // group would be delivered out of order.
    const blockedGroups = new Set<string>();
    for (const chunk of chunks(ready, maxMessageBytes, fifo && strictGroupOrder)) {
      let pending: Prepared[] = [];
      for (const item of chunk) {
        if (fifo && item.groupId !== undefined && blockedGroups.has(item.groupId)) {
          failures.push(
            failure(
              {
                item,
                code: 'GroupBlocked',
                message: `not sent: an earlier message of group ${item.groupId} failed, and sending this one would reorder the group. Resend from the first failed message with the same keys.`,
                senderFault: true,
              },
              0,
            ),
          );
        } else {
          pending.push(item);
        }
      }
      for (let attempt = 1; pending.length > 0; attempt += 1) {
        const retry: Refused[] = [];
        try {
          const output = await options.client.send(new SendMessageBatchCommand({ QueueUrl: options.queueUrl, Entries: pending.map((p) => p.entry) }));
          const byId = new Map(pending.map((p) => [p.entry.Id, p]));
          for (const ok of output.Successful ?? []) {
            const item = byId.get(ok.Id);
            if (!item || !ok.MessageId) continue;
            byId.delete(ok.Id);
            sent.push({ index: item.index, key: item.key, messageId: ok.MessageId, ...(ok.SequenceNumber ? { sequenceNumber: ok.SequenceNumber } : {}) });
          }
          for (const bad of output.Failed ?? []) {
            const item = byId.get(bad.Id);
            if (!item) continue;
            byId.delete(bad.Id);
            retry.push({ item, code: bad.Code ?? 'Unknown', message: bad.Message ?? '', senderFault: bad.SenderFault ?? false });
          }
          for (const item of byId.values()) {
            retry.push({ item, code: 'MissingResult', message: 'SQS reported neither success nor failure for this entry.', senderFault: false });
          }
        } catch (error) {
          const { code, message, senderFault, retryable } = describe(error);
          for (const item of pending) retry.push({ item, code, message, senderFault: senderFault || !retryable });
        }
        pending = [];
        for (const r of retry) {
          const retryable = !r.senderFault || RETRYABLE_CODES.has(r.code);
          if (retryable && attempt < maxAttempts) {
            pending.push(r.item);
          } else {
            failures.push(failure(r, attempt));
            if (fifo && r.item.groupId !== undefined) blockedGroups.add(r.item.groupId);
          }
        }
        if (pending.length > 0) {
          const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** (attempt - 1));
          await sleep(Math.floor(Math.random() * (ceiling + 1)));
        }
      }
    }
    sent.sort((a, b) => a.index - b.index);
    if (failures.length > 0) {
      failures.sort((a, b) => a.index - b.index);
      throw new SendFailedError(failures, sent);
    }
    return { sent };
  }

  return { send };
}

/** An entry SQS refused (or that was held back), and why. */
interface Refused {
  readonly item: Prepared;
  readonly code: string;
  readonly message: string;
  readonly senderFault: boolean;
}

function failure({ item, code, message, senderFault }: Refused, attempts: number): FailedMessage {
  return { index: item.index, id: item.entry.Id ?? '', key: item.key, code, message, senderFault, attempts };
}

/**
 * Greedy, order-keeping split: at most 10 entries and `maxBytes` of message size per request, and with
 * `onePerGroup` at most one entry per message group (see {@link ProducerOptions.strictGroupOrder}).
 */
function* chunks(items: readonly Prepared[], maxBytes: number, onePerGroup: boolean): Generator<Prepared[]> {
  let current: Prepared[] = [];
  let bytes = 0;
  for (const item of items) {
    const sameGroup = onePerGroup && item.groupId !== undefined && current.some((other) => other.groupId === item.groupId);
    if (current.length > 0 && (current.length === MAX_BATCH_ENTRIES || bytes + item.size > maxBytes || sameGroup)) {
      yield current;
      current = [];
      bytes = 0;
    }
    current.push(item);
    bytes += item.size;
  }
  if (current.length > 0) yield current;
}

function describe(error: unknown): { code: string; message: string; senderFault: boolean; retryable: boolean } {
  const e = (error ?? {}) as { name?: string; message?: string; $fault?: string; $retryable?: unknown; $metadata?: { httpStatusCode?: number } };
  const status = e.$metadata?.httpStatusCode;
  const code = e.name ?? 'Error';
  const senderFault = e.$fault === 'client' && !RETRYABLE_CODES.has(code);
  // No HTTP status means the request never got an answer (connection reset, timeout): worth a retry.
  const retryable = !senderFault && (status === undefined || status >= 500 || e.$retryable !== undefined || RETRYABLE_CODES.has(code));
  return { code, message: e.message ?? String(error), senderFault, retryable };
}
