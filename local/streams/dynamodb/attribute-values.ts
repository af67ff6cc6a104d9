import type { AttributeValue } from 'aws-lambda';

/** A DynamoDB item in plain JavaScript: what {@link marshallItem} takes and {@link unmarshallItem} gives back. */
export type PlainItem = Record<string, unknown>;

/** A DynamoDB item as stream records carry it: attribute name to AttributeValue. */
export type MarshalledItem = Record<string, AttributeValue>;

/**
 * Marshals a plain object into DynamoDB AttributeValues, the way the document client does:
 * string → S, number and bigint → N (as text), boolean → BOOL, null → NULL, Uint8Array → B (base64,
 * as stream records carry binary), array → L, plain object → M, Set of strings/numbers/binaries →
 * SS/NS/BS. `undefined`, NaN, Infinity, empty sets and mixed sets are refused with the attribute's path.
 */
export function marshallItem(item: PlainItem): MarshalledItem {
  if (!isPlainObject(item)) throw new TypeError('marshallItem: an item must be a plain object of attributes.');
  const marshalled: MarshalledItem = {};
  for (const [name, value] of Object.entries(item)) marshalled[name] = marshallValue(value, name);
  return marshalled;
}

/** One value; `path` names it in errors (`order.lines[2]`). */
export function marshallValue(value: unknown, path: string): AttributeValue {
  if (value === null) return { NULL: true };
  if (typeof value === 'string') return { S: value };
  if (typeof value === 'boolean') return { BOOL: value };
  if (typeof value === 'number') return { N: numberText(value, path) };
  if (typeof value === 'bigint') return { N: value.toString() };
  if (value instanceof Uint8Array) return { B: Buffer.from(value).toString('base64') };
  if (Array.isArray(value)) return { L: value.map((v, i) => marshallValue(v, `${path}[${i}]`)) };
  if (value instanceof Set) return marshallSet(value, path);
  if (isPlainObject(value)) {
    const map: Record<string, AttributeValue> = {};
    for (const [name, inner] of Object.entries(value)) map[name] = marshallValue(inner, `${path}.${name}`);
    return { M: map };
  }
  if (value === undefined) throw new TypeError(`marshallItem: ${path} is undefined; leave the attribute out or use null.`);
  throw new TypeError(`marshallItem: ${path} holds a ${describe(value)}, which has no DynamoDB type.`);
}

/**
 * The reverse of {@link marshallItem}: N becomes a number (a bigint when a number would lose
 * digits), B a Uint8Array, SS/NS/BS a Set.
 */
export function unmarshallItem(item: MarshalledItem): PlainItem {
  const plain: PlainItem = {};
  for (const [name, value] of Object.entries(item)) plain[name] = unmarshallValue(value);
  return plain;
}

/** One AttributeValue back to JavaScript. */
export function unmarshallValue(value: AttributeValue): unknown {
  if (value.S !== undefined) return value.S;
  if (value.N !== undefined) return numberValue(value.N);
  if (value.BOOL !== undefined) return value.BOOL;
  if (value.NULL !== undefined) return null;
  if (value.B !== undefined) return new Uint8Array(Buffer.from(value.B, 'base64'));
  if (value.L !== undefined) return value.L.map(unmarshallValue);
  if (value.M !== undefined) return unmarshallItem(value.M);
  if (value.SS !== undefined) return new Set(value.SS);
  if (value.NS !== undefined) return new Set(value.NS.map(numberValue));
  if (value.BS !== undefined) return new Set(value.BS.map((b) => new Uint8Array(Buffer.from(b, 'base64'))));
  throw new TypeError(`unmarshallItem: ${JSON.stringify(value)} is not an AttributeValue.`);
}

/** A stable text for an item or key: attribute names sorted at every level, so equal items give equal text. */
export function canonicalText(value: unknown): string {
  return JSON.stringify(value, (_key, inner: unknown) =>
    isPlainObject(inner) ? Object.fromEntries(Object.entries(inner).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : inner,
  );
}

function marshallSet(set: Set<unknown>, path: string): AttributeValue {
  const members = [...set];
  if (members.length === 0) throw new TypeError(`marshallItem: ${path} is an empty set; DynamoDB has no empty sets, leave it out.`);
  if (members.every((m) => typeof m === 'string')) return { SS: members as string[] };
  if (members.every((m) => typeof m === 'number' || typeof m === 'bigint')) {
    return { NS: members.map((m) => (typeof m === 'bigint' ? m.toString() : numberText(m as number, path))) };
  }
  if (members.every((m) => m instanceof Uint8Array)) return { BS: members.map((m) => Buffer.from(m as Uint8Array).toString('base64')) };
  throw new TypeError(`marshallItem: ${path} is a set of mixed types; a set holds only strings, only numbers, or only binaries.`);
}

function numberText(value: number, path: string): string {
  if (!Number.isFinite(value)) throw new TypeError(`marshallItem: ${path} is ${value}; DynamoDB numbers must be finite.`);
  return String(value);
}

function numberValue(text: string): number | bigint {
  const number = Number(text);
  return Number.isSafeInteger(number) || !/^-?\d+$/.test(text) ? number : BigInt(text);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

function describe(value: unknown): string {
  if (typeof value === 'object' && value !== null) return value.constructor?.name ?? 'object';
  return typeof value;
}
