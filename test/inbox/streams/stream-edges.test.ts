import type { DynamoDBRecord, KinesisStreamRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dynamoDbInbox, kafkaInbox, kinesisInbox } from '../../../lambda/inbox/index.js';
import type { DynamoDbChange, DynamoDbInboxOptions, InboxMessage, KafkaInboxOptions, KinesisInboxOptions } from '../../../lambda/inbox/index.js';
import { inboxFixture, lambdaContext, recordingLogger, recordingMetrics } from '../../support/inbox.js';
import type { InboxFixture } from '../../support/inbox.js';
import { dynamoDbEvent, dynamoDbRecord, kafkaEvent, kafkaRecord, kinesisEvent, kinesisRecord } from '../../support/streams.js';
import { parkedMessages } from '../../../lambda/inbox/parked/parking.js';

// Records no event source mapping sends (a hand-built or corrupted event), key options at their edges, and
// the failure report of several shards: each malformed record fails alone, with the words of its fault.

type Page = { page: string; fail?: boolean };
/** A record as a hand-built or corrupted event may carry it: any field missing, null, or of another type. */
type Loose = { [field: string]: any };

const NO_RESTART = 'a record that did not commit has no sequence number, so Lambda cannot restart from it; failing the whole batch so it is delivered again';
const NO_SEQUENCE_NUMBER = 'the record has no kinesis.sequenceNumber; Kinesis records from Lambda always carry one';
const NO_DYNAMODB = 'the record has no dynamodb object; DynamoDB Streams records from Lambda always carry one';
const noData = (what: string) => `the record has no kinesis.data string (it is ${what}); Kinesis records from Lambda always carry one`;
const EMPTY_EVENT_ID = 'eventID gave an empty key; every message needs a non-empty idempotency key';

const SHARD_0 = 'shardId-000000000000';
const SHARD_1 = 'shardId-000000000001';
const SHARD_2 = 'shardId-000000000002';

let db: InboxFixture;
beforeAll(async () => {
  db = await inboxFixture('stream-edges');
});
afterAll(async () => db.close());

/** `record` after `edit`, which changes it in place or returns what replaces it (null, for a null record). */
function edited<R>(record: R, edit: (record: Loose) => unknown): R {
  const replaced = edit(record as Loose);
  return (replaced === undefined ? record : replaced) as R;
}

/** How a handler's invocation was refused, or `resolved` when it was not. */
async function refusal(invocation: Promise<unknown>): Promise<{ name: string; message: string } | 'resolved'> {
  return invocation.then(
    () => 'resolved' as const,
    (error: Error) => ({ name: error.name, message: error.message }),
  );
}

/** How an inbox factory refused its options, or `accepted`. */
function configRefusal(make: () => unknown): { name: string; message: string } | 'accepted' {
  try {
    make();
    return 'accepted';
  } catch (error) {
    return { name: (error as Error).name, message: (error as Error).message };
  }
}

let run = 0;
function telemetry() {
  const logger = recordingLogger();
  /** What the `record failed` log lines say, each with the record's sequence number and its error. */
  const failures = () =>
    logger.lines
      .filter((line) => line.message.startsWith('record '))
      .map((line) => ({ level: line.level, message: line.message, ...(line.extra[0] as object) }));
  return { logger, failures };
}

/** The keys the consumer claimed, as the inbox table holds them. */
async function claimed(consumer: string): Promise<string[]> {
  return (await db.query<{ message_id: string }>('SELECT message_id FROM inbox.consumed_message WHERE consumer_name = $1 ORDER BY message_id', [consumer])).map(
    (row) => row.message_id,
  );
}

function kinesis(extra: Partial<KinesisInboxOptions<Page>> = {}) {
  const consumer = `edges-kinesis-${run++}`;
  const seen: InboxMessage<Page, KinesisStreamRecord>[] = [];
  const { logger, failures } = telemetry();
  const handler = kinesisInbox<Page>({
    consumer,
    database: db.target,
    logger,
    metrics: recordingMetrics(),
    apply: async (_, message) => {
      seen.push(message);
      if (message.body.fail) throw new Error(`${message.body.page} fails`);
    },
    ...extra,
  });
  const pages = () => seen.map((message) => message.body.page).sort();
  return { handler, seen, pages, failures, consumer };
}

