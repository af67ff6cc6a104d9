import { createHash } from 'node:crypto';
import type { SQSMessageAttribute, SQSRecord } from 'aws-lambda';
import { BodyTooLargeError, InboxConfigError, KeyError } from '../errors.js';
import { described, refuseUnknownKeys } from '../handler/option-checks.js';
import { textBytes } from '../sources/text-bytes.js';

/**
 * How a record's idempotency key is chosen.
 *
 * - `'auto'`: the message attribute `idempotency-key` when present (the producer's stable key), else the
 *   SQS messageId. The attribute must be a String one (a Binary one fails with {@link KeyError}).
 * - `'message-id'`: the SQS messageId. A producer that retries a send gets a new messageId, so a retried
 *   send is not caught; prefer a producer key.
 *
 *   Both take a message's messageId from {@link REDRIVEN_MESSAGE_ID_ATTRIBUTE} when it carries one: the id SQS
 *   gave it first, which `sqs-inbox dlq redrive` stamps on what it sends back from a dead-letter queue.
 * - `'deduplication-id'`: the FIFO MessageDeduplicationId.
 * - `{ attribute: 'name' }`: a String message attribute; a record without it, or with a Binary one, fails with
 *   {@link KeyError}.
 * - a function of the record.
 */
export type KeyStrategy = 'auto' | 'message-id' | 'deduplication-id' | { readonly attribute: string } | ((record: SQSRecord) => string);

/** The message attribute `'auto'` looks for and the producer sets. */
export const IDEMPOTENCY_KEY_ATTRIBUTE = 'idempotency-key';

/**
 * The message attribute `sqs-inbox dlq redrive` (`redriveDeadLetters`) writes: the messageId SQS gave the
 * message before it was dead-lettered. A message sent again gets a new messageId, so 'message-id' and 'auto'
 * read the original from here, and a message whose effect committed before it was dead-lettered is then a
 * duplicate. A producer that sets it chooses its own message's key, as with `idempotency-key`: it can make its
 * messages duplicates of each other, and nothing more, since SQS gives every other message an unpredictable
 * id, and a key claimed with another body is a key collision (parked or failed), never a silent duplicate.
 */
export const REDRIVEN_MESSAGE_ID_ATTRIBUTE = 'sqs-inbox-redriven-message-id';

/** Longest key accepted, in UTF-8 bytes. Keys are a primary key column: long ones bloat the index. */
export const MAX_KEY_BYTES = 512;

/** Largest body SQS accepts, in UTF-8 bytes. */
export const MAX_BODY_BYTES = 1024 * 1024;

// Control characters in a key are nearly always a producer bug (a stray newline from a file or header).
const CONTROL = /[\u0000-\u001f\u007f]/;
// In a string taken as code points (the u flag), a surrogate is one without its pair.
const LONE_SURROGATE = /\p{Cs}/u;

/** Validates a key strategy once, at cold start, and returns the function that applies it. */
export function keyStrategy(strategy: KeyStrategy | undefined): (record: SQSRecord) => string {
  const chosen = strategy ?? 'auto';
  if (typeof chosen === 'function') return (record) => checkKey(chosen(record), 'the key function');
  if (typeof chosen === 'object' && !Array.isArray(chosen)) {
    refuseUnknownKeys(chosen, { attribute: true }, 'key');
    const name = chosen.attribute;
    if (typeof name !== 'string' || name.length === 0) {
      throw new InboxConfigError('key.attribute', 'must be a non-empty message attribute name, e.g. { attribute: "order-key" }');
    }
    return (record) => {
      const attribute = record.messageAttributes?.[name];
      if (attribute === undefined) throw new KeyError(`message attribute "${name}" is missing; the producer must set it on every message`);
      return attributeKey(attribute, name);
    };
  }
  switch (chosen) {
    case 'auto':
      return (record) => {
        const attribute = record.messageAttributes?.[IDEMPOTENCY_KEY_ATTRIBUTE];
        return attribute === undefined ? messageIdKey(record) : attributeKey(attribute, IDEMPOTENCY_KEY_ATTRIBUTE);
      };
    case 'message-id':
      return messageIdKey;
    case 'deduplication-id':
      return (record) => {
        const value = record.attributes?.MessageDeduplicationId;
        if (!value) {
          throw new KeyError('the record has no MessageDeduplicationId: key "deduplication-id" needs a FIFO queue');
        }
        return checkKey(value, 'MessageDeduplicationId');
      };
    default:
      throw new InboxConfigError(
        'key',
        `${described(chosen)} is not a key strategy; use 'auto', 'message-id', 'deduplication-id', { attribute: 'name' } or a function`,
      );
  }
}

