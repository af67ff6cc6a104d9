import type { AttributeValue } from 'aws-lambda';
import fc from 'fast-check';
import { dynamoDbInbox, inbox, kafkaInbox, kinesisInbox } from '../../../lambda/inbox/index.js';
import type { ConsumerOptions } from '../../../lambda/inbox/index.js';
import { MAX_BODY_BYTES } from '../../../lambda/inbox/prepare/keys.js';
import { lambdaContext, sqsRecord } from '../../support/inbox.js';
import { kinesisRecord, nextDynamoDbSequenceNumber, nextSequenceNumber } from '../../support/streams.js';
import { INVALID_UTF8, MARKER, hostileJson, hostileText, invalidUtf8, isWellFormed, sqsText, wellFormed } from './hostile-values.js';
import type { Entry, Payload, PlanRules, RecordPlan } from './planned-case.js';

// The five ways Lambda delivers records to an inbox (SQS standard and FIFO, Kinesis, DynamoDB Streams, Kafka
// with and without a partial batch response), each as a model the adversarial suite drives: how a planned
// record becomes the record Lambda hands over, how the event is built, how the handler's answer is read
// (which records the event source mapping takes as done) and what it delivers next.

/** A record as built for one delivery: the message it carries (`token`), its place, and the raw record. */
export interface Built {
  /** The logical message: a producer's re-send carries its original's token. */
  readonly token: string;
  /** Distinct per built record of the case. */
  readonly copy: number;
  readonly entry: Entry['kind'];
  readonly plan: RecordPlan;
  /** The record as Lambda hands it over (null for a null record). */
  readonly raw: any;
  /** The id the source names it by (messageId, sequence number, `topic-partition@offset`); undefined without one. */
  readonly id: string | undefined;
  /** Its lane: FIFO group, shard, topic-partition; '' when unordered or placeless. */
  readonly lane: string;
  /** The producer's key it carries, when the case keys by producer keys. */
  readonly producerKey: string | number | undefined;
  /** For a record that reuses an id: the record whose id it carries. */
  readonly sharesIdWith: Built | undefined;
  /** SQS: its ApproximateReceiveCount. */
  readonly receiveCount: number;
}

/** How one invocation ended, as its event source mapping reads it. */
export type Answer =
  | { readonly kind: 'thrown'; readonly error: unknown }
  /** `acked`: the records the mapping takes as done. `foreign`: failure identifiers that name no record of the batch. */
  | { readonly kind: 'answered'; readonly acked: ReadonlySet<Built>; readonly foreign: readonly string[] };

/** The columns of a parked row the judge reads a token from. */
export interface ParkedColumns {
  readonly attributes: any;
  /** The record's payload, byte for byte (a DynamoDB change: its JSON). */
  readonly payload: Buffer;
}

/** What a record is built from: its plan, the message it carries, and what the case decided for it. */
export interface BuildRequest {
  readonly plan: RecordPlan;
  readonly token: string;
  readonly copy: number;
  readonly entry: Entry['kind'];
  /** Distinct per case, for ids. */
  readonly caseId: string;
  /** The producer's key it carries (a re-send: its original's), when the case keys by producer keys. */
  readonly key: string | number | undefined;
  /** The record whose id it reuses. */
  readonly shared?: Built | undefined;
}

/** How the source keys records by default and by the producer's key: what the oracle and the handler share. */
export type KeyRule = { readonly ok: string } | { readonly error: 'KeyError' | 'ParseError' };

export interface LambdaSource {
  /** The name in test titles. */
  readonly name: string;
  /** The AWS service, as the known-defect table names it. */
  readonly service: 'sqs' | 'kinesis' | 'dynamodb' | 'kafka';
  /** Records of one lane are applied in order, and a failure holds back the rest of its lane. */
  readonly ordered: boolean;
  /** A failure fails the whole invocation (Kafka without a partial batch response). */
  readonly failsWhole: boolean;
  readonly rules: PlanRules;
  /** A payload a healthy message has: for records that reuse an id. */
  readonly healthyPayload: fc.Arbitrary<Payload>;
  /** The largest payload the service carries, in bytes. */
  readonly limitBytes: number;
  /** Builds a planned record as Lambda hands it over. */
  build(request: BuildRequest): Built;
  /** The same record as the mapping delivers it again. */
  redelivered(record: Built): Built;
  /** The `key` option of the handler: undefined for the source's default, or what reads the producer's key. */
  keyOption(producerKeys: boolean): unknown;
  /** The source's handler with these options, as its factory makes it (what `parkedMessages(handler)` takes). */
  make(options: ConsumerOptions<any, any>): object;
  /** The handler with these options, invoked on a batch. */
  handler(options: ConsumerOptions<any, any>): (batch: readonly Built[]) => Promise<Answer>;
  /** The records of `batch` the mapping delivers next after `answer`. */
  next(batch: readonly Built[], answer: Answer): Built[];
  /** A generation's records in the order the handler sees them (Kafka: grouped by topic-partition). */
  order(records: readonly Built[]): Built[];
  /** The body text the source hands `parse`, or undefined when the record has none. */
  bodyText(record: Built): string | undefined;
  /** The key the handler claims, or why it has none. */
  keyOf(record: Built, producerKeys: boolean): KeyRule;
  /** The permanent error the source refuses the record's body with before parsing it, if any. */
  bodyError(record: Built): 'ParseError' | 'BodyTooLargeError' | undefined;
  /** Whether the default parse takes the body: 'no', 'yes', or 'either' (bytes that are not UTF-8: decoded or refused). */
  parses(record: Built): 'yes' | 'no' | 'either';
  /** The token a parked row carries (in its attributes, or for a DynamoDB change in its payload), when it carries one. */
  tokenOfParked(row: ParkedColumns): string | undefined;
}