function dynamoDb(extra: Partial<DynamoDbInboxOptions> = {}) {
  const consumer = `edges-dynamodb-${run++}`;
  const seen: InboxMessage<DynamoDbChange, DynamoDBRecord>[] = [];
  const { logger, failures } = telemetry();
  const handler = dynamoDbInbox({
    consumer,
    database: db.target,
    logger,
    metrics: recordingMetrics(),
    apply: async (_, message) => {
      seen.push(message);
      if (message.body.newImage?.fail === true) throw new Error(`${String(message.body.keys.id)} fails`);
    },
    ...extra,
  });
  const ids = () => seen.map((message) => message.body.keys.id);
  return { handler, seen, ids, failures, consumer };
}

/** A body whose field at the dotted `path` holds `value`. */
function holding(path: string, value: unknown): Record<string, unknown> {
  return path.split('.').reduceRight<unknown>((inner, step) => ({ [step]: inner }), value) as Record<string, unknown>;
}

const failedLine = (sequenceNumber: string | undefined, name: string, message: string) => ({
  level: 'warn',
  message: 'record failed; Lambda will deliver it again',
  sequenceNumber,
  error: { name, message },
});

describe('kinesisInbox: a record Lambda would never send', () => {
  it.each([
    ['without data', (record: Loose) => void delete record.kinesis.data, 'undefined'],
    ['with null data', (record: Loose) => void (record.kinesis.data = null), 'null'],
    ['with numeric data', (record: Loose) => void (record.kinesis.data = 42), 'number'],
  ])('fails a record %s alone, naming what its data is, and applies the other shard', async (_, edit, what) => {
    const { handler, pages, failures } = kinesis();
    const bad = edited(kinesisRecord({ shard: SHARD_1, body: { page: 'bad' } }), edit);
    const records = [kinesisRecord({ shard: SHARD_0, body: { page: 'a' } }), bad, kinesisRecord({ shard: SHARD_0, body: { page: 'c' } })];

    const response = await handler(kinesisEvent(records), lambdaContext());

    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: bad.kinesis.sequenceNumber }] });
    expect(pages()).toEqual(['a', 'c']);
    expect(failures()).toEqual([failedLine(bad.kinesis.sequenceNumber, 'ParseError', noData(what))]);
  });

  it.each([
    // Without its kinesis object a record has no data either: that is the failure it reports.
    ['no kinesis object', (record: Loose) => void delete record.kinesis, noData('undefined')],
    ['no sequence number', (record: Loose) => void delete record.kinesis.sequenceNumber, NO_SEQUENCE_NUMBER],
    ['an empty sequence number', (record: Loose) => void (record.kinesis.sequenceNumber = ''), NO_SEQUENCE_NUMBER],
    ['a numeric sequence number', (record: Loose) => void (record.kinesis.sequenceNumber = 123), NO_SEQUENCE_NUMBER],
    ['nothing at all (null)', () => null, 'the record is null, not an object; Kinesis records from Lambda are always objects'],
    ['a number instead of a record', () => 7, 'the record is number, not an object; Kinesis records from Lambda are always objects'],
  ])('fails a record with %s, and the whole invocation after the other shard ran, since Lambda cannot restart from it', async (_, edit, message) => {
    const { handler, pages, failures } = kinesis();
    const bad = edited(kinesisRecord({ shard: SHARD_1, body: { page: 'bad' } }), edit);

    const outcome = await refusal(handler(kinesisEvent([kinesisRecord({ shard: SHARD_0, body: { page: 'a' } }), bad]), lambdaContext()));

    expect(outcome).toEqual({ name: 'InboxError', message: NO_RESTART });
    expect(pages()).toEqual(['a']);
    expect(failures()).toEqual([failedLine(undefined, 'ParseError', message)]);
  });

  it('names the shard and sequence number when together they make an unusable key', async () => {
    const { handler, pages, failures } = kinesis();
    const bad = kinesisRecord({ shard: SHARD_1, sequenceNumber: '49590338271490256608559692538361571095921575989136588898\u0007', body: { page: 'bad' } });

    const response = await handler(kinesisEvent([bad, kinesisRecord({ shard: SHARD_0, body: { page: 'a' } })]), lambdaContext());

    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: bad.kinesis.sequenceNumber }] });
    expect(pages()).toEqual(['a']);
    expect(failures()).toEqual([
      failedLine(bad.kinesis.sequenceNumber, 'KeyError', 'the shard and sequence number gave a key holding a control character; keys must be printable text'),
    ]);
  });

  it.each([
    ['no eventID', (record: Loose) => void delete record.eventID],
    ['an eventID that names no shard', (record: Loose) => void (record.eventID = SHARD_2)],
  ])('keys a record with %s by its sequence number alone, in no shard', async (_, edit) => {
    const { handler, seen, consumer } = kinesis();
    const record = edited(kinesisRecord({ shard: SHARD_2, body: { page: 'solo' } }), edit);

    expect(await handler(kinesisEvent([record]), lambdaContext())).toEqual({ batchItemFailures: [] });

    expect(seen.map((message) => ({ key: message.key, groupId: message.groupId, id: message.id }))).toEqual([
      { key: record.kinesis.sequenceNumber, groupId: '', id: record.kinesis.sequenceNumber },
    ]);
    expect(await claimed(consumer)).toEqual([record.kinesis.sequenceNumber]);
  });

  it('parks a record without data with an empty body, under the key it claimed', async () => {
    const { handler, pages } = kinesis({ onPermanentError: 'park' });
    const bad = edited(kinesisRecord({ shard: SHARD_0, body: { page: 'bad' } }), (record) => void delete record.kinesis.data);

    const response = await handler(kinesisEvent([bad, kinesisRecord({ shard: SHARD_0, body: { page: 'after' } })]), lambdaContext());

    expect(response).toEqual({ batchItemFailures: [] });
    expect(pages()).toEqual(['after']);
    const parked = await parkedMessages(handler).list();
    expect(parked.map(({ sqsMessageId, key, body, errorClass, errorMessage }) => ({ sqsMessageId, key, body, errorClass, errorMessage }))).toEqual([
      { sqsMessageId: bad.kinesis.sequenceNumber, key: bad.eventID, body: '', errorClass: 'ParseError', errorMessage: noData('undefined') },
    ]);
  });
});

