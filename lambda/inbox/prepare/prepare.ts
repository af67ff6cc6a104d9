import { InboxError, ParseError, PermanentError } from '../errors.js';
import { jsonFault, notJson } from './json-body.js';
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

/** Chooses the key, hashes the payload and parses the body (awaiting an async `parse`). Never rejects: a failure is kept on the record. */
export async function prepare<Body, Raw>(record: SourceRecord<Raw>, rules: MessageRules<Body, Raw>): Promise<PreparedRecord<Body, Raw>> {
  const { index } = record;
  const sha256 = payloadHash(record.payload);
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
    throw new ParseError(`the body could not be parsed: ${parseFailure(record.body, error)}`, { cause: error });
  }
  return { key, body, record: record.raw, id: record.id, attempt: record.attempt, groupId: record.groupId };
}

/**
 * What a ParseError says of a throw of `parse`, which goes to the log and the parked row: never the
 * thrown message of an error the inbox does not know, since `JSON.parse` (Node 20 and newer) and many
 * validators quote the body in theirs. A `PermanentError` (a `ParseError` of the default parse or of
 * `parseWith`, or one of yours) chose its words, and is kept; a `SyntaxError` over a body that is not JSON
 * is said as where and how; of anything else, only its class. The error itself is the ParseError's `cause`.
 */
function parseFailure(body: string, error: unknown): string {
  if (error instanceof PermanentError) return error.message;
  const fault = error instanceof SyntaxError ? jsonFault(body) : undefined;
  if (fault) return notJson(body, fault);
  const thrown = error instanceof Error ? error.name : `a ${typeof error}`;
  return `parse threw ${thrown}, whose message is left out of logs and the parked row because it may quote the body; throw a ParseError from parse to choose what is said`;
}
