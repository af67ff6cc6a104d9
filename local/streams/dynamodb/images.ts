import type * as UtilDynamoDb from '@aws-sdk/util-dynamodb';
import type { AttributeValue } from 'aws-lambda';
import { requireUtilDynamoDb } from '../../peer-loaders.js';

// Items to stream images and back, by the SDK's own marshall and unmarshall: what the document client
// writes is what the local stream carries. Lambda's records carry binary as base64 text where the SDK's
// values hold bytes, so each way converts that one type.

/** A DynamoDB item as stream records carry it: attribute name to AttributeValue, binary as base64. */
export type StreamImage = Record<string, AttributeValue>;

/** The SDK's value of an attribute: as Lambda's, with bytes for binary. */
type SdkValue = Omit<AttributeValue, 'B' | 'BS' | 'M' | 'L'> & {
  B?: Uint8Array | undefined;
  BS?: Uint8Array[] | undefined;
  M?: Record<string, SdkValue> | undefined;
  L?: SdkValue[] | undefined;
};

let sdk: typeof UtilDynamoDb | undefined;

/** The SDK's marshalling, loaded once; a missing package is a LocalDependencyError naming its install. */
export function utilDynamoDb(): typeof UtilDynamoDb {
  sdk ??= requireUtilDynamoDb();
  return sdk;
}

/** An item of plain values (`{ pk: 'a', total: 3, tags: new Set(['x']) }`) as its stream image. */
export function toImage(item: Record<string, unknown>): StreamImage {
  const marshalled = utilDynamoDb().marshall(item) as Record<string, SdkValue>;
  return Object.fromEntries(Object.entries(marshalled).map(([name, value]) => [name, toStream(value)]));
}

/** One attribute's plain value as a stream image holds it. */
export function toImageValue(value: unknown): AttributeValue {
  return toStream(utilDynamoDb().convertToAttr(value) as SdkValue);
}

/** A stream image back as plain values: numbers (a bigint past 2^53), bytes, sets. */
export function fromImage(image: StreamImage): Record<string, unknown> {
  return utilDynamoDb().unmarshall(Object.fromEntries(Object.entries(image).map(([name, value]) => [name, fromStream(value)])) as never);
}

function toStream(value: SdkValue): AttributeValue {
  if (value.B !== undefined) return { B: Buffer.from(value.B).toString('base64') };
  if (value.BS !== undefined) return { BS: value.BS.map((bytes) => Buffer.from(bytes).toString('base64')) };
  if (value.M !== undefined) return { M: Object.fromEntries(Object.entries(value.M).map(([name, inner]) => [name, toStream(inner)])) };
  if (value.L !== undefined) return { L: value.L.map(toStream) };
  return value as AttributeValue;
}

function fromStream(value: AttributeValue): SdkValue {
  const bytes = (text: string) => new Uint8Array(Buffer.from(text, 'base64'));
  if (value.B !== undefined) return { B: bytes(value.B) };
  if (value.BS !== undefined) return { BS: value.BS.map(bytes) };
  if (value.M !== undefined) return { M: Object.fromEntries(Object.entries(value.M).map(([name, inner]) => [name, fromStream(inner)])) };
  if (value.L !== undefined) return { L: value.L.map(fromStream) };
  return value as SdkValue;
}
