import { InboxConfigError, KeyError } from '../errors.js';
import { checkKey } from '../prepare/keys.js';
import { parseJson } from '../prepare/json-body.js';
import { described, refuseUnknownKeys } from '../handler/option-checks.js';
import type { SourceRecord } from './source.js';

/** The one option Kinesis and DynamoDB Streams handlers take besides those of every consumer. */
export const KEY_OPTION = { key: true } as const;

/**
 * How a stream record's idempotency key is chosen: the source's default (its position in the stream:
 * redeliveries of one record are caught, a producer's re-send is a new record), a field of the JSON body
 * the producer fills with a stable key (`{ field: 'orderId' }`, dotted for nested fields), or a function.
 */
export type StreamKeyStrategy<Raw, Default extends string> = Default | { readonly field: string } | ((record: Raw) => string);

/** One of a source's own key strategies besides the default and `field`, e.g. Kafka's `{ header }`. */
export interface ExtraKeyStrategy<Raw> {
  /** The strategy object's one property, e.g. `header`. */
  readonly property: string;
  /** An example of the strategy for errors, e.g. `{ header: 'idempotency-key' }`. */
  readonly example: string;
  readonly keyOf: (name: string) => (record: SourceRecord<Raw>) => string;
}

/** Validates a stream source's key option once, at cold start, and returns the function that applies it. */
export function streamKeyStrategy<Raw>(
  option: unknown,
  defaults: { readonly name: string; readonly keyOf: (record: SourceRecord<Raw>) => string },
  extra?: ExtraKeyStrategy<Raw>,
  /**
   * What `{ field }` walks: the JSON body, unless the source hands `apply` something else (DynamoDB's
   * unmarshalled change). It refuses a body it cannot read with a ParseError, which names the fault and
   * quotes nothing of the body.
   */
  fieldRoot: (record: SourceRecord<Raw>) => unknown = (record) => parseJson(record.body),
): (record: SourceRecord<Raw>) => string {
  const chosen = option ?? defaults.name;
  if (chosen === defaults.name) return defaults.keyOf;
  if (typeof chosen === 'function') return (record) => checkKey((chosen as (raw: Raw) => unknown)(record.raw), 'the key function');
  // `??` above never leaves null.
  if (typeof chosen === 'object' && !Array.isArray(chosen)) {
    const property = extra && Object.hasOwn(chosen, extra.property) ? extra.property : 'field';
    refuseUnknownKeys(chosen, { [property]: true }, 'key');
    const name = (chosen as Record<string, unknown>)[property];
    if (typeof name !== 'string' || name.length === 0) {
      throw new InboxConfigError(`key.${property}`, `must be a non-empty name, e.g. { ${property}: 'orderId' }`);
    }
    return property === 'field' ? fieldKey(name, fieldRoot) : extra!.keyOf(name);
  }
  const others = [`'${defaults.name}'`, "{ field: 'orderId' }", ...(extra ? [extra.example] : []), 'a function of the record'];
  throw new InboxConfigError('key', `${described(chosen)} is not a key strategy; use ${others.join(', ')}`);
}

/** The key from a field of the body, `a.b` for nested fields: a string, or a finite number. */
function fieldKey<Raw>(path: string, root: (record: SourceRecord<Raw>) => unknown): (record: SourceRecord<Raw>) => string {
  const steps = path.split('.');
  return (record) => {
    let value: unknown;
    try {
      value = root(record);
    } catch (error) {
      throw new KeyError(`key field "${path}": the body cannot be read for it (${(error as Error).message})`);
    }
    for (const step of steps) value = typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[step] : undefined;
    // Number.isFinite is false for anything but a finite number.
    if (Number.isFinite(value)) value = String(value);
    if (typeof value !== 'string') {
      throw new KeyError(`key field "${path}" is ${fieldKind(value)} in the body; the producer must set it to a string on every message`);
    }
    return checkKey(value, `body field "${path}"`);
  };
}

/** What a key field holds instead of a string, by its kind only: its value is the body's, which no log line quotes. */
function fieldKind(value: unknown): string {
  if (value === undefined) return 'missing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  // A finite number was taken as the key already: JSON's numbers too large to be finite are left.
  if (typeof value === 'number') return 'a number that is not finite';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}