/**
 * The logical message a raw record carries, where each source lets a record carry it besides its body: an
 * SQS message attribute, a Kinesis partition key, a DynamoDB key attribute, a Kafka key. A parked row keeps
 * it (in its attributes), and so does a record rebuilt for a replay or sent back by a redrive.
 */
export function carriedToken(raw: any): string | undefined {
  const kafkaKey = typeof raw?.key === 'string' ? Buffer.from(raw.key, 'base64').toString('utf8') : undefined;
  return raw?.messageAttributes?.['fuzz-token']?.stringValue ?? raw?.kinesis?.partitionKey ?? raw?.dynamodb?.Keys?.token?.S ?? kafkaKey;
}

/** The logical message a raw record carries: what the effects record. */
export function tokenOf(raw: unknown): string {
  const token = carriedToken(raw);
  if (token === undefined) throw new Error('the effect ran for a record that carries no message token');
  return token;
}

/** The fields every source fills the same way. */
function skeleton(request: BuildRequest, id: string | undefined, lane: string): Built {
  const { token, copy, entry, plan, key, shared } = request;
  return { token, copy, entry, plan, raw: undefined, id, lane, producerKey: key, sharesIdWith: shared, receiveCount: 1 };
}

// ---------------------------------------------------------------------------------------------------------
// Payloads

/** JSON texts of odd form: numbers JavaScript rounds or overflows, a prototype key, a duplicate key, whitespace around. */
const ODD_JSON = [
  '0',
  '-0',
  '1e400',
  '12345678901234567890123',
  'null',
  'true',
  `{"__proto__":{"polluted":"${MARKER}"}}`,
  `{"m":"${MARKER}","m":"twice"}`,
  `\t\n {"m":"${MARKER}"} \r\n`,
  `{"constructor":{"prototype":"${MARKER}"}}`,
];

const noSqsNonCharacters = (text: string) => text.replace(/[\ufffe\uffff]/g, '');

/** Texts a JSON string may hold on this source (JSON.stringify escapes NUL, controls and lone surrogates). */
const jsonStringText = (sqs: boolean) => (sqs ? hostileText().map(noSqsNonCharacters) : hostileText());

function payloads(options: { sqs: boolean; streams: boolean; limit: boolean }): fc.Arbitrary<Payload> {
  const text = jsonStringText(options.sqs);
  const raw = options.sqs ? sqsText(16) : hostileText(16);
  const odd = fc.oneof(
    text.map((value) => JSON.stringify(`${MARKER}${value}`)),
    fc.constantFrom(...ODD_JSON),
    fc.array(text, { maxLength: 3 }).map((items) => JSON.stringify([MARKER, ...items])),
  );
  const arbitraries: fc.WeightedArbitrary<Payload>[] = [
    { weight: 12, arbitrary: hostileJson(text).map((value): Payload => ({ kind: 'object', value })) },
    { weight: 2, arbitrary: odd.map((text): Payload => ({ kind: 'odd-json', text })) },
    { weight: 1, arbitrary: fc.constantFrom(100, 5_000, 20_000).map((depth): Payload => ({ kind: 'deep', depth })) },
    { weight: 2, arbitrary: raw.map((text): Payload => ({ kind: 'not-json', text: `${MARKER}${text} {` })) },
  ];
  if (options.streams) {
    arbitraries.push({ weight: 2, arbitrary: invalidUtf8.map((bytes): Payload => ({ kind: 'bytes', bytes })) });
    arbitraries.push({ weight: 1, arbitrary: fc.constant<Payload>({ kind: 'empty' }) });
  }
  if (options.limit)
    arbitraries.push({ weight: 1, arbitrary: fc.boolean().map((binary): Payload => ({ kind: 'at-limit', binary: binary && options.streams })) });
  if (options.sqs) arbitraries.push({ weight: 1, arbitrary: fc.constant<Payload>({ kind: 'over-limit' }) });
  return fc.oneof(...arbitraries);
}

