import type { PermanentError } from '../errors.js';
import type { SourceRecord } from '../sources/source.js';
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
