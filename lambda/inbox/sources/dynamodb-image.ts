import type { AttributeValue } from 'aws-lambda';
import { ParseError } from '../errors.js';

/** A DynamoDB item as plain values: numbers, strings, booleans, null, arrays, objects, binary as bytes. */
export type PlainItem = Record<string, unknown>;

/**
 * Unmarshalls a stream image (`NewImage`, `OldImage`, `Keys`) to plain values, as `@aws-sdk/util-dynamodb`'s
 * `unmarshall` does, except that sets become arrays (so that bodies stay JSON) and a number that a
 * JavaScript number cannot hold exactly is refused rather than rounded (pass your own `parse` to keep it
 * as text: `record.dynamodb.NewImage` is there untouched).
 */
export function unmarshallImage(image: Record<string, AttributeValue> | undefined): PlainItem | undefined {
  if (image === undefined) return undefined;
  return Object.fromEntries(Object.entries(image).map(([name, value]) => [name, plain(value, name)]));
}

function plain(value: AttributeValue, path: string): unknown {
  if (value.S !== undefined) return value.S;
  if (value.N !== undefined) return number(value.N, path);
  if (value.BOOL !== undefined) return value.BOOL;
  if (value.NULL !== undefined) return null;
  if (value.B !== undefined) return new Uint8Array(Buffer.from(value.B, 'base64'));
  if (value.M !== undefined) return Object.fromEntries(Object.entries(value.M).map(([name, item]) => [name, plain(item, `${path}.${name}`)]));
  if (value.L !== undefined) return value.L.map((item, index) => plain(item, `${path}[${index}]`));
  if (value.SS !== undefined) return [...value.SS];
  if (value.NS !== undefined) return value.NS.map((item, index) => number(item, `${path}[${index}]`));
  if (value.BS !== undefined) return value.BS.map((item) => new Uint8Array(Buffer.from(item, 'base64')));
  // Named by its place only: its value is the item's content, which never goes to a log.
  throw new ParseError(`attribute ${path} has no type DynamoDB Streams sends (S, N, B, BOOL, NULL, M, L, SS, NS, BS)`);
}

function number(text: string, path: string): number {
  const value = Number(text);
  if (!Number.isFinite(value) || (Number.isInteger(value) && !Number.isSafeInteger(value) && !/[.eE]/.test(text))) {
    throw new ParseError(
      `attribute ${path} is a number of ${text.length} characters that a JavaScript number cannot hold exactly; ` +
        'give dynamoDbInbox a `parse` that reads record.dynamodb.NewImage itself (e.g. as BigInt)',
    );
  }
  return value;
}
