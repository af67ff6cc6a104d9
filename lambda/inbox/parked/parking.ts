import { InboxError, KeyCollisionError } from '../errors.js';
import type { Outcome } from '../lanes/lanes.js';
import { claimParams, parkSql, readClaim } from '../sql/claim.js';
import type { ClaimOutcome } from '../sql/claim.js';
import type { Row } from '../transport/results.js';
import { storableText } from '../sql/storable-text.js';
import { retryConflicts } from '../transport/conflicts.js';
import { CONSUMER_PARTS, PARKING_RUNTIME } from './parking-runtime.js';
import type { Park, ParkRequest, WithConsumerParts } from './parking-runtime.js';
import { replayEffect } from './replay.js';
import { consumerParkedMessages } from './store.js';
import type { ParkedMessages } from './store.js';

/**
 * The value of `onPermanentError` that parks: a record that fails with a `PermanentError` (yours, or a
 * `ParseError`, `KeyError`, `BodyTooLargeError` or `KeyCollisionError`) is stored in the inbox's
 * parked-message table with its key's claim, and reported succeeded, so it never blocks its FIFO group;
 * {@link parkedMessages} lists and replays it once its cause is fixed.
 *
 * @example
 * import { park } from 'sqs-inbox/parked';
 * export const handler = inbox({ consumer: 'order-worker', onPermanentError: park, apply });
 */
export const park: Park = { [PARKING_RUNTIME]: { park: parkRecord } };

/**
 * The most characters of diagnostic text a parked row keeps (sql/storable-text.ts): an error's message, its
 * class, the record's id. Bounded, so that a record's parking stays one small request whatever its error
 * quotes, and the id fits the index that makes a record's parking idempotent.
 */
export const MAX_ERROR_MESSAGE_CHARACTERS = 4000;
export const MAX_ERROR_CLASS_CHARACTERS = 200;
export const MAX_ID_CHARACTERS = 512;

/**
 * Stores the record with its claim, so it succeeds without blocking its FIFO group. A record whose key
 * turns out to be claimed already is not parked: with the same body it is a duplicate (its effect was
 * applied, or is parked under the claim's owner); with another body it is parked as a collision. A record
 * is reported parked only once its row is in the table; a parking that fails leaves it failed with its
 * own error, and says why it could not be parked.
 */
async function parkRecord(request: ParkRequest): Promise<Outcome> {
  const { session, tables, record, key, sha256, error } = request;
  const claim = key !== null && !(error instanceof KeyCollisionError);
  try {
    // One autocommit statement: a conflict (Aurora DSQL) rolled it back for certain, so it runs again.
    const parked = await retryConflicts(session, async () =>
      readParking(
        (
          await session.execute(parkSql(tables), {
            ...claimParams(request.consumer, key, sha256),
            inbox_claim: claim,
            inbox_message_id: storableText(record.id ?? '', MAX_ID_CHARACTERS),
            inbox_payload: record.payload,
            inbox_attributes: request.attributes,
            inbox_error_class: storableText(error.name, MAX_ERROR_CLASS_CHARACTERS),
            inbox_error_message: storableText(error.message, MAX_ERROR_MESSAGE_CHARACTERS),
            inbox_attempt: record.attempt,
          })
        ).rows,
      ),
    );
    if (parked.stored) return { kind: 'parked', error };
    if (!claim) {
      throw new InboxError(
        'a parking of the same record committed while this one ran, after it had looked: it stored the record, and a redelivery finds it parked',
      );
    }
    const verdict = await request.verdictOf(parked);
    if (verdict === 'duplicate') return { kind: 'duplicate' };
    return parkRecord({ ...request, error: request.collision(verdict.collidesWith) });
  } catch (parkError) {
    return { kind: 'failed', error, parkError: parkError instanceof Error ? parkError : new Error(String(parkError)) };
  }
}

/** How a parking came out: the claim's outcome, and whether the record is in the table now. */
function readParking(rows: readonly Row[]): ClaimOutcome & { readonly stored: boolean } {
  return { ...readClaim(rows), stored: rows[0]!.stored === true };
}

/**
 * List and replay the parked messages of a consumer: `handler` is what `inbox()`, `kinesisInbox()`,
 * `dynamoDbInbox()`, `kafkaInbox()` or their `sqs-inbox/batch` variants returned. Asking settles the
 * consumer's INBOX_* environment, as its first invocation does. A replay runs the consumer's own effect,
 * in its mode.
 *
 * @example
 * const parked = parkedMessages(handler);
 * for (const message of await parked.list()) console.log(message.id, message.errorClass);
 * await parked.replay(7); // 'replayed'
 */
export function parkedMessages(handler: object): ParkedMessages {
  const parts = (handler as Partial<WithConsumerParts> | null | undefined)?.[CONSUMER_PARTS];
  if (typeof parts !== 'function') {
    throw new TypeError('parkedMessages(handler): pass the handler that inbox() (or kinesisInbox(), dynamoDbInbox(), kafkaInbox()) returned');
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