const healthyObject = (sqs: boolean) => hostileJson(jsonStringText(sqs)).map((value): Payload => ({ kind: 'object', value }));

/** The JSON object of an `object` payload: the marker, the hostile value, and the key field when keys come from the body. */
function objectOf(value: unknown, keyField: string | number | undefined): Record<string, unknown> {
  return { m: MARKER, v: value, ...(keyField !== undefined ? { key: keyField } : {}) };
}

/** A payload as the producer's bytes. `keyField`: the producer's key, when it travels in the body. */
function payloadBytes(payload: Payload, limit: number, keyField: string | number | undefined): Buffer | null {
  switch (payload.kind) {
    case 'object':
      return Buffer.from(JSON.stringify(objectOf(payload.value, keyField)), 'utf8');
    case 'odd-json':
      return Buffer.from(payload.text, 'utf8');
    case 'deep':
      return Buffer.from(`${'['.repeat(payload.depth)}"${MARKER}"${']'.repeat(payload.depth)}`, 'utf8');
    case 'not-json':
      return Buffer.from(payload.text, 'utf8');
    case 'bytes':
      return Buffer.from(payload.bytes);
    case 'empty':
      return Buffer.alloc(0);
    case 'at-limit': {
      if (payload.binary) {
        const head = Buffer.from(`${MARKER} `, 'utf8');
        return Buffer.concat([head, Buffer.alloc(limit - head.length, INVALID_UTF8[4]![0]!)]);
      }
      const head = Buffer.byteLength(JSON.stringify(objectOf('', keyField)), 'utf8');
      return Buffer.from(JSON.stringify(objectOf('x'.repeat(limit - head), keyField)), 'utf8');
    }
    case 'over-limit': {
      const head = Buffer.byteLength(JSON.stringify(objectOf('', keyField)), 'utf8');
      return Buffer.from(JSON.stringify(objectOf('x'.repeat(limit + 1 - head), keyField)), 'utf8');
    }
    case 'tombstone':
      return null;
    case 'change':
      throw new Error('a DynamoDB change is not a byte payload');
  }
}

/** Whether JSON.parse takes the text. */
function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** Whether text decoded from these bytes is what they hold (they were UTF-8). */
const isUtf8 = (bytes: Buffer) => Buffer.from(bytes.toString('utf8'), 'utf8').equals(bytes);

/** Parse verdict of a stream's decoded bytes: JSON or not; when the bytes were not UTF-8, decoding them lossily or refusing them are both sound. */
function streamParses(bytes: Buffer | null): 'yes' | 'no' | 'either' {
  if (bytes === null) return 'yes';
  const parses = isJson(bytes.toString('utf8'));
  if (!isUtf8(bytes)) return parses ? 'either' : 'no';
  return parses ? 'yes' : 'no';
}

/** The checks of `checkKey` (lambda/inbox/prepare/keys.ts), as the documentation states them, for the oracle. */
export function keyRule(key: unknown): KeyRule {
  if (typeof key !== 'string' || key.length === 0) return { error: 'KeyError' };
  if (Buffer.byteLength(key, 'utf8') > 512) return { error: 'KeyError' };
  if (/[\u0000-\u001f\u007f]/.test(key)) return { error: 'KeyError' };
  // Issue 33, item 5: a key that is not well-formed Unicode is refused (today it collapses; see known-defects.ts).
  if (!isWellFormed(key)) return { error: 'KeyError' };
  return { ok: key };
}

/** A field key read from a body: a string, or a finite number as its text. */
function fieldKeyRule(body: unknown, path: readonly string[]): KeyRule {
  let value = body;
  for (const step of path) value = typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[step] : undefined;
  if (typeof value === 'number' && Number.isFinite(value)) value = String(value);
  if (typeof value !== 'string') return { error: 'KeyError' };
  return keyRule(value);
}

// ---------------------------------------------------------------------------------------------------------
// SQS

const SQS_QUEUE = 'arn:aws:sqs:us-east-1:123456789012:orders';
const SQS_LANES = ['g1', 'g2', 'g3'];

