import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InboxError, inbox, kafkaHeaders, kafkaInbox } from '../../../lambda/inbox/index.js';
import { UnexpectedEventError } from '../../../lambda/inbox/errors.js';
import type { InboxMessage, KafkaInboxOptions } from '../../../lambda/inbox/index.js';
import type { KafkaRecord } from '../../../lambda/inbox/sources/kafka.js';
import type { ParkedMessage } from '../../../lambda/inbox/parked/store.js';
import { inboxFixture, lambdaContext, recordingLogger, recordingMetrics, sqsRecord } from '../../support/inbox.js';
import type { InboxFixture } from '../../support/inbox.js';
import { kafkaEvent, kafkaRecord } from '../../support/streams.js';
import { parkedMessages } from '../../../lambda/inbox/parked/parking.js';

// What kafkaInbox (and inbox(), through the event checks they share) makes of events and records Lambda
// would not send as they are: hand-built test events, a misconfigured trigger, a record missing its place
// in the topic. Each refusal is asserted word for word: its text is the only guide its reader gets.

type Payment = { id: string; fail?: boolean } | null;

let db: InboxFixture;
beforeAll(async () => {
  db = await inboxFixture('kafka-edges');
});
afterAll(async () => db.close());

let run = 0;
function make(extra: Partial<KafkaInboxOptions<Payment>> = {}) {
  const consumer = `kafka-edges-${run++}`;
  const logger = recordingLogger();
  const seen: InboxMessage<Payment, KafkaRecord>[] = [];
  const handler = kafkaInbox<Payment>({
    consumer,
    database: db.target,
    logger,
    metrics: recordingMetrics(),
    reportBatchItemFailures: true,
    apply: async (_, message) => {
      if (message.body?.fail) throw new Error(`${message.body.id} fails`);
      seen.push(message);
    },
    ...extra,
  });
  /** The keys this consumer claimed: what committed. */
  const claimed = async () =>
    (await db.query<{ message_id: string }>('SELECT message_id FROM inbox.consumed_message WHERE consumer_name = $1 ORDER BY message_id', [consumer])).map(
      (row) => row.message_id,
    );
  /** The warnings logged, each with its fields. */
  const warnings = () => logger.lines.filter((line) => line.level === 'warn').map((line) => ({ message: line.message, ...(line.extra[0] as object) }));
  return { handler, seen, claimed, warnings };
}

/** What a handler's promise rejected with; undefined if it resolved. */
const rejection = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error as Error,
  );

/** A Kafka record with `field` taken out, as a malformed test event would carry it. */
function without(record: KafkaRecord, field: keyof KafkaRecord): KafkaRecord {
  const copy = { ...record };
  delete copy[field];
  return copy;
}

/** What the parked table kept of a message, without its timestamps and row id. */
const keptOf = ({ sqsMessageId, key, body, errorClass, errorMessage, attributes }: ParkedMessage) => ({
  sqsMessageId,
  key,
  body,
  errorClass,
  errorMessage,
  attributes,
});

const NO_PLACE_KEY_ERROR = { name: 'KeyError', message: 'the topic, partition and offset gave an empty key; every message needs a non-empty idempotency key' };
const NO_PLACE_REFUSAL =
  'a record that did not commit has no topic, partition or offset, so Lambda cannot resume from it; failing the whole batch so it is delivered again';

