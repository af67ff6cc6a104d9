import { InboxError, ParseError, PermanentError } from '../errors.js';
import { payloadHash } from './keys.js';
import type { InboxMessage } from '../handler/options.js';
import type { SourceRecord } from '../sources/source.js';

/** What the duplicate filter learnt of a record before any transaction. */
export type KnownClaim = 'duplicate' | { readonly collidesWith: Uint8Array };

/** A record made ready to claim: its key, its body's hash and its parsed message, or why it cannot be. */
export interface PreparedRecord<Body, Raw = unknown> {
  /** The record's place in the batch. */
  readonly index: number;
  readonly record: SourceRecord<Raw>;
  /** Null when no key could be chosen (the error says why). */
  readonly key: string | null;
  readonly sha256: Uint8Array;
  /** The message `apply` sees; absent when `error` is set. */
  readonly message?: InboxMessage<Body, Raw>;
  /** A key, body or parse failure: the record fails (or is parked) without a claim attempt. */
  readonly error?: Error;
  /** Set by the duplicate filter: the key is claimed already. */
  known?: KnownClaim;
}

/** How records become messages: the key strategy and `parse`. */
export interface MessageRules<Body, Raw> {
  readonly keyOf: (record: SourceRecord<Raw>) => string;
  readonly parse: (body: string, record: Raw) => Body | Promise<Body>;
}

/** Chooses the key, hashes the body and parses it (awaiting an async `parse`). Never rejects: a failure is kept on the record. */
export async function prepare<Body, Raw>(record: SourceRecord<Raw>, rules: MessageRules<Body, Raw>): Promise<PreparedRecord<Body, Raw>> {
  const { index, body } = record;
  const sha256 = payloadHash(body);
  let key: string | null = null;
  try {
    key = rules.keyOf(record);
    if (record.bodyError) throw record.bodyError;
    return { index, record, key, sha256, message: await toMessage(record, key, rules.parse) };
  } catch (error) {
    // A record without its body fails for that, even when a key read from the body failed first.
    const cause = record.bodyError ?? error;
    return { index, record, key, sha256, error: cause instanceof Error ? cause : new Error(String(cause)) };
  }
}

/**
 * The message `apply` receives. A throw (or rejection) of `parse` is a {@link ParseError}, unless it is a
 * temporary error of the inbox's own classes (parseWith's SchemaValidatorError: no verdict on the body),
 * which keeps its class: made a ParseError, it would be taken for a permanent fault of the body.
 */
export async function toMessage<Body, Raw>(record: SourceRecord<Raw>, key: string, parse: MessageRules<Body, Raw>['parse']): Promise<InboxMessage<Body, Raw>> {
  let body: Body;
  try {
    body = await parse(record.body, record.raw);
  } catch (error) {
    if (error instanceof InboxError && !(error instanceof PermanentError)) throw error;
    throw new ParseError(`the body could not be parsed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  return { key, body, record: record.raw, id: record.id, attempt: record.attempt, groupId: record.groupId };
}