function sqs(fifo: boolean): LambdaSource {
  const rules: PlanRules = {
    lanes: fifo ? SQS_LANES.length : 1,
    payload: payloads({ sqs: true, streams: false, limit: true }),
    brokenShapes: ['no-id', 'null', 'wrong-type'],
  };
  const raw = (record: Built, receiveCount: number): any => {
    const { plan } = record;
    if (plan.shape === 'null') return null;
    const bytes = payloadBytes(plan.payload, MAX_BODY_BYTES, undefined)!;
    const built = sqsRecord({
      messageId: record.id ?? 'unused',
      body: bytes.toString('utf8'),
      fifo,
      ...(fifo ? { groupId: record.lane } : {}),
      receiveCount,
    });
    const attributes: Record<string, unknown> = { 'fuzz-token': { dataType: 'String', stringValue: record.token } };
    if (record.producerKey !== undefined) {
      // A String attribute cannot hold a lone surrogate (SQS refuses it): that producer sends a Binary key.
      attributes['idempotency-key'] =
        plan.key === 'surrogate'
          ? { dataType: 'Binary', binaryValue: Buffer.from(String(record.producerKey), 'utf8').toString('base64') }
          : { dataType: typeof record.producerKey === 'number' ? 'Number' : 'String', stringValue: String(record.producerKey) };
    }
    const shaped: any = { ...built, eventSourceARN: `${SQS_QUEUE}${fifo ? '.fifo' : ''}`, messageAttributes: attributes };
    if (plan.shape === 'no-id') delete shaped.messageId;
    if (plan.shape === 'wrong-type') shaped.body = plan.lane === 0 ? 42 : plan.lane === 1 ? null : { orderId: 'not a string' };
    return shaped;
  };
  const withRaw = (record: Omit<Built, 'raw'>, receiveCount: number): Built => {
    const partial = { ...record, raw: undefined } as Built;
    return { ...partial, raw: raw(partial, receiveCount) };
  };
  // SQS counts the deliveries: the same message, its ApproximateReceiveCount one higher.
  const redelivered = (record: Built): Built => withRaw({ ...record, receiveCount: record.receiveCount + 1 }, record.receiveCount + 1);
  return {
    name: fifo ? 'sqs fifo' : 'sqs standard',
    service: 'sqs',
    ordered: fifo,
    failsWhole: false,
    rules,
    healthyPayload: healthyObject(true),
    limitBytes: MAX_BODY_BYTES,
    build(request) {
      const { plan, shared } = request;
      const lane = fifo ? (shared?.lane ?? SQS_LANES[plan.lane]!) : '';
      const id = plan.shape === 'no-id' || plan.shape === 'null' ? undefined : (shared?.id ?? `m-${request.caseId}-${request.copy}`);
      return withRaw(skeleton(request, id, lane), 1);
    },
    redelivered,
    // 'auto' (the default) reads the idempotency-key attribute when there is one.
    keyOption: () => undefined,
    make: (options) => inbox(options),
    handler(options) {
      const handler = inbox(options);
      return async (batch) => {
        let response: { batchItemFailures: { itemIdentifier: string }[] };
        try {
          response = await handler({ Records: batch.map((record) => record.raw) }, lambdaContext());
        } catch (error) {
          return { kind: 'thrown', error };
        }
        const failed = new Set(response.batchItemFailures.map((failure) => failure.itemIdentifier));
        const ids = new Set(batch.map((record) => record.id));
        return {
          kind: 'answered',
          acked: new Set(batch.filter((record) => record.id === undefined || !failed.has(record.id))),
          foreign: [...failed].filter((id) => !ids.has(id)),
        };
      };
    },
    next: (batch, answer) => batch.filter((record) => answer.kind === 'thrown' || !answer.acked.has(record)).map(redelivered),
    order: (records) => [...records],
    bodyText(record) {
      const body = record.raw?.body;
      return typeof body === 'string' ? body : undefined;
    },
    keyOf(record) {
      const attribute = record.raw?.messageAttributes?.['idempotency-key'];
      // 'auto': a String (or Number) attribute's value, else the messageId. Issue 33, item 5: a Binary one is used or refused, never ignored.
      if (attribute?.dataType === 'Binary') return { error: 'KeyError' };
      if (attribute?.stringValue !== undefined) return keyRule(attribute.stringValue);
      return keyRule(record.raw?.messageId);
    },
    bodyError(record) {
      const body = record.raw?.body;
      if (typeof body !== 'string') return 'ParseError';
      return Buffer.byteLength(body, 'utf8') > MAX_BODY_BYTES ? 'BodyTooLargeError' : undefined;
    },
    parses: (record) => (isJson(record.raw.body) ? 'yes' : 'no'),
    tokenOfParked: (row) => carriedToken(row.attributes),
  };
}

// ---------------------------------------------------------------------------------------------------------
// The streams: restart points per lane

/**
 * A shard's records in sequence-number order, as Lambda reads them: the records that carry one are sorted
 * among the places they hold; one without stays where it is.
 */
function bySequenceNumber(records: readonly Built[], sequenceNumberOf: (record: Built) => string | undefined): Built[] {
  const numbered = records.filter((record) => sequenceNumberOf(record) !== undefined);
  const sorted = [...numbered].sort((a, b) => {
    const difference = BigInt(sequenceNumberOf(a)!) - BigInt(sequenceNumberOf(b)!);
    return difference < 0n ? -1 : difference > 0n ? 1 : 0;
  });
  return records.map((record) => (sequenceNumberOf(record) === undefined ? record : sorted.shift()!));
}

