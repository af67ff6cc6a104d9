import { InboxError, KeyCollisionError } from '../errors.js';
import type { Outcome } from '../lanes/lanes.js';
import { claimParams, parkSql, readClaim } from '../sql/claim.js';
import type { ClaimOutcome } from '../sql/claim.js';
import type { Row } from '../transport/results.js';
import { storableText } from '../sql/storable-text.js';
import { retryConflicts } from '../transport/conflicts.js';
import type { ParkRequest } from './park-request.js';

/**
 * The most characters of diagnostic text a parked row keeps (sql/storable-text.ts): an error's message, its
 * class, the record's id. Bounded, so that a record's parking stays one small request whatever its error
 * quotes, and the id fits the index that makes a record's parking idempotent.
 */
export const MAX_ERROR_MESSAGE_CHARACTERS = 4000;
export const MAX_ERROR_CLASS_CHARACTERS = 200;
export const MAX_ID_CHARACTERS = 512;

/**
 * `onPermanentError: 'park'`: stores the record with its claim, so it succeeds without blocking its FIFO
 * group. A record whose key turns out to be claimed already is not parked: with the same body it is a
 * duplicate (its effect was applied, or is parked under the claim's owner); with another body it is parked
 * as a collision. A record is reported parked only once its row is in the table; a parking that fails
 * leaves it failed with its own error, and says why it could not be parked.
 */
export async function parkRecord(request: ParkRequest): Promise<Outcome> {
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
