import type { ParkedMessage } from '../parked/store.js';

// A stream record as the parked table keeps it, and as a replay gets it back. Its payload (Kinesis data, a
// Kafka value) is in the table's payload column, byte for byte, so the record keeps an empty string in its
// place rather than a second copy in base64: a 1 MiB Kinesis record would otherwise be stored twice, and
// its parking would outgrow what one Data API request takes. A record whose payload is not a string (one
// Lambda would never send) is kept whole.

/** Where a record keeps its base64 payload: `['kinesis', 'data']`, `['value']`. */
export type PayloadPath = readonly [string, ...string[]];

/** The record with its payload left out, for `parkedAttributes`. */
export function withoutPayload<Raw>(record: Raw, path: PayloadPath): Raw {
  return edited(record, path, (value) => (typeof value === 'string' ? '' : value));
}

/**
 * The parked record with its payload put back where it was left out, for `fromParked`. A row parked before
 * the inbox's migration 6 kept its record whole, payload included: that one stays.
 */
export function withPayload<Raw>(parked: ParkedMessage, path: PayloadPath): Raw {
  return edited(parked.attributes.record as Raw, path, (value) => (value === '' ? Buffer.from(parked.payload).toString('base64') : value));
}

/** `record` with the value at `path` edited; the record itself when the edit changes nothing. */
function edited<Raw>(record: Raw, path: readonly string[], edit: (value: unknown) => unknown): Raw {
  const [head, ...rest] = path as PayloadPath;
  const value = (record as Record<string, unknown> | null | undefined)?.[head];
  const replaced = rest.length === 0 ? edit(value) : edited(value, rest, edit);
  return replaced === value ? record : { ...record, [head]: replaced };
}
