import type { PermanentError } from '../errors.js';
import type { ResolvedOptions } from '../handler/options.js';
import type { RecordConsumer } from '../modes/record-consumer.js';
import type { InboxSource, SourceRecord } from '../sources/source.js';
import type { ClaimOutcome } from '../sql/claim.js';
import type { InboxTables } from '../sql/schema.js';
import type { InboxSession } from '../transport/session.js';

/** A record to park, and what the consumer that parks it knows. */
export interface ParkRequest {
  readonly session: InboxSession;
  readonly tables: InboxTables;
  readonly consumer: string;
  readonly record: SourceRecord<unknown>;
  /** The record's source-specific attributes, as stored with it. */
  readonly attributes: Record<string, unknown>;
  readonly key: string | null;
  readonly sha256: Uint8Array;
  readonly error: PermanentError;
  /** A taken claim's verdict: a redelivery, or a different message under the key (with its stored hash). */
  verdictOf(claim: ClaimOutcome): Promise<'duplicate' | { readonly collidesWith: Uint8Array }>;
  /** Counts and logs a key collision, and returns it as the record's error. */
  collision(stored: Uint8Array): PermanentError;
}

/**
 * Where a handler made by `inbox()` (or a stream inbox) keeps the way to its consumer's parts, which
 * `parkedMessages(handler)` reads: a registered symbol, so `handler` has no parking code of its own.
 */
export const CONSUMER_PARTS: unique symbol = Symbol.for('sqs-inbox.consumer-parts');

/** What `parkedMessages(handler)` needs of a consumer to list and replay its parked messages. */
export interface ConsumerParts<Body = unknown, Raw = unknown> {
  readonly resolved: ResolvedOptions<Body, Raw>;
  readonly tables: InboxTables;
  readonly source: InboxSource<Raw, unknown, unknown>;
  readonly records: RecordConsumer<Body, Raw>;
  /** Sends the outbox rows a committed replay wrote, as the consumer does after its batch; never throws. */
  relay(session: InboxSession, ids: readonly number[]): Promise<unknown>;
}

/** A handler that carries its consumer's parts: settling the environment on the first call, as an invocation does. */
export interface WithConsumerParts {
  readonly [CONSUMER_PARTS]: () => ConsumerParts;
}
