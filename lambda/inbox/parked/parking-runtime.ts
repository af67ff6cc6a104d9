import type { SqlParams } from '../data-api/parameters.js';
import type { ResolvedOptions } from '../handler/options.js';
import type { BatchModes } from '../modes/batch-modes.js';
import type { RecordConsumer } from '../modes/per-record.js';
import type { InboxSource } from '../sources/source.js';
import type { ClaimOutcome } from '../sql/claim.js';
import type { InboxTables } from '../sql/schema.js';
import type { InboxSession } from '../transport/session.js';

/**
 * The parking code, carried by `park` (package export `sqs-inbox/parked`) as the value of
 * `onPermanentError`, so that a consumer that does not park bundles none of it.
 */
export interface ParkingRuntime {
  /**
   * Stores a record in the parked table, claiming its key in the same statement when `inbox_claim` says so;
   * resolves with how that claim came out.
   */
  insert(session: InboxSession, tables: InboxTables, params: SqlParams): Promise<ClaimOutcome>;
}

/**
 * Where `park` keeps its {@link ParkingRuntime}: a registered symbol, so that the value is still recognised
 * when the package is loaded twice (its ESM and CommonJS builds side by side).
 */
export const PARKING_RUNTIME: unique symbol = Symbol.for('sqs-inbox.parking-runtime');

/** The value of `onPermanentError` that parks: `park` from `sqs-inbox/parked`. */
export interface Park {
  /** The parking code. */
  readonly [PARKING_RUNTIME]: ParkingRuntime;
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
  readonly batchModes: BatchModes | undefined;
  /** Sends the outbox rows a committed replay wrote, as the consumer does after its batch; never throws. */
  relay(session: InboxSession, ids: readonly number[]): Promise<unknown>;
}

/** A handler that carries its consumer's parts: settling the environment on the first call, as an invocation does. */
export interface WithConsumerParts {
  readonly [CONSUMER_PARTS]: () => ConsumerParts;
}
