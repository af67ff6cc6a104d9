import { consumerPartsOf } from '../handler/consumer-parts.js';
import { replayEffect } from './replay.js';
import { consumerParkedMessages } from './store.js';
import type { ParkedMessages } from './store.js';

/**
 * List and replay the parked messages of a consumer: `handler` is what `inbox()`, `kinesisInbox()`,
 * `dynamoDbInbox()` or `kafkaInbox()` returned. Asking settles the
 * consumer's INBOX_* environment, as its first invocation does. A replay runs the consumer's own effect,
 * in its mode.
 *
 * @example
 * const parked = parkedMessages(handler);
 * for (const message of await parked.list()) console.log(message.id, message.errorClass);
 * await parked.replay(7); // 'replayed'
 */
export function parkedMessages(handler: object): ParkedMessages {
  const parts = consumerPartsOf(handler);
  if (parts === undefined) {
    throw new TypeError(
      'parkedMessages(handler): pass the handler that inbox() (or kinesisInbox(), dynamoDbInbox(), kafkaInbox()) returned, ' +
        'imported from sqs-inbox the way parkedMessages is (both with import, or both with require)',
    );
  }
  const consumer = () => {
    const given = parts();
    return consumerParkedMessages({
      transport: given.resolved.transport,
      tables: given.tables,
      consumer: given.resolved.consumer,
      callTimeoutMs: given.resolved.callTimeoutMs,
      replayEffect: (tx, message) => replayEffect(given, tx, message),
      relay: (session, ids) => given.relay(session, ids),
    });
  };
  return {
    list: async (options) => consumer().list(options),
    show: async (id) => consumer().show(id),
    replay: async (id, options) => consumer().replay(id, options),
  };
}