/** Records of the batch from each lane's restart point on; the whole batch after a throw. */
function fromRestartPoints(batch: readonly Built[], answer: Answer): Built[] {
  if (answer.kind === 'thrown') return [...batch];
  return batch.filter((record) => !answer.acked.has(record));
}

/**
 * Reads a sequence-number report as Lambda does: per shard (one per event), records before the first
 * reported sequence number are done, the rest come again.
 */
function sequenceNumberAnswer(batch: readonly Built[], response: { batchItemFailures: { itemIdentifier: string }[] }): Answer {
  const named = response.batchItemFailures.map((failure) => failure.itemIdentifier);
  const foreign = named.filter((id) => !batch.some((record) => record.id === id));
  const restart = batch.findIndex((record) => record.id !== undefined && named.includes(record.id));
  return { kind: 'answered', acked: new Set(restart === -1 ? batch : batch.slice(0, restart)), foreign };
}

/** Invokes a Kinesis or DynamoDB Streams handler on a batch, as one event of one shard, and reads its answer. */
function sequenceNumberHandler(handler: (event: any, context: ReturnType<typeof lambdaContext>) => Promise<any>) {
  return async (batch: readonly Built[]): Promise<Answer> => {
    try {
      return sequenceNumberAnswer(batch, await handler({ Records: batch.map((record) => record.raw) }, lambdaContext()));
    } catch (error) {
      return { kind: 'thrown', error };
    }
  };
}

const STREAM_LIMIT = 1024 * 1024;

// ---------------------------------------------------------------------------------------------------------
// Kinesis

const KINESIS_SHARD = 'shardId-000000000000';

const kinesis: LambdaSource = {
  name: 'kinesis',
  service: 'kinesis',
  ordered: true,
  failsWhole: false,
  rules: { lanes: 1, payload: payloads({ sqs: false, streams: true, limit: true }), brokenShapes: ['no-id', 'null', 'wrong-type'] },
  healthyPayload: healthyObject(false),
  limitBytes: STREAM_LIMIT,
  build(request) {
    const { plan, shared, token } = request;
    const sequenceNumber = shared?.raw?.kinesis?.sequenceNumber ?? nextSequenceNumber();
    const record = skeleton(request, plan.shape === 'no-id' || plan.shape === 'null' ? undefined : sequenceNumber, plan.shape === 'null' ? '' : KINESIS_SHARD);
    if (plan.shape === 'null') return { ...record, raw: null };
    const raw: any = kinesisRecord({ shard: KINESIS_SHARD, sequenceNumber, partitionKey: token });
    raw.kinesis.data = payloadBytes(plan.payload, STREAM_LIMIT, request.key)!.toString('base64');
    if (plan.shape === 'no-id') delete raw.kinesis.sequenceNumber;
    if (plan.shape === 'wrong-type') raw.kinesis.data = plan.lane % 2 === 0 ? 42 : null;
    return { ...record, raw: raw };
  },
  redelivered: (record) => record,
  keyOption: (producerKeys) => (producerKeys ? { field: 'key' } : undefined),
  make: (options) => kinesisInbox(options),
  handler: (options) => sequenceNumberHandler(kinesisInbox(options)),
  next: fromRestartPoints,
  order: (records) => bySequenceNumber(records, (record) => record.raw?.kinesis?.sequenceNumber),
  bodyText(record) {
    const data = record.raw?.kinesis?.data;
    return typeof data === 'string' ? Buffer.from(data, 'base64').toString('utf8') : undefined;
  },
  keyOf(record, producerKeys) {
    if (producerKeys) {
      const text = kinesis.bodyText(record);
      return text !== undefined && isJson(text) ? fieldKeyRule(JSON.parse(text), ['key']) : { error: 'KeyError' };
    }
    const sequenceNumber = record.raw?.kinesis?.sequenceNumber;
    return sequenceNumber === undefined ? { error: 'ParseError' } : keyRule(`${KINESIS_SHARD}:${sequenceNumber}`);
  },
  bodyError: (record) => (typeof record.raw?.kinesis?.data === 'string' ? undefined : 'ParseError'),
  parses: (record) => streamParses(Buffer.from(record.raw.kinesis.data, 'base64')),
  tokenOfParked: (row) => carriedToken(row.attributes?.record),
};

// ---------------------------------------------------------------------------------------------------------
// DynamoDB Streams

/** DynamoDB's largest item, 400 KB: the new image is padded to it. */
const DYNAMODB_LIMIT = 400 * 1024;

/** DynamoDB strings are UTF-8: no lone surrogate reaches a stream. NUL does. */
const dynamoText = hostileText(8).map(wellFormed);