/** The messageId SQS first gave the record: the redrive's stamp, else its own. */
function messageIdKey(record: SQSRecord): string {
  const stamped = record.messageAttributes?.[REDRIVEN_MESSAGE_ID_ATTRIBUTE];
  return stamped === undefined ? checkKey(record.messageId, 'messageId') : attributeKey(stamped, REDRIVEN_MESSAGE_ID_ATTRIBUTE);
}

/**
 * The key a message attribute holds: a String (or Number) attribute's text. A Binary one is refused rather
 * than read in some text form of ours: the sqs-inbox producer sends its keys as String attributes, and a key
 * sent as bytes by one producer and as text by another would be two keys, applied twice.
 */
function attributeKey(attribute: SQSMessageAttribute, name: string): string {
  if (typeof attribute.stringValue !== 'string') {
    throw new KeyError(
      `message attribute "${name}" holds no text (its dataType is ${attribute.dataType}), and a key is text. Fix: send the key as a String attribute ` +
        "(createProducer from 'sqs-inbox/producer' does), or choose it with key: (record) => ... from what the record holds",
    );
  }
  return checkKey(attribute.stringValue, `message attribute "${name}"`);
}

/**
 * Checks a chosen key: a non-empty string, at most {@link MAX_KEY_BYTES}, printable, and well-formed
 * Unicode. PostgreSQL stores text as UTF-8, in which a lone UTF-16 surrogate becomes U+FFFD: two keys that
 * differ only there would become one claim.
 */
export function checkKey(key: unknown, source: string): string {
  // A record without its id (a hand-built event) gives no key at all: as empty as ''.
  if (key === undefined || key === '') {
    throw new KeyError(`${source} gave an empty key; every message needs a non-empty idempotency key`);
  }
  if (typeof key !== 'string') {
    // An async key function's promise is the likeliest object here: say so.
    const what = key instanceof Promise ? 'a Promise (a key function runs synchronously: return the key itself)' : described(key);
    throw new KeyError(`${source} gave ${what}, not a string. Fix: give every message a non-empty string key, e.g. String(value)`);
  }
  if (Buffer.byteLength(key, 'utf8') > MAX_KEY_BYTES) {
    throw new KeyError(
      `${source} gave a key of ${Buffer.byteLength(key, 'utf8')} bytes; the limit is ${MAX_KEY_BYTES}. Use a shorter key, e.g. a UUID or a hash`,
    );
  }
  if (CONTROL.test(key)) {
    throw new KeyError(`${source} gave a key holding a control character; keys must be printable text`);
  }
  const lone = LONE_SURROGATE.exec(key);
  if (lone !== null) {
    throw new KeyError(
      `${source} gave a key holding a lone UTF-16 surrogate (at index ${lone.index}), which PostgreSQL would store as U+FFFD: two different keys ` +
        'would become one claim. Fix: cut keys at whole characters (Array.from(text).slice(0, n).join(""), not text.slice(0, n)), or hash them',
    );
  }
  return key;
}

/** Refuses a body larger than SQS could have delivered. */
export function checkBodySize(body: string): void {
  const bytes = Buffer.byteLength(body, 'utf8');
  if (bytes > MAX_BODY_BYTES) {
    throw new BodyTooLargeError(`the body is ${bytes} bytes; SQS bodies are at most ${MAX_BODY_BYTES} bytes`);
  }
}

/**
 * SHA-256 of a record's payload as sent, stored with the claim to tell a redelivery from a key collision:
 * its bytes (a Kinesis record's data, a Kafka value), or a body's text as UTF-8 (a lone surrogate in its
 * three-byte form, sources/text-bytes.ts, so that no two bodies hash alike).
 *
 * @example
 * payloadHash('{"orderId":"order-417"}'); // the hash the claim of that SQS body stores
 */
export function payloadHash(payload: string | Uint8Array): Uint8Array {
  return createHash('sha256')
    .update(typeof payload === 'string' ? textBytes(payload) : payload)
    .digest();
}

/**
 * The key a replayed key collision is applied under: its own key plus its body's hash, so that another
 * parked copy of the same message finds it claimed and applies nothing, and its outbox sends get keys of
 * their own (the colliding message's keys belong to the first message's sends).
 */
export function collisionKey(key: string, sha256: Uint8Array): string {
  return `${key}@sha256:${hex(sha256)}`;
}

/** Hex form of a hash, for logs and errors. */
export function hex(hash: Uint8Array): string {
  return Buffer.from(hash).toString('hex');
}
