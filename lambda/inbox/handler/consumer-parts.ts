import type { ResolvedOptions } from './options.js';
import type { RecordConsumer } from '../modes/record-consumer.js';
import type { InboxSource } from '../sources/source.js';
import type { InboxTables } from '../sql/schema.js';
import type { InboxSession } from '../transport/session.js';

/** What `parkedMessages(handler)` needs of a consumer to list and replay its parked messages. */
export interface ConsumerParts<Body = unknown, Raw = unknown> {
  readonly resolved: ResolvedOptions<Body, Raw>;
  readonly tables: InboxTables;
  readonly source: InboxSource<Raw, unknown, unknown>;
  readonly records: RecordConsumer<Body, Raw>;
  /** Sends the outbox rows a committed replay wrote, as the consumer does after its batch; never throws. */
  relay(session: InboxSession, ids: readonly number[]): Promise<unknown>;
}

/**
 * Each handler `inbox()` (or a stream inbox) made, and the way to its consumer's parts: asking settles the
 * environment, as an invocation does. A map, not a property of the handler, so the handler carries no key of
 * ours; one per loaded copy of the package, so `parkedMessages` takes handlers made by the same build
 * (`import` or `require`) of sqs-inbox.
 */
const consumers = new WeakMap<object, () => ConsumerParts>();

/** Records `handler`'s way to its consumer's parts. */
export function registerConsumerParts(handler: object, parts: () => ConsumerParts): void {
  consumers.set(handler, parts);
}

/** The way to `handler`'s consumer's parts, or undefined when `inbox()` of this build did not make it. */
export function consumerPartsOf(handler: unknown): (() => ConsumerParts) | undefined {
  return typeof handler === 'function' || (typeof handler === 'object' && handler !== null) ? consumers.get(handler) : undefined;
}