/** Numbers as DynamoDB writes them, among them integers a JavaScript number cannot hold exactly. */
const DYNAMO_NUMBERS = ['0', '-0', '1E+125', '1E-130', '3.14', '12345678901234567890123', '9007199254740993', '-100'];

const attributeValue: fc.Arbitrary<AttributeValue> = fc.letrec<{ value: AttributeValue }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    dynamoText.map((S) => ({ S }) as AttributeValue),
    fc.constantFrom(...DYNAMO_NUMBERS).map((N) => ({ N }) as AttributeValue),
    fc.uint8Array({ maxLength: 6 }).map((bytes) => ({ B: Buffer.from(bytes).toString('base64') }) as AttributeValue),
    fc.boolean().map((BOOL) => ({ BOOL }) as AttributeValue),
    fc.constant({ NULL: true } as AttributeValue),
    fc.array(tie('value'), { maxLength: 3 }).map((L) => ({ L }) as AttributeValue),
    fc
      .dictionary(
        dynamoText.filter((name) => name.length > 0),
        tie('value'),
        { maxKeys: 3 },
      )
      .map((M) => ({ M }) as AttributeValue),
    fc.uniqueArray(dynamoText, { minLength: 1, maxLength: 3 }).map((SS) => ({ SS }) as AttributeValue),
    fc.constantFrom(['1', '2'], ['12345678901234567890123']).map((NS) => ({ NS: [...NS] }) as AttributeValue),
  ),
})).value;

const change = (atLimit: fc.Arbitrary<boolean>) =>
  fc
    .record({
      eventName: fc.constantFrom<'INSERT' | 'MODIFY' | 'REMOVE'>('INSERT', 'MODIFY', 'REMOVE'),
      image: fc.dictionary(fc.constantFrom('a', 'b', 'c', 'v'), attributeValue, { maxKeys: 3 }),
      atLimit,
    })
    .map((value): Payload => ({ kind: 'change', ...value, image: { ...value.image, m: { S: MARKER } as AttributeValue } }));

/** The unsafe numbers the default parse refuses: an integer a JavaScript number cannot hold exactly. */
function holdsUnsafeNumber(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(holdsUnsafeNumber);
  if (typeof value !== 'object' || value === null) return false;
  const attribute = value as Record<string, unknown>;
  const unsafe = (text: string) => {
    const number = Number(text);
    return !Number.isFinite(number) || (Number.isInteger(number) && !Number.isSafeInteger(number) && !/[.eE]/.test(text));
  };
  if (typeof attribute.N === 'string' && unsafe(attribute.N)) return true;
  if (Array.isArray(attribute.NS) && attribute.NS.some((text) => unsafe(text as string))) return true;
  return Object.values(attribute).some(holdsUnsafeNumber);
}