describe('kafkaInbox: events that are not Kafka events', () => {
  const kafkaRefusal = (got: string) =>
    `kafkaInbox() handles Kafka events (Amazon MSK or self-managed), which carry "records" keyed by topic-partition; ${got} ` +
    "Check the function's trigger (an MSK or self-managed Kafka event source mapping), or build test events as Lambda does.";

  it.each([
    ['null', null, 'got null.'],
    ['a string', 'records', 'got string.'],
    ['an empty object', {}, 'got an empty object.'],
    ['an SQS event', { Records: [sqsRecord()] }, 'got "Records" of type array.'],
    [
      'an MSK event whose "records" is null',
      { eventSource: 'aws:kafka', records: null },
      'got "records" of type null. It looks like an event from an Amazon MSK topic.',
    ],
    ['"records" that is an array', { records: [kafkaRecord({ offset: 1 })] }, 'got "records" of type array.'],
    // Lambda's events are JSON; the check still does not let a callable through on its "records" alone.
    ['a function carrying "records"', Object.assign(() => {}, { records: {} }), 'got function.'],
    // Only an event object's eventSource is read for the hint.
    ['a function carrying an MSK eventSource', Object.assign(() => {}, { eventSource: 'aws:kafka' }), 'got function.'],
  ])('refuses %s before any record runs, naming what arrived and the trigger to check', async (_, event, got) => {
    const { handler, claimed } = make();
    const error = await rejection(handler(event as never, lambdaContext()));
    expect(error).toBeInstanceOf(UnexpectedEventError);
    expect(error!.message).toBe(kafkaRefusal(got));
    expect(await claimed()).toEqual([]);
  });

  it.each([
    ['null', null, 'null'],
    ['an object', { offset: 1 }, 'object'],
  ])('refuses a topic-partition whose records are %s, applying none of the others', async (_, list, described) => {
    const { handler, seen, claimed } = make();
    const event = {
      ...kafkaEvent([kafkaRecord({ partition: 0, offset: 1, body: { id: 'a' } })]),
      records: { 'orders-0': [kafkaRecord({ partition: 0, offset: 1, body: { id: 'a' } })], 'orders-1': list },
    };
    const error = await rejection(handler(event as never, lambdaContext()));
    expect(error).toBeInstanceOf(UnexpectedEventError);
    expect(error!.message).toBe(`kafkaInbox(): records["orders-1"] is ${described}, not an array of records; build test events as Lambda does`);
    expect(seen).toEqual([]);
    expect(await claimed()).toEqual([]);
  });
});

describe('kafkaInbox: its options', () => {
  it('refuses the SQS-only options, naming kafkaInbox() in the error', () => {
    expect(() => kafkaInbox({ consumer: 'k', database: db.target, apply: async () => {}, fifo: { onFailure: 'stop-batch' } } as never)).toThrow(
      /inbox option "fifo": is not an option of kafkaInbox\(\)/,
    );
  });
});