describe('kinesisInbox: the failure report of several shards', () => {
  it('names the first failed record of each failing shard in batch order, and applies the shard that did not fail', async () => {
    const { handler, pages, failures } = kinesis();
    const [a, d, f, b, e, c, g] = [
      kinesisRecord({ shard: SHARD_0, body: { page: 'a' } }),
      kinesisRecord({ shard: SHARD_1, body: { page: 'd' } }),
      kinesisRecord({ shard: SHARD_2, body: { page: 'f', fail: true } }),
      kinesisRecord({ shard: SHARD_0, body: { page: 'b', fail: true } }),
      kinesisRecord({ shard: SHARD_1, body: { page: 'e' } }),
      kinesisRecord({ shard: SHARD_0, body: { page: 'c' } }),
      kinesisRecord({ shard: SHARD_2, body: { page: 'g' } }),
    ];

    const response = await handler(kinesisEvent([a!, d!, f!, b!, e!, c!, g!]), lambdaContext());

    // f comes before b in the batch: the report keeps that order, and neither c nor g started.
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: f!.kinesis.sequenceNumber }, { itemIdentifier: b!.kinesis.sequenceNumber }] });
    expect(pages()).toEqual(['a', 'b', 'd', 'e', 'f']);
    expect(failures()).toEqual([failedLine(f!.kinesis.sequenceNumber, 'Error', 'f fails'), failedLine(b!.kinesis.sequenceNumber, 'Error', 'b fails')]);
  });
});