const dynamodb: LambdaSource = {
  name: 'dynamodb',
  service: 'dynamodb',
  ordered: true,
  failsWhole: false,
  rules: {
    lanes: 1,
    payload: change(fc.oneof({ weight: 20, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) })),
    brokenShapes: ['no-id', 'null', 'wrong-type'],
  },
  healthyPayload: change(fc.constant(false)),
  limitBytes: DYNAMODB_LIMIT,
  build(request) {
    const { plan, shared, token } = request;
    // DynamoDB strings are UTF-8: a key with a lone surrogate reaches the stream with U+FFFD in its place.
    const key = typeof request.key === 'string' ? wellFormed(request.key) : request.key;
    const sequenceNumber = shared?.raw?.dynamodb?.SequenceNumber ?? nextDynamoDbSequenceNumber();
    // One batch comes from one shard, which the records do not name: the inbox takes the whole batch as one lane.
    const record = { ...skeleton(request, plan.shape === 'no-id' || plan.shape === 'null' ? undefined : sequenceNumber, 'shard'), producerKey: key };
    if (plan.shape === 'null') return { ...record, raw: null };
    const payload = plan.payload as Extract<Payload, { kind: 'change' }>;
    const image = payload.atLimit ? { ...payload.image, pad: { S: 'x'.repeat(DYNAMODB_LIMIT - 1024) } as AttributeValue } : payload.image;
    const keys: Record<string, AttributeValue> = { token: { S: token } as AttributeValue };
    if (key !== undefined) keys.key = (typeof key === 'number' ? { N: String(key) } : { S: key }) as AttributeValue;
    const raw: any = {
      eventID: shared?.raw?.eventID ?? `${request.caseId}-${request.copy}`,
      eventName: payload.eventName,
      eventVersion: '1.1',
      eventSource: 'aws:dynamodb',
      awsRegion: 'us-east-1',
      dynamodb: {
        ApproximateCreationDateTime: 1_796_000_000,
        Keys: keys,
        ...(payload.eventName !== 'REMOVE' ? { NewImage: { ...keys, ...image } } : {}),
        ...(payload.eventName !== 'INSERT' ? { OldImage: { ...keys, ...image } } : {}),
        SequenceNumber: sequenceNumber,
        SizeBytes: 59,
        StreamViewType: 'NEW_AND_OLD_IMAGES',
      },
      eventSourceARN: 'arn:aws:dynamodb:us-east-1:123456789012:table/orders/stream/2026-11-30T00:00:00.000',
    };
    if (plan.shape === 'no-id') delete raw.dynamodb.SequenceNumber;
    if (plan.shape === 'wrong-type') raw.dynamodb.NewImage = { ...keys, odd: { X: 'a type DynamoDB never sends' } };
    return { ...record, raw: raw };
  },
  redelivered: (record) => record,
  keyOption: (producerKeys) => (producerKeys ? { field: 'keys.key' } : undefined),
  make: (options) => dynamoDbInbox(options),
  handler: (options) => sequenceNumberHandler(dynamoDbInbox(options)),
  next: fromRestartPoints,
  order: (records) => bySequenceNumber(records, (record) => record.raw?.dynamodb?.SequenceNumber),
  bodyText(record) {
    const change = record.raw?.dynamodb;
    if (typeof change !== 'object' || change === null) return undefined;
    return JSON.stringify({ eventName: record.raw.eventName, Keys: change.Keys, NewImage: change.NewImage, OldImage: change.OldImage });
  },
  keyOf(record, producerKeys) {
    if (!producerKeys) return keyRule(record.raw?.eventID);
    // `{ field }` walks the change as the default parse unmarshals it: a change it refuses has no fields.
    if (dynamodb.bodyError(record) === undefined && dynamodb.parses(record) === 'no') return { error: 'KeyError' };
    const key = record.raw?.dynamodb?.Keys?.key;
    return key === undefined ? { error: 'KeyError' } : fieldKeyRule({ key: key.S ?? (key.N !== undefined ? Number(key.N) : undefined) }, ['key']);
  },
  bodyError: (record) => (typeof record.raw?.dynamodb === 'object' && record.raw.dynamodb !== null ? undefined : 'ParseError'),
  parses(record) {
    if (record.plan.shape === 'wrong-type') return 'no';
    const change = record.raw.dynamodb;
    return [change.Keys, change.NewImage, change.OldImage].some(holdsUnsafeNumber) ? 'no' : 'yes';
  },
  // The parked record keeps no key nor images: the payload column holds the change's JSON (docs/parked-messages.md).
  tokenOfParked: (row) => (row.payload.length === 0 ? undefined : (JSON.parse(row.payload.toString('utf8')) as { Keys?: any }).Keys?.token?.S),
};

// ---------------------------------------------------------------------------------------------------------
// Kafka

const KAFKA_LANES = ['orders-0', 'orders-1', 'payments-0'];
/** A lane's first offset: a batch crosses 99 to 100, so offset order differs from text order. */
const FIRST_OFFSET = 98;
/** MSK's default largest message, about 1 MiB. */
const KAFKA_LIMIT = 1024 * 1024;

