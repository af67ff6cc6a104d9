import { SqsError, missingParameter } from './errors.js';
import type { MessageAttributeValue } from './types.js';

/** A request's JSON body. */
export type Json = Record<string, unknown>;

// AWS reads JSON members leniently, the way its Java deserializer does: a number or boolean where a
// string is expected becomes its text (MessageBody 0 arrives as "0"), and a numeric string where an
// integer is expected becomes the integer; anything else fails the request with the deserializer's
// message. Texts and behaviour as Inqnuam/local-aws-sqs test/send-message.test.ts and
// test/create-queue.test.ts expect them from AWS ("STRING_VALUE can not be converted to an Integer",
// "Start of structure or map found where not expected.", castable MessageBody and StringValue).
const STRUCTURE_NOT_EXPECTED = 'Start of structure or map found where not expected.';

function serialization(message: string, advice?: string): SqsError {
  return new SqsError('SerializationException', message, { advice });
}

/** A string member: a string as is, a number or boolean as its text; undefined when absent or null. */
export function stringMember(input: Json, name: string): string | undefined {
  const value = input[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) throw serialization('Start of list found where not expected.', `${name} must be a string`);
  throw serialization(STRUCTURE_NOT_EXPECTED, `${name} must be a string`);
}

/** A required string member: MissingParameter when absent, null or empty. */
export function requiredString(input: Json, name: string): string {
  const value = stringMember(input, name);
  if (value === undefined || value === '') throw missingParameter(name);
  return value;
}

/**
 * An integer member: a number as is, a string of digits as its number (`DelaySeconds: "5"` is 5 on
 * AWS); undefined when absent or null.
 */
export function integerMember(input: Json, name: string): number | undefined {
  const value = input[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'number') return value;
  if (typeof value === 'string') {
    if (/^\s*[+-]?\d+\s*$/.test(value)) return Number(value);
    throw serialization('STRING_VALUE can not be converted to an Integer', `${name} must be an integer`);
  }
  if (typeof value === 'boolean')
    throw serialization(`${value ? 'VALUE_TRUE' : 'VALUE_FALSE'} can not be converted to an Integer`, `${name} must be an integer`);
  if (Array.isArray(value)) throw serialization('Start of list found where not expected.', `${name} must be an integer`);
  throw serialization(STRUCTURE_NOT_EXPECTED, `${name} must be an integer`);
}

/** A list of strings (`AttributeNames`, `MessageAttributeNames`, ...); scalars become their text. */
export function stringList(input: Json, name: string): string[] {
  const value = input[name];
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw serialization(STRUCTURE_NOT_EXPECTED, `${name} must be a list of strings`);
  return value.map((item) => {
    if (typeof item === 'string') return item;
    if (typeof item === 'number' || typeof item === 'boolean') return String(item);
    throw serialization(STRUCTURE_NOT_EXPECTED, `${name} must be a list of strings`);
  });
}

/**
 * A map of strings (`Attributes`): scalar values become their text (`VisibilityTimeout: 20` is "20"),
 * null values are left out, nested maps and lists fail as on AWS.
 */
export function stringMap(input: Json, name: string): Record<string, string> {
  const value = input[name];
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) {
    // local-aws-sqs: Attributes sent as a list or a string reach AWS as "Unknown Attribute 0.".
    throw new SqsError('InvalidAttributeName', 'Unknown Attribute 0.');
  }
  const entries: [string, string][] = [];
  for (const [key, raw] of Object.entries(value as Record<string, unknown>)) {
    if (raw === null || raw === undefined) continue;
    if (typeof raw === 'string' || typeof raw === 'number' || typeof raw === 'boolean') entries.push([key, String(raw)]);
    else if (Array.isArray(raw)) throw serialization('Unrecognized collection type class java.lang.String', `${name}.${key} must be a string`);
    else throw serialization(STRUCTURE_NOT_EXPECTED, `${name}.${key} must be a string`);
  }
  // fromEntries defines own properties: assigning result["__proto__"] would drop the client's key unseen.
  return Object.fromEntries(entries);
}

/** The entries of a batch request: MissingParameter when absent. */
export function entryList(input: Json): Json[] {
  const entries = input.Entries;
  if (entries === undefined || entries === null) throw missingParameter('Entries');
  if (!Array.isArray(entries)) throw serialization(STRUCTURE_NOT_EXPECTED, 'Entries must be a list');
  return entries.map((e) => (typeof e === 'object' && e !== null && !Array.isArray(e) ? (e as Json) : {}));
}

/** Message attributes from the wire (`BinaryValue` base64) to the model's shape. */
export function attributesFromWire(input: Json, name: string): Record<string, MessageAttributeValue> | undefined {
  const value = input[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value)) throw serialization(STRUCTURE_NOT_EXPECTED, `${name} must be a map`);
  const result: Record<string, MessageAttributeValue> = {};
  for (const [key, raw] of Object.entries(value as Record<string, unknown>)) {
    const a = (typeof raw === 'object' && raw !== null ? raw : {}) as Json;
    const stringValue = stringMember(a, 'StringValue');
    const binary = stringMember(a, 'BinaryValue');
    result[key] = {
      dataType: stringMember(a, 'DataType') ?? '',
      ...(stringValue !== undefined ? { stringValue } : {}),
      ...(binary !== undefined ? { binaryValue: new Uint8Array(Buffer.from(binary, 'base64')) } : {}),
    };
  }
  return result;
}