describe('kinesisInbox: key options', () => {
  it('takes the default strategy when it is named', async () => {
    const { handler, consumer } = kinesis({ key: 'sequence-number' });
    const records = [kinesisRecord({ shard: SHARD_0, body: { page: 'a' } }), kinesisRecord({ shard: SHARD_0, body: { page: 'b' } })];

    expect(await handler(kinesisEvent(records), lambdaContext())).toEqual({ batchItemFailures: [] });

    expect(await claimed(consumer)).toEqual(records.map((record) => record.eventID).sort());
  });

  it('claims what a key function returns, and fails alone a record it gives an empty key', async () => {
    const { handler, seen, failures, consumer } = kinesis({ key: (record) => record.kinesis.partitionKey });
    const good = kinesisRecord({ shard: SHARD_0, partitionKey: 'customer-7', body: { page: 'a' } });
    const bad = kinesisRecord({ shard: SHARD_1, partitionKey: '', body: { page: 'bad' } });

    const response = await handler(kinesisEvent([bad, good]), lambdaContext());

    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: bad.kinesis.sequenceNumber }] });
    expect(seen.map((message) => message.key)).toEqual(['customer-7']);
    expect(await claimed(consumer)).toEqual(['customer-7']);
    expect(failures()).toEqual([
      failedLine(bad.kinesis.sequenceNumber, 'KeyError', 'the key function gave an empty key; every message needs a non-empty idempotency key'),
    ]);
  });

  it.each([
    [
      'a name of another source',
      'offset',
      `inbox option "key": the string "offset" is not a key strategy; use 'sequence-number', { field: 'orderId' }, a function of the record`,
    ],
    ['an array', ['page'], `inbox option "key": an array is not a key strategy; use 'sequence-number', { field: 'orderId' }, a function of the record`],
    ['a misspelt field', { fields: 'page' }, 'inbox option "key.fields": is not an option of key; did you mean "field"?'],
    ['an empty field name', { field: '' }, `inbox option "key.field": must be a non-empty name, e.g. { field: 'orderId' }`],
    ['a field name that is not a string', { field: 7 }, `inbox option "key.field": must be a non-empty name, e.g. { field: 'orderId' }`],
  ])('refuses %s as the key at cold start, naming the strategies it takes', (_, key, message) => {
    expect(configRefusal(() => kinesis({ key: key as never }))).toEqual({ name: 'InboxConfigError', message });
  });

  it.each([
    ['a top-level string', 'page', { page: 'p-1' }, 'p-1'],
    ['a nested string', 'order.id', { page: 'x', order: { id: 'o-9' } }, 'o-9'],
    ['an element of an array', 'order.0', { page: 'x', order: ['o-3'] }, 'o-3'],
    ['an integer', 'order.id', { page: 'x', order: { id: 42 } }, '42'],
    ['a negative fraction', 'order.id', { page: 'x', order: { id: -1.5 } }, '-1.5'],
  ])('claims %s of the body as the key', async (_, field, body, key) => {
    const { handler, seen, consumer } = kinesis({ key: { field } });

    expect(await handler(kinesisEvent([kinesisRecord({ body })]), lambdaContext())).toEqual({ batchItemFailures: [] });

    expect(seen.map((message) => message.key)).toEqual([key]);
    expect(await claimed(consumer)).toEqual([key]);
  });

  const MUST_BE_SET = 'in the body; the producer must set it to a string on every message';
  it.each([
    ['missing', 'order.id', '{"page":"x"}', `key field "order.id" is missing ${MUST_BE_SET}`],
    ['under a null', 'order.id', '{"page":"x","order":null}', `key field "order.id" is missing ${MUST_BE_SET}`],
    ['under a string', 'order.length', '{"page":"x","order":"o-1"}', `key field "order.length" is missing ${MUST_BE_SET}`],
    ['null', 'order.id', '{"page":"x","order":{"id":null}}', `key field "order.id" is null ${MUST_BE_SET}`],
    ['an object', 'order', '{"page":"x","order":{"id":"o-1"}}', `key field "order" is an object ${MUST_BE_SET}`],
    ['a boolean', 'order.id', '{"page":"x","order":{"id":true}}', `key field "order.id" is a boolean ${MUST_BE_SET}`],
    [
      'a number past the largest finite one',
      'order.id',
      '{"page":"x","order":{"id":1e400}}',
      `key field "order.id" is a number that is not finite ${MUST_BE_SET}`,
    ],
    ['an array', 'order.id', '{"page":"x","order":{"id":["o-1"]}}', `key field "order.id" is an array ${MUST_BE_SET}`],
    [
      'an empty string',
      'order.id',
      '{"page":"x","order":{"id":""}}',
      'body field "order.id" gave an empty key; every message needs a non-empty idempotency key',
    ],
    [
      'in a body that is not JSON',
      'order.id',
      'page x',
      'key field "order.id": the body cannot be read for it (not JSON: unexpected character at position 0 of 6)',
    ],
    [
      // JSON may escape a lone surrogate, which PostgreSQL would store as U+FFFD: another such key would be the same claim.
      'a lone surrogate, escaped in the JSON',
      'order.id',
      '{"page":"x","order":{"id":"o-\\ud83d"}}',
      'body field "order.id" gave a key holding a lone UTF-16 surrogate (at index 2), which PostgreSQL would store as U+FFFD: two different keys would become one claim. ' +
        'Fix: cut keys at whole characters (Array.from(text).slice(0, n).join(""), not text.slice(0, n)), or hash them',
    ],
  ])('fails alone a record whose key field is %s, and applies the other shard', async (_, field, text, message) => {
    const { handler, seen, failures, consumer } = kinesis({ key: { field } });
    const bad = kinesisRecord({ shard: SHARD_1, body: text });
    const good = kinesisRecord({ shard: SHARD_0, body: { page: 'a', ...holding(field, 'o-1') } });

    const response = await handler(kinesisEvent([bad, good]), lambdaContext());

    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: bad.kinesis.sequenceNumber }] });
    expect(seen.map((message) => message.key)).toEqual(['o-1']);
    expect(await claimed(consumer)).toEqual(['o-1']);
    expect(failures()).toEqual([failedLine(bad.kinesis.sequenceNumber, 'KeyError', message)]);
  });

  it('names the missing data, not the key field it would have held, when a record without data is keyed by a field', async () => {
    const { handler, pages, failures } = kinesis({ key: { field: 'order.id' } });
    const bad = edited(kinesisRecord({ shard: SHARD_1, body: { page: 'bad', order: { id: 'o-bad' } } }), (record) => void delete record.kinesis.data);
    const good = kinesisRecord({ shard: SHARD_0, body: { page: 'a', order: { id: 'o-1' } } });

    expect(await handler(kinesisEvent([bad, good]), lambdaContext())).toEqual({ batchItemFailures: [{ itemIdentifier: bad.kinesis.sequenceNumber }] });
    expect(pages()).toEqual(['a']);
    expect(failures()).toEqual([failedLine(bad.kinesis.sequenceNumber, 'ParseError', noData('undefined'))]);
  });
});