function kafka(partial: boolean): LambdaSource {
  const offsets = new Map<string, number>();
  const source: LambdaSource = {
    name: partial ? 'kafka' : 'kafka without partial response',
    service: 'kafka',
    ordered: true,
    failsWhole: !partial,
    rules: {
      lanes: KAFKA_LANES.length,
      payload: fc.oneof(
        { weight: 12, arbitrary: payloads({ sqs: false, streams: true, limit: true }) },
        { weight: 1, arbitrary: fc.constant<Payload>({ kind: 'tombstone' }) },
      ),
      brokenShapes: ['no-id', 'null', 'wrong-type'],
    },
    healthyPayload: healthyObject(false),
    limitBytes: KAFKA_LIMIT,
    build(request) {
      const { plan, shared, token, key } = request;
      const lane = shared?.lane || KAFKA_LANES[plan.lane]!;
      // Offsets grow for the whole run: two cases (two events of one handler) never share one by chance.
      const offset = shared?.raw?.offset ?? offsets.get(lane) ?? FIRST_OFFSET;
      if (shared === undefined) offsets.set(lane, offset + 1);
      const placed = plan.shape !== 'no-id' && plan.shape !== 'null';
      const record = skeleton(request, placed ? `${lane}@${offset}` : undefined, placed ? lane : '');
      if (plan.shape === 'null') return { ...record, raw: null };
      const cut = lane.lastIndexOf('-');
      // A header carries bytes: the analogue of a lone surrogate is a byte that is not UTF-8.
      const headerBytes =
        key === undefined ? undefined : [...Buffer.from(String(key).replace(/\ud800$/, ''), 'utf8'), ...(plan.key === 'surrogate' ? [0xff] : [])];
      const value = payloadBytes(plan.payload, KAFKA_LIMIT, undefined);
      const raw: any = {
        topic: lane.slice(0, cut),
        partition: Number(lane.slice(cut + 1)),
        offset,
        timestamp: 1_796_000_000_000,
        timestampType: 'CREATE_TIME',
        key: Buffer.from(token, 'utf8').toString('base64'),
        value: value === null ? null : value.toString('base64'),
        headers: [{ 'content-type': [...Buffer.from('application/json')] }, ...(headerBytes ? [{ 'idempotency-key': headerBytes }] : [])],
      };
      if (plan.shape === 'no-id') delete raw.offset;
      if (plan.shape === 'wrong-type') raw.value = 42;
      return { ...record, raw: raw };
    },
    redelivered: (record) => record,
    keyOption: (producerKeys) => (producerKeys ? { header: 'idempotency-key' } : undefined),
    make: (options) => kafkaInbox({ ...options, reportBatchItemFailures: partial }),
    handler(options) {
      const handler = kafkaInbox({ ...options, reportBatchItemFailures: partial });
      return async (batch) => {
        let response: { batchItemFailures: { itemIdentifier: { partition: string; offset: number } }[] };
        try {
          response = await handler(kafkaEventOf(batch), lambdaContext());
        } catch (error) {
          return { kind: 'thrown', error };
        }
        const restarts = new Map(response.batchItemFailures.map(({ itemIdentifier }) => [itemIdentifier.partition, itemIdentifier.offset]));
        const foreign = [...restarts]
          .filter(([lane, offset]) => !batch.some((record) => record.lane === lane && record.raw?.offset === offset))
          .map(([lane, offset]) => `${lane}@${offset}`);
        const acked = batch.filter((record) => !restarts.has(record.lane) || record.raw.offset < restarts.get(record.lane)!);
        return { kind: 'answered', acked: new Set(acked), foreign };
      };
    },
    next: fromRestartPoints,
    // Grouped by topic-partition as the event lists them, each in offset order (a record without one stays in place).
    order: (records) => {
      const groups = new Map<string, Built[]>();
      for (const record of records) groups.set(kafkaGroup(record), [...(groups.get(kafkaGroup(record)) ?? []), record]);
      const offsetOf = (record: Built) => (Number.isInteger(record.raw?.offset) ? String(record.raw.offset) : undefined);
      return [...groups.values()].flatMap((group) => bySequenceNumber(group, offsetOf));
    },
    bodyText(record) {
      const value = record.raw?.value;
      return typeof value === 'string' ? Buffer.from(value, 'base64').toString('utf8') : value === null || value === undefined ? '' : undefined;
    },
    keyOf(record, producerKeys) {
      if (!producerKeys) return keyRule(record.id);
      const header = (record.raw?.headers ?? []).find((entry: Record<string, number[]>) => 'idempotency-key' in entry)?.['idempotency-key'];
      if (header === undefined) return { error: 'KeyError' };
      // Decoded strictly: a header key that is not UTF-8 is refused, never read with U+FFFD in its place.
      return isUtf8(Buffer.from(header)) ? keyRule(Buffer.from(header).toString('utf8')) : { error: 'KeyError' };
    },
    bodyError(record) {
      // A record that is no object (null) has no value for what it is, not as a tombstone.
      if (typeof record.raw !== 'object' || record.raw === null) return 'ParseError';
      const value = record.raw.value;
      return value === null || value === undefined || typeof value === 'string' ? undefined : 'ParseError';
    },
    parses: (record) => (record.raw?.value === null || record.raw?.value === undefined ? 'yes' : streamParses(Buffer.from(record.raw.value, 'base64'))),
    tokenOfParked: (row) => carriedToken(row.attributes?.record),
  };
  return source;
}

/** The topic-partition an event lists a record under: its own, or for a broken record the one it was planned in. */
const kafkaGroup = (record: Built) => record.lane || KAFKA_LANES[record.plan.lane]!;

/** An MSK event of the batch, grouped by topic-partition in batch order as Lambda groups them. */
function kafkaEventOf(batch: readonly Built[]) {
  const grouped: Record<string, unknown[]> = {};
  for (const record of batch) (grouped[kafkaGroup(record)] ??= []).push(record.raw);
  return {
    eventSource: 'aws:kafka',
    eventSourceArn: 'arn:aws:kafka:us-east-1:123456789012:cluster/orders/abcd1234-0123-4567-89ab-cdef01234567-1',
    bootstrapServers: 'b-1.orders.abc123.c2.kafka.us-east-1.amazonaws.com:9098',
    records: grouped,
  } as never;
}

/** Every way Lambda delivers records to an inbox. */
export const LAMBDA_SOURCES: readonly LambdaSource[] = [sqs(false), sqs(true), kinesis, dynamodb, kafka(true), kafka(false)];
