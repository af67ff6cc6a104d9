import { createHash } from 'node:crypto';
import { InboxConfigError } from '../errors.js';

/** One message `tx.send` hands on after the commit. */
export interface OutboxSend {
  /**
   * Where to: a queue URL (`https://sqs.<region>.amazonaws.com/<account>/<name>`), or the name of one of
   * the outbox's `destinations`.
   */
  readonly to: string;
  /** The body; an object is sent as its JSON. */
  readonly body: string | object;
  /** The MessageGroupId: required by a FIFO destination. */
  readonly groupId?: string | undefined;
  /** String message attributes (at most 9: the idempotency key takes the tenth). */
  readonly attributes?: Readonly<Record<string, string>> | undefined;
  /** Per-message delay, standard queues only. */
  readonly delaySeconds?: number | undefined;
}

/** An outbox row as the relay sends it. */
export interface OutboxEnvelope {
  /** The row's id. */
  readonly id: number;
  /** The stable idempotency key: the FIFO MessageDeduplicationId and the `idempotency-key` attribute. */
  readonly key: string;
  /** A queue URL. */
  readonly destination: string;
  readonly body: string;
  readonly groupId: string | undefined;
  readonly attributes: Readonly<Record<string, string>>;
  readonly delaySeconds: number | undefined;
}

/**
 * The idempotency key of the `position`-th send of the message with inbox key `messageKey`: a UUID (RFC
 * 9562 version 8) from SHA-256 of the three, so a re-run after a rollback sends under the same key, and
 * the key fits SQS's 128-character MessageDeduplicationId whatever the inbox key's length.
 */
export function outboxKey(consumer: string, messageKey: string, position: number): string {
  const hash = createHash('sha256').update(`${consumer}\u0000${messageKey}\u0000${position}`, 'utf8').digest();
  hash[6] = (hash[6]! & 0x0f) | 0x80;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Where `to` sends: a URL as it is, a name through the destinations map; anything else is refused with the fix. */
export function destinationUrl(to: unknown, destinations: Readonly<Record<string, string>>): string {
  if (typeof to !== 'string' || to.length === 0) {
    throw new InboxConfigError('tx.send.to', `must be a queue URL or a destination name; got ${JSON.stringify(to)}`);
  }
  if (/^https?:\/\//.test(to)) return to;
  const url = Object.hasOwn(destinations, to) ? destinations[to] : undefined;
  if (url === undefined) {
    const known = Object.keys(destinations);
    throw new InboxConfigError(
      'tx.send.to',
      `"${to}" is not a queue URL nor one of the outbox destinations (${known.length > 0 ? known.join(', ') : 'none are set'}); ` +
        "pass outbox.destinations, or the InboxConsumer construct's `destinations`",
    );
  }
  return url;
}