describe('dynamoDbInbox: a record Lambda would never send', () => {
  it.each([
    ['no dynamodb object', (record: Loose) => void delete record.dynamodb],
    ['a null dynamodb', (record: Loose) => void (record.dynamodb = null)],
    ['a string for dynamodb', (record: Loose) => void (record.dynamodb = 'INSERT')],
    ['a number for dynamodb', (record: Loose) => void (record.dynamodb = 7)],
  ])('fails a change with %s after the changes before it, and the whole invocation, since it has no sequence number', async (_, edit) => {
    const { handler, ids, failures } = dynamoDb();
    const records = [dynamoDbRecord({ id: 'a' }), edited(dynamoDbRecord({ id: 'bad' }), edit), dynamoDbRecord({ id: 'c' })];

    const outcome = await refusal(handler(dynamoDbEvent(records), lambdaContext()));

    expect(outcome).toEqual({ name: 'InboxError', message: NO_RESTART });
    expect(ids()).toEqual(['a']);
    expect(failures()).toEqual([failedLine(undefined, 'ParseError', NO_DYNAMODB)]);
  });

  it('fails a null record for its missing change, and the whole invocation', async () => {
    const { handler, ids, failures } = dynamoDb();

    const outcome = await refusal(handler(dynamoDbEvent([dynamoDbRecord({ id: 'a' }), null as never]), lambdaContext()));

    expect(outcome).toEqual({ name: 'InboxError', message: NO_RESTART });
    expect(ids()).toEqual(['a']);
    expect(failures()).toEqual([
      failedLine(undefined, 'ParseError', 'the record is null, not an object; DynamoDB Streams records from Lambda are always objects'),
    ]);
  });

  it('fails a change without an eventID, reporting its sequence number', async () => {
    const { handler, ids, failures } = dynamoDb();
    const bad = edited(dynamoDbRecord({ id: 'bad' }), (record) => void delete record.eventID);

    const response = await handler(dynamoDbEvent([dynamoDbRecord({ id: 'a' }), bad, dynamoDbRecord({ id: 'c' })]), lambdaContext());

    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: bad.dynamodb!.SequenceNumber }] });
    expect(ids()).toEqual(['a']);
    expect(failures()).toEqual([failedLine(bad.dynamodb!.SequenceNumber, 'KeyError', EMPTY_EVENT_ID)]);
  });

  it.each([
    ['an empty sequence number', (record: Loose) => void (record.dynamodb.SequenceNumber = '')],
    ['no sequence number', (record: Loose) => void delete record.dynamodb.SequenceNumber],
  ])('applies a change with %s, but when it fails, fails the whole invocation', async (_, edit) => {
    const { handler, ids, failures } = dynamoDb();
    const unnamed = edited(dynamoDbRecord({ id: 'quiet' }), edit);
    const failing = edited(dynamoDbRecord({ id: 'loud', newImage: { fail: true } }), edit);

    expect(await handler(dynamoDbEvent([unnamed]), lambdaContext())).toEqual({ batchItemFailures: [] });
    const outcome = await refusal(handler(dynamoDbEvent([failing]), lambdaContext()));

    expect(outcome).toEqual({ name: 'InboxError', message: NO_RESTART });
    expect(ids()).toEqual(['quiet', 'loud']);
    expect(failures()).toEqual([failedLine(undefined, 'Error', 'loud fails')]);
  });

  it('parks a change without a dynamodb object with an empty body, under the eventID it claimed', async () => {
    const { handler, ids } = dynamoDb({ onPermanentError: 'park' });
    const bad = edited(dynamoDbRecord({ id: 'bad' }), (record) => void delete record.dynamodb);

    const response = await handler(dynamoDbEvent([bad, dynamoDbRecord({ id: 'after' })]), lambdaContext());

    expect(response).toEqual({ batchItemFailures: [] });
    expect(ids()).toEqual(['after']);
    const parked = await parkedMessages(handler).list();
    expect(parked.map(({ key, body, errorClass, errorMessage }) => ({ key, body, errorClass, errorMessage }))).toEqual([
      { key: bad.eventID, body: '', errorClass: 'ParseError', errorMessage: NO_DYNAMODB },
    ]);
  });
});

