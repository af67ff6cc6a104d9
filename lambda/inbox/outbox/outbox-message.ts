import { createHash } from 'node:crypto';
import { InboxConfigError } from '../errors.js';
import type { InboxTransaction } from '../handler/options.js';
import type { OutboxTransport } from './relay.js';

/**
 * One message `tx.send` hands on after the commit. Its shape is written out in `InboxTransaction.send`, the
 * one signature that shows it, so that no entry exports a name for it.
 */
export type OutboxSend = Parameters<InboxTransaction['send']>[0];

/** An outbox row as the relay sends it, written out in `OutboxTransport.send` for the same reason. */
export type OutboxEnvelope = Parameters<OutboxTransport['send']>[0][number];

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