describe('kafkaInbox: records without their place in the topic', () => {
  const good = () => kafkaRecord({ partition: 1, offset: 4, body: { id: 'good' } });
  const placeless: [string, () => KafkaRecord][] = [
    ['no topic', () => without(kafkaRecord({ offset: 1, body: { id: 'bad' } }), 'topic')],
    ['an empty topic', () => kafkaRecord({ topic: '', offset: 1, body: { id: 'bad' } })],
    ['a topic that is not a string', () => ({ ...kafkaRecord({ offset: 1, body: { id: 'bad' } }), topic: 7 as never })],
    ['no partition', () => without(kafkaRecord({ offset: 1, body: { id: 'bad' } }), 'partition')],
    ['a fractional partition', () => kafkaRecord({ partition: 0.5, offset: 1, body: { id: 'bad' } })],
    ['no offset', () => without(kafkaRecord({ offset: 1, body: { id: 'bad' } }), 'offset')],
  ];

  it.each(placeless)('fails the whole batch when a record with %s did not commit, after committing the rest', async (_, makeBad) => {
    const { handler, seen, claimed, warnings } = make();
    const error = await rejection(handler(kafkaEvent([good(), makeBad()]), lambdaContext()));
    expect(error).toBeInstanceOf(InboxError);
    expect(error!.message).toBe(NO_PLACE_REFUSAL);
    expect(seen.map((m) => m.body?.id)).toEqual(['good']);
    expect(await claimed()).toEqual(['orders-1@4']);
    expect(warnings()).toEqual([{ message: 'record failed; Lambda will deliver it again', record: undefined, error: NO_PLACE_KEY_ERROR }]);
  });

  it.each([
    ['null', null],
    ['a number', 7],
  ])('fails a record that is %s for what it is, not as a tombstone, and the whole batch, since it has no place', async (_, record) => {
    const { handler, seen, warnings } = make();
    const event = { ...kafkaEvent([good()]), records: { 'orders-1': [good()], 'orders-0': [record] } };
    const error = await rejection(handler(event as never, lambdaContext()));
    expect(error).toBeInstanceOf(InboxError);
    expect(error!.message).toBe(NO_PLACE_REFUSAL);
    expect(seen.map((m) => m.body?.id)).toEqual(['good']);
    const what = record === null ? 'null' : typeof record;
    expect(warnings()).toEqual([
      {
        message: 'record failed; Lambda will deliver it again',
        record: undefined,
        error: { name: 'ParseError', message: `the record is ${what}, not an object; Kafka records from Lambda are always objects` },
      },
    ]);
  });

  it('parks a null record keyed by a header for what it is, where reading its header threw a raw TypeError that failed the whole batch', async () => {
    const { handler, seen, warnings } = make({ key: { header: 'idempotency-key' }, onPermanentError: 'park' });
    const keyed = { ...kafkaRecord({ offset: 7, body: { id: 'keyed' } }), headers: [{ 'idempotency-key': [...Buffer.from('k-7')] }] };
    const event = { ...kafkaEvent([keyed]), records: { 'orders-0': [keyed, null] } };

    expect(await handler(event as never, lambdaContext())).toEqual({ batchItemFailures: [] });

    expect(seen.map((m) => m.key)).toEqual(['k-7']);
    expect(warnings()).toEqual([
      {
        message: 'record parked',
        record: undefined,
        error: { name: 'ParseError', message: 'the record is null, not an object; Kafka records from Lambda are always objects' },
      },
    ]);
  });

  it('fails the whole batch when one failed partition has no place, though another failed partition could be resumed', async () => {
    const { handler, claimed } = make();
    const records = [
      without(kafkaRecord({ offset: 1, body: { id: 'bad' } }), 'topic'),
      kafkaRecord({ partition: 2, offset: 9, body: { id: 'late', fail: true } }),
      good(),
    ];
    const error = await rejection(handler(kafkaEvent(records), lambdaContext()));
    expect(error!.message).toBe(NO_PLACE_REFUSAL);
    expect(await claimed()).toEqual(['orders-1@4']);
  });

  it('without a partial batch response, names the placeless restart point plainly when failing the invocation', async () => {
    const { handler, claimed } = make({ reportBatchItemFailures: false });
    const error = await rejection(handler(kafkaEvent([good(), without(kafkaRecord({ offset: 1, body: { id: 'bad' } }), 'offset')]), lambdaContext()));
    expect(error).toBeInstanceOf(InboxError);
    expect(error!.message).toBe(
      '1 topic-partition(s) of the batch did not commit (first: a record without topic, partition or offset); ' +
        'failing the invocation so Lambda delivers the batch again, since this event source mapping reads no partial batch response ' +
        '(set reportBatchItemFailures, on a provisioned-mode mapping, to resume from the failed offsets instead). Records that committed are duplicates then.',
    );
    expect(await claimed()).toEqual(['orders-1@4']);
  });

  it('parks a placeless record alone with the whole record (its value once, as the payload), and the batch succeeds', async () => {
    const { handler, claimed } = make({ onPermanentError: 'park' });
    const bad = without(kafkaRecord({ offset: 1, body: { id: 'bad' } }), 'partition');
    expect(await handler(kafkaEvent([good(), bad]), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(await claimed()).toEqual(['orders-1@4']);
    const [parked] = await parkedMessages(handler).list();
    expect(keptOf(parked!)).toEqual({
      sqsMessageId: '',
      key: null,
      body: '{"id":"bad"}',
      errorClass: 'KeyError',
      errorMessage: NO_PLACE_KEY_ERROR.message,
      attributes: { record: { ...bad, value: '' } },
    });
    expect(Buffer.from(parked!.payload).toString('base64')).toBe(bad.value);
  });

  it('applies a placeless record under a producer key, with no id and an empty group', async () => {
    const { handler, seen } = make({ key: { field: 'id' } });
    const bad = without(kafkaRecord({ offset: 1, body: { id: 'p-7' } }), 'topic');
    expect(await handler(kafkaEvent([bad]), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(seen.map(({ key, id, groupId }) => ({ key, id, groupId }))).toEqual([{ key: 'p-7', id: undefined, groupId: '' }]);
  });
});

describe('kafkaInbox: record values', () => {
  const NOT_BASE64 = "the record's value is number, not a base64 string; Kafka records from Lambda always carry one (or none, for a tombstone)";

  it('reads a record without a value as a tombstone: its body is null', async () => {
    const { handler, seen } = make();
    expect(await handler(kafkaEvent([without(kafkaRecord({ offset: 3, body: { id: 'gone' } }), 'value')]), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(seen.map(({ key, body }) => ({ key, body }))).toEqual([{ key: 'orders-0@3', body: null }]);
  });

  it('fails alone a record whose value is not a base64 string, naming it by topic-partition@offset', async () => {
    const { handler, seen, warnings } = make();
    const records = [
      kafkaRecord({ offset: 1, body: { id: 'a' } }),
      { ...kafkaRecord({ offset: 2 }), value: 42 as never },
      kafkaRecord({ partition: 1, offset: 1, body: { id: 'x' } }),
    ];
    expect(await handler(kafkaEvent(records), lambdaContext())).toEqual({ batchItemFailures: [{ itemIdentifier: { partition: 'orders-0', offset: 2 } }] });
    expect(seen.map((m) => m.body?.id).sort()).toEqual(['a', 'x']);
    expect(warnings()).toEqual([
      { message: 'record failed; Lambda will deliver it again', record: 'orders-0@2', error: { name: 'ParseError', message: NOT_BASE64 } },
    ]);
  });

  it('parks a record whose value is not a base64 string with an empty body', async () => {
    const { handler } = make({ onPermanentError: 'park' });
    const odd = { ...kafkaRecord({ offset: 2 }), value: 42 as never };
    expect(await handler(kafkaEvent([odd]), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect((await parkedMessages(handler).list()).map(keptOf)).toEqual([
      { sqsMessageId: 'orders-0@2', key: 'orders-0@2', body: '', errorClass: 'ParseError', errorMessage: NOT_BASE64, attributes: { record: odd } },
    ]);
  });
});

describe('kafkaInbox: header keys', () => {
  it('fails alone a record without headers and one whose header is empty, naming the header', async () => {
    const { handler, seen, warnings } = make({ key: { header: 'idempotency-key' } });
    const headerless = without(kafkaRecord({ offset: 2, body: { id: 'b' } }), 'headers');
    const records = [
      kafkaRecord({ offset: 1, body: { id: 'a' }, headers: { 'idempotency-key': 'a' } }),
      headerless,
      kafkaRecord({ partition: 1, offset: 5, body: { id: 'x' }, headers: { 'idempotency-key': '' } }),
    ];
    expect(kafkaHeaders(headerless)).toEqual({});
    expect(await handler(kafkaEvent(records), lambdaContext())).toEqual({
      batchItemFailures: [{ itemIdentifier: { partition: 'orders-0', offset: 2 } }, { itemIdentifier: { partition: 'orders-1', offset: 5 } }],
    });
    expect(seen.map((m) => m.key)).toEqual(['a']);
    expect(warnings()).toEqual([
      {
        message: 'record failed; Lambda will deliver it again',
        record: 'orders-0@2',
        error: { name: 'KeyError', message: 'header "idempotency-key" is missing; the producer must set it on every record' },
      },
      {
        message: 'record failed; Lambda will deliver it again',
        record: 'orders-1@5',
        error: { name: 'KeyError', message: 'header "idempotency-key" gave an empty key; every message needs a non-empty idempotency key' },
      },
    ]);
  });
});

describe('kafkaInbox: header keys that are not UTF-8 text', () => {
  /** A record whose idempotency-key header holds these bytes, as Lambda delivers Java's signed bytes. */
  const withHeaderBytes = (offset: number, bytes: number[]) => ({
    ...kafkaRecord({ offset, body: { id: `h${offset}` } }),
    headers: [{ 'idempotency-key': bytes.map((byte) => (byte > 127 ? byte - 256 : byte)) }],
  });

  it('refuses bytes that are not UTF-8 as a KeyError, where they decoded to U+FFFD and two keys became one claim', async () => {
    const { handler, seen, claimed, warnings } = make({ key: { header: 'idempotency-key' } });
    // 'k' then 0xFF, and 'k' then 0xFE: two keys, both "k\uFFFD" once decoded leniently.
    const records = [withHeaderBytes(1, [0x6b, 0xff]), withHeaderBytes(2, [0x6b, 0xfe])];
    expect(await handler(kafkaEvent(records), lambdaContext())).toEqual({ batchItemFailures: [{ itemIdentifier: { partition: 'orders-0', offset: 1 } }] });
    expect(seen).toEqual([]);
    expect(await claimed()).toEqual([]);
    expect(warnings()).toEqual([
      {
        message: 'record failed; Lambda will deliver it again',
        record: 'orders-0@1',
        error: {
          name: 'KeyError',
          message: 'header "idempotency-key" is not UTF-8 text, so it is no key. Fix: have the producer send the key as UTF-8 text, e.g. its hex or base64',
        },
      },
    ]);
  });

  it('takes a key of UTF-8 bytes as it is, a leading byte order mark included, and the last of a header sent twice', async () => {
    const { handler, seen } = make({ key: { header: 'idempotency-key' } });
    const bom = withHeaderBytes(1, [0xef, 0xbb, 0xbf, ...Buffer.from('é-1', 'utf8')]);
    const twice = {
      ...kafkaRecord({ offset: 2, body: { id: 'h2' } }),
      headers: [
        { 'idempotency-key': [...Buffer.from('first')] },
        { 'idempotency-key': [...Buffer.from('last')] },
        { 'trace-id': [...Buffer.from('t-2')] },
      ] as Record<string, number[]>[],
    };
    expect(await handler(kafkaEvent([bom, twice]), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(seen.map((m) => m.key)).toEqual(['\ufeffé-1', 'last']);
  });
});

describe('kafkaInbox: redeliveries', () => {
  it('looks a redelivered batch up in one call when this instance met its offsets, since Kafka counts no deliveries', async () => {
    const { handler } = make();
    const records = [kafkaRecord({ offset: 1, body: { id: 'a' } }), kafkaRecord({ partition: 1, offset: 1, body: { id: 'x' } })];
    await handler(kafkaEvent(records), lambdaContext());
    db.server.stats.reset();
    expect(await handler(kafkaEvent(records), lambdaContext())).toEqual({ batchItemFailures: [] });
    // One lookup settles both duplicates: no transaction at all.
    expect(db.server.stats.total()).toBe(1);
  });
});

describe('inbox(): events that are not SQS events', () => {
  const sqsRefusal = (got: string) =>
    `inbox() handles SQS events, which carry a "Records" array; ${got} ` +
    "Check the function's trigger (an SQS event source mapping with ReportBatchItemFailures), or build test events as Lambda does.";

  it.each([
    ['null', null, 'got null.'],
    ['no event at all', undefined, 'got undefined.'],
    ['"Records" that is null', { Records: null }, 'got "Records" of type null.'],
    ['"Records" that is an object', { Records: { 0: sqsRecord() } }, 'got "Records" of type object.'],
    ['a function carrying "Records"', Object.assign(() => {}, { Records: [] }), 'got function.'],
    [
      'an API Gateway event, naming its first five fields',
      { resource: '/orders', path: '/orders', httpMethod: 'POST', headers: {}, queryStringParameters: null, body: '{}' },
      'got an object with "resource", "path", "httpMethod", "headers", "queryStringParameters".',
    ],
  ])('refuses %s before any record runs', async (_, event, got) => {
    const consumer = `sqs-edges-${run++}`;
    const handler = inbox({ consumer, database: db.target, logger: recordingLogger(), metrics: recordingMetrics(), apply: async () => {} });
    const error = await rejection(handler(event as never, lambdaContext()));
    expect(error).toBeInstanceOf(UnexpectedEventError);
    expect(error!.message).toBe(sqsRefusal(got));
    expect(await db.query('SELECT 1 FROM inbox.consumed_message WHERE consumer_name = $1', [consumer])).toEqual([]);
  });
});