describe('dynamoDbInbox: key options', () => {
  it('takes the default strategy when it is named', async () => {
    const { handler, consumer } = dynamoDb({ key: 'event-id' });
    const records = [dynamoDbRecord({ id: 'a' }), dynamoDbRecord({ id: 'b' })];

    expect(await handler(dynamoDbEvent(records), lambdaContext())).toEqual({ batchItemFailures: [] });

    expect(await claimed(consumer)).toEqual(records.map((record) => record.eventID).sort());
  });

  it("refuses another source's strategy at cold start, naming its own", () => {
    expect(configRefusal(() => dynamoDb({ key: 'sequence-number' as never }))).toEqual({
      name: 'InboxConfigError',
      message: `inbox option "key": the string "sequence-number" is not a key strategy; use 'event-id', { field: 'orderId' }, a function of the record`,
    });
  });
});

describe('a stream record that is null, parked', () => {
  // Parking stores a record that is no record with its cause, as it stores one without data; it has no
  // sequence number to report, but a parked record needs no report: it succeeded.
  const sources = [
    {
      name: 'kinesisInbox',
      make: (options: object) => kinesisInbox(options as KinesisInboxOptions<Page>),
      event: () => kinesisEvent([kinesisRecord({ shard: SHARD_0, body: { page: 'good' } }), null as never]),
      words: 'Kinesis',
    },
    {
      name: 'dynamoDbInbox',
      make: (options: object) => dynamoDbInbox(options as DynamoDbInboxOptions),
      event: () => dynamoDbEvent([dynamoDbRecord({ id: 'good' }), null as never]),
      words: 'DynamoDB Streams',
    },
    {
      name: 'kafkaInbox',
      make: (options: object) => kafkaInbox(options as KafkaInboxOptions<unknown>),
      event: () => ({
        ...kafkaEvent([kafkaRecord({ offset: 1, body: { id: 'good' } })]),
        records: { 'orders-0': [kafkaRecord({ offset: 1, body: { id: 'good' } })], 'orders-1': [null] },
      }),
      words: 'Kafka',
    },
  ];

  it.each(sources)('$name parks it with a ParseError naming it, and applies its batch mates', async ({ make, event, words }) => {
    let applied = 0;
    const handler = make({
      consumer: `edges-null-${run++}`,
      database: db.target,
      logger: recordingLogger(),
      metrics: recordingMetrics(),
      onPermanentError: 'park',
      apply: async () => void applied++,
    }) as (event: unknown, context: unknown) => Promise<{ batchItemFailures: unknown[] }>;

    expect(await handler(event(), lambdaContext())).toEqual({ batchItemFailures: [] });

    expect(applied).toBe(1);
    const parked = await parkedMessages(handler as never).list();
    expect(
      parked.map(({ sqsMessageId, key, body, errorClass, errorMessage, attributes }) => ({ sqsMessageId, key, body, errorClass, errorMessage, attributes })),
    ).toEqual([
      {
        sqsMessageId: '',
        key: null,
        body: '',
        errorClass: 'ParseError',
        errorMessage: `the record is null, not an object; ${words} records from Lambda are always objects`,
        attributes: { record: null },
      },
    ]);
  });
});
