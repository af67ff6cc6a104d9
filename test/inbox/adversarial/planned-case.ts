import type { AttributeValue } from 'aws-lambda';
import fc from 'fast-check';
import type { KeyVariant } from './hostile-values.js';
import { keyVariant } from './hostile-values.js';

// What the adversarial suite generates: a case is one consumer's life, one or two generations of records,
// each generation a batch delivered until its source is done with it. A record is planned (its body, its
// effect, its key, its shape) before it is built the way its source's Lambda event carries it.

/**
 * What a record's body is, before its source encodes it. Each holds the marker (see hostile-values.ts)
 * wherever it has room for text.
 */
export type Payload =
  /** A JSON object: the marker, hostile values, and the producer's key field when keys come from the body. */
  | { readonly kind: 'object'; readonly value: unknown }
  /** JSON text that is not an object, or an object of odd form: a string, a number past double's range, null, duplicate keys. */
  | { readonly kind: 'odd-json'; readonly text: string }
  /** Nested arrays this deep around the marker: valid JSON that recursion chokes on. */
  | { readonly kind: 'deep'; readonly depth: number }
  /** Text that JSON.parse refuses. */
  | { readonly kind: 'not-json'; readonly text: string }
  /** Bytes that are not UTF-8 (the streams carry bytes). */
  | { readonly kind: 'bytes'; readonly bytes: readonly number[] }
  /** A zero-length payload (the streams; SQS bodies have at least one character). */
  | { readonly kind: 'empty' }
  /** A JSON object padded to exactly the source's size limit; `binary`: bytes that are not UTF-8, at the limit. */
  | { readonly kind: 'at-limit'; readonly binary: boolean }
  /** One byte more than SQS takes: the inbox's own size check. */
  | { readonly kind: 'over-limit' }
  /** Kafka: a record without a value (a delete on a compacted topic). */
  | { readonly kind: 'tombstone' }
  /** DynamoDB Streams: a change, with images of hostile attribute values. */
  | {
      readonly kind: 'change';
      readonly eventName: 'INSERT' | 'MODIFY' | 'REMOVE';
      readonly image: Readonly<Record<string, AttributeValue>>;
      /** Pad the new image to DynamoDB's 400 KB item limit. */
      readonly atLimit: boolean;
    };

/** What the record's effect does when it runs: succeeds, refuses it for good, or fails this many times first. */
export type Effect = 'ok' | 'permanent' | { readonly transient: 1 | 2 };

/** How Lambda (or a broken event) hands the record over. */
export type Shape = 'lambda' | 'no-id' | 'null' | 'wrong-type';

export interface RecordPlan {
  /** Index into the source's lanes (FIFO group, shard, topic-partition); unordered sources ignore it. */
  readonly lane: number;
  readonly payload: Payload;
  readonly effect: Effect;
  /** The producer's key, when the case keys by the producer's key. */
  readonly key: KeyVariant;
  readonly shape: Shape;
}

/**
 * One record of a generation: a message of its own; a producer's re-send of an earlier message (same body,
 * same key, a new record); or a different message that carries an earlier record's id (a recreated Kafka
 * topic restarts its offsets; a hand-built event reuses a messageId). `of` is taken modulo the earlier records.
 */
export type Entry =
  | { readonly kind: 'fresh'; readonly plan: RecordPlan }
  | { readonly kind: 'resend'; readonly of: number }
  | { readonly kind: 'shares-id'; readonly of: number; readonly plan: RecordPlan };

/** The handler's options the case varies. */
export interface CaseOptions {
  /** Key by the producer's key (SQS attribute, Kafka header, a body field) instead of the record's place. */
  readonly producerKeys: boolean;
  readonly duplicateFilter: 'auto' | 'always' | 'never';
  /** Transaction modes: the claim rides on the effect's first statement. */
  readonly ridingClaim: boolean;
  readonly concurrency: number;
  /** SQS FIFO: `fifo.onFailure`. */
  readonly stopBatch: boolean;
}

export interface CasePlan {
  readonly options: CaseOptions;
  readonly first: readonly Entry[];
  /** Delivered once the first is done with: re-sends, reused ids, new messages. */
  readonly second: readonly Entry[];
}

/** What a source lets the case generator make. */
export interface PlanRules {
  readonly lanes: number;
  readonly payload: fc.Arbitrary<Payload>;
  /** The shapes a broken event may give a record of this source, besides the one Lambda gives. */
  readonly brokenShapes: readonly Exclude<Shape, 'lambda'>[];
}

const effect: fc.Arbitrary<Effect> = fc.oneof(
  { weight: 6, arbitrary: fc.constant<Effect>('ok') },
  { weight: 2, arbitrary: fc.constant<Effect>('permanent') },
  { weight: 2, arbitrary: fc.constantFrom<Effect>({ transient: 1 }, { transient: 2 }) },
);

function recordPlan(rules: PlanRules, payload = rules.payload): fc.Arbitrary<RecordPlan> {
  const shape: fc.Arbitrary<Shape> =
    rules.brokenShapes.length === 0
      ? fc.constant('lambda')
      : fc.oneof({ weight: 12, arbitrary: fc.constant<Shape>('lambda') }, { weight: 1, arbitrary: fc.constantFrom(...rules.brokenShapes) });
  return fc.record({ lane: fc.nat({ max: rules.lanes - 1 }), payload, effect, key: keyVariant, shape });
}

/** A case: options, a first generation of 1 to 6 records, and a second of 0 to 4. */
export function casePlan(rules: PlanRules, healthyPayload: fc.Arbitrary<Payload>): fc.Arbitrary<CasePlan> {
  const fresh = recordPlan(rules).map((plan): Entry => ({ kind: 'fresh', plan }));
  const resend = fc.nat({ max: 5 }).map((of): Entry => ({ kind: 'resend', of }));
  const sharer = fc
    .tuple(fc.nat({ max: 5 }), recordPlan({ ...rules, brokenShapes: [] }, healthyPayload))
    .map(([of, plan]): Entry => ({ kind: 'shares-id', of, plan }));
  return fc.record({
    options: fc.record({
      producerKeys: fc.boolean(),
      duplicateFilter: fc.constantFrom('auto', 'always', 'never'),
      ridingClaim: fc.boolean(),
      concurrency: fc.constantFrom(1, 3, 10),
      stopBatch: fc.boolean(),
    }),
    first: fc
      .tuple(fresh, fc.array(fc.oneof({ weight: 5, arbitrary: fresh }, { weight: 1, arbitrary: resend }), { maxLength: 5 }))
      .map(([head, rest]) => [head, ...rest]),
    second: fc.array(fc.oneof({ weight: 2, arbitrary: fresh }, { weight: 2, arbitrary: resend }, { weight: 2, arbitrary: sharer }), { maxLength: 4 }),
  });
}
