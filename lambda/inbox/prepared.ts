import type { SQSRecord } from 'aws-lambda';
import { ParseError } from './errors.js';
import { checkBodySize, payloadHash } from './keys.js';
import type { InboxMessage, ResolvedOptions } from './options.js';

/** What the duplicate filter learnt of a record before any transaction. */
export type KnownClaim = 'duplicate' | { readonly collidesWith: Uint8Array };

/** A record made ready to claim: its key, its body's hash and its parsed message, or why it cannot be. */
export interface PreparedRecord<Body> {
  /** The record's place in the batch. */
  readonly index: number;
  readonly record: SQSRecord;
  /** Null when no key could be chosen (the error says why). */
  readonly key: string | null;
  readonly sha256: Uint8Array;
  /** The message `apply` sees; absent when `error` is set. */
  readonly message?: InboxMessage<Body>;
  /** A key, body or parse failure: the record fails (or is parked) without a claim attempt. */
  readonly error?: Error;
  /** Set by the duplicate filter: the key is claimed already. */
  known?: KnownClaim;
}

/** Chooses the key, hashes the body and parses it. Never throws: a failure is kept on the record. */
export function prepare<Body>(
  record: SQSRecord,
  index: number,
  keyOf: (record: SQSRecord) => string,
  parse: ResolvedOptions<Body>['parse'],
): PreparedRecord<Body> {
  // Stryker disable next-line StringLiteral: a record without a body string is parked; its hash only has to match its own redeliveries
  const body = typeof record.body === 'string' ? record.body : '';
  const sha256 = payloadHash(body);
  let key: string | null = null;
  try {
    key = keyOf(record);
    if (typeof record.body !== 'string') {
      throw new ParseError(`the record has no body string (body is ${record.body === null ? 'null' : typeof record.body}); SQS records from Lambda always carry one`);
    }
    checkBodySize(body);
    return { index, record, key, sha256, message: toMessage(record, key, parse) };
  } catch (error) {
    return { index, record, key, sha256, error: error instanceof Error ? error : new Error(String(error)) };
  }
}

/** The message `apply` receives. A throw of `parse` is a {@link ParseError}. */
export function toMessage<Body>(record: SQSRecord, key: string, parse: ResolvedOptions<Body>['parse']): InboxMessage<Body> {
  let body: Body;
  try {
    body = parse(record.body, record);
  } catch (error) {
    // Stryker disable next-line ObjectLiteral: the cause is for a debugger; the message already carries its text
    throw new ParseError(`the body could not be parsed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  return { key, body, record, attempt: attemptOf(record), groupId: record.attributes?.MessageGroupId };
}

/** ApproximateReceiveCount: 1 on the first delivery. */
export function attemptOf(record: SQSRecord): number {
  const count = Number(record.attributes?.ApproximateReceiveCount);
  return Number.isInteger(count) && count > 0 ? count : 1;
}
