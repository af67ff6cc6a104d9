import type { Identified, LaneRecord } from './stream-source.js';

/** A valid partial response: per lane, the lowest position reported failed. Empty: complete success. */
export interface FailedPositions {
  failedFrom: Map<string, bigint>;
}

/** A refused response: the whole batch failed. */
export interface InvalidResponse {
  invalid: string;
}

/**
 * Reads a handler's return value as a stream event source mapping does with ReportBatchItemFailures
 * on. The value goes through JSON, as it does on Lambda. No response, null, an empty object, or a
 * null or empty `batchItemFailures` is complete success. Anything malformed, and any empty, null,
 * misnamed or unknown itemIdentifier, fails the whole batch. Otherwise, per lane, the LOWEST reported
 * position wins: Lambda checkpoints before it and retries from it.
 * (services-kinesis-batchfailurereporting, services-ddb-batchfailurereporting, kafka-retry-configurations)
 */
export function readStreamBatchResponse<R>(
  value: unknown,
  batch: readonly LaneRecord<R>[],
  identify: (itemIdentifier: unknown, batch: readonly LaneRecord<R>[]) => Identified<R>,
): FailedPositions | InvalidResponse {
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch (error) {
    return { invalid: `response is not serialisable to JSON: ${String(error)}` };
  }
  const failedFrom = new Map<string, bigint>();
  if (json === undefined) return { failedFrom };
  const parsed: unknown = JSON.parse(json);
  if (parsed === null) return { failedFrom };
  if (typeof parsed !== 'object' || Array.isArray(parsed)) {
    return { invalid: `response must be an object like { batchItemFailures: [...] }; got ${json.slice(0, 100)}` };
  }
  const list = (parsed as Record<string, unknown>).batchItemFailures;
  if (list === undefined || list === null) return { failedFrom };
  if (!Array.isArray(list)) return { invalid: 'batchItemFailures must be a list of { itemIdentifier } objects.' };
  for (const item of list) {
    if (typeof item !== 'object' || item === null || Array.isArray(item)) {
      return { invalid: `batchItemFailures holds ${JSON.stringify(item)}, not an { itemIdentifier } object.` };
    }
    if (!('itemIdentifier' in item)) return { invalid: `batchItemFailures entry ${JSON.stringify(item)} has no itemIdentifier key.` };
    const named = identify((item as { itemIdentifier: unknown }).itemIdentifier, batch);
    if ('invalid' in named) return named;
    const { lane, position } = named.record;
    const lowest = failedFrom.get(lane);
    if (lowest === undefined || position < lowest) failedFrom.set(lane, position);
  }
  return { failedFrom };
}

/** Parses a decimal sequence number; undefined unless it is digits only. */
export function parseSequenceNumber(text: unknown): bigint | undefined {
  if (typeof text !== 'string' || !/^\d+$/.test(text)) return undefined;
  return BigInt(text);
}

/**
 * `identify` for Kinesis and DynamoDB Streams: the itemIdentifier is a record's sequence number, a
 * non-empty string. Compared as BigInt, so `"0042"` names record 42 as Lambda's numeric parse would.
 */
export function identifyBySequenceNumber<R>(itemIdentifier: unknown, batch: readonly LaneRecord<R>[]): Identified<R> {
  if (typeof itemIdentifier !== 'string' || itemIdentifier === '') {
    return { invalid: `itemIdentifier ${JSON.stringify(itemIdentifier)} is empty or not a string.` };
  }
  const position = parseSequenceNumber(itemIdentifier);
  const record = position === undefined ? undefined : batch.find((r) => r.position === position);
  if (!record) return { invalid: `itemIdentifier ${itemIdentifier} is not the sequence number of a record in this batch.` };
  return { record };
}
