import fc from 'fast-check';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { inbox, ParseError, parseWith, PermanentError } from '../../lambda/inbox/index.js';
import { UnexpectedEventError } from '../../lambda/inbox/errors.js';
import { MAX_BODY_BYTES, MAX_KEY_BYTES } from '../../lambda/inbox/prepare/keys.js';
import type { InboxMessage, InboxOptions } from '../../lambda/inbox/index.js';
import { inboxFixture, lambdaContext, recordingLogger, recordingMetrics, sqsRecord } from '../support/inbox.js';
import type { InboxFixture } from '../support/inbox.js';
import { parkedMessages } from '../../lambda/inbox/parked/parking.js';
import { propertyParameters, seededRandom } from '../support/seed.js';

/** Names unique within the run's database, from the run's seed. */
const uniqueness = seededRandom('bad-input');

let db: InboxFixture;
beforeAll(async () => {
  db = await inboxFixture('bad_input');
});
afterAll(async () => db.close());
beforeEach(async () => {
  await db.query('TRUNCATE public.orders, inbox.consumed_message, inbox.parked_message');
});

type Order = { orderId: string };

/** The same effect in each mode: a second application shows as shipped_count 2. */
const effects = {
  transaction: {
    apply: async (tx, message) => {
      await tx.execute(
        `INSERT INTO public.orders (order_id, status, shipped_count) VALUES (:orderId, 'shipped', 1)
         ON CONFLICT (order_id) DO UPDATE SET shipped_count = orders.shipped_count + 1`,
        { orderId: message.body.orderId },
      );
    },
  },
  statement: {
    statement: {
      sql: `INSERT INTO public.orders (order_id, status, shipped_count) SELECT :orderId, 'shipped', 1 FROM claimed
            ON CONFLICT (order_id) DO UPDATE SET shipped_count = orders.shipped_count + 1`,
      params: (message) => ({ orderId: message.body.orderId }),
    },
  },
} satisfies Record<string, Partial<InboxOptions<Order>>>;

function make(onPermanentError: 'retry' | 'park', extra: Partial<InboxOptions<Order>> = {}, mode: keyof typeof effects = 'transaction') {
  const logger = recordingLogger();
  const metrics = recordingMetrics();
  const handler = inbox<Order>({
    consumer: 'order-worker',
    database: db.target,
    logger,
    metrics,
    onPermanentError: onPermanentError === 'park' ? 'park' : 'retry',
    ...effects[mode],
    ...extra,
  });
  return { handler, logger, metrics };
}

const cases = [
  { problem: 'malformed JSON', record: () => sqsRecord({ body: '{"orderId": "x"' }), error: /ParseError/, text: /could not be parsed/ },
  { problem: 'an over-long key', record: () => sqsRecord({ key: 'k'.repeat(600) }), error: /KeyError/, text: /600 bytes; the limit is 512/ },
  { problem: 'a key with a control character', record: () => sqsRecord({ key: 'line\nbreak' }), error: /KeyError/, text: /control character/ },
  {
    problem: 'a body over 1 MiB',
    record: () => sqsRecord({ body: JSON.stringify({ orderId: 'big', pad: 'x'.repeat(MAX_BODY_BYTES) }) }),
    error: /BodyTooLargeError/,
    text: /at most 1048576 bytes/,
  },
];

describe.each(cases)('a record with $problem', ({ record: makeRecord, error, text }) => {
  it('fails alone with onPermanentError retry, naming the problem, and its batch mates succeed', async () => {
    const { handler, logger } = make('retry');
    const bad = makeRecord();
    const good = [sqsRecord({ body: { orderId: 'good-1' } }), sqsRecord({ body: { orderId: 'good-2' } })];
    const response = await handler({ Records: [good[0]!, bad, good[1]!] }, lambdaContext());
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: bad.messageId }]);
    const logged = JSON.stringify(logger.lines.filter((l) => l.level === 'warn'));
    expect(logged).toMatch(error);
    expect(logged).toMatch(text);
    expect(await db.query("SELECT order_id FROM public.orders WHERE order_id LIKE 'good-%'")).toHaveLength(2);
  });

  it('is parked with onPermanentError park: stored with its error, reported succeeded, nothing lost', async () => {
    const { handler, metrics } = make('park');
    const bad = makeRecord();
    const response = await handler({ Records: [bad] }, lambdaContext());
    expect(response.batchItemFailures).toEqual([]);
    const parked = await db.query(
      "SELECT sqs_message_id, convert_from(payload, 'UTF8') AS body, error_class, error_message, attempt, attributes FROM inbox.parked_message",
    );
    expect(parked).toHaveLength(1);
    expect(parked[0]).toMatchObject({ sqs_message_id: bad.messageId, body: bad.body, attempt: 1 });
    expect(parked[0]!.error_class).toMatch(error);
    expect(parked[0]!.error_message).toMatch(text);
    expect(parked[0]!.attributes.attributes.ApproximateReceiveCount).toBe('1');
    expect(metrics.published[0]!.Parked).toEqual([1]);
  });
});

describe('a missing key attribute', () => {
  it('fails the record with a KeyError naming the attribute', async () => {
    const { handler, logger } = make('retry', { key: { attribute: 'order-key' } });
    const record = sqsRecord();
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect(JSON.stringify(logger.lines)).toMatch(/message attribute \\"order-key\\" is missing/);
  });

  it('makes no call for a redelivered batch whose every record lacks its key: nothing to look up', async () => {
    const { handler } = make('retry', { key: { attribute: 'order-key' } });
    const records = [sqsRecord({ receiveCount: 2 }), sqsRecord({ receiveCount: 3 })];
    db.server.stats.reset();
    expect((await handler({ Records: records }, lambdaContext())).batchItemFailures).toHaveLength(2);
    expect(db.server.stats.total()).toBe(0);
  });
});

describe('keys that are not well-formed Unicode', () => {
  /** A key function that keeps the first `length` UTF-16 units of the body's orderKey, as `.slice()` does. */
  const cutKey = (length: number) => (record: { body: string }) => (JSON.parse(record.body) as { orderKey: string }).orderKey.slice(0, length);

  it('refuses two keys cut through different emoji, which PostgreSQL would have stored as one claim: neither is applied as the other', async () => {
    const { handler } = make('park', { key: cutKey(7) as never });
    // "order-" and the first half of two different emoji: two lone surrogates, both U+FFFD once stored.
    const first = sqsRecord({ body: { orderId: 'emoji-1', orderKey: 'order-\u{1F600}' } });
    const second = sqsRecord({ body: { orderId: 'emoji-2', orderKey: 'order-\u{1F916}' } });
    expect((await handler({ Records: [first] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect((await handler({ Records: [second] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(await db.query('SELECT sqs_message_id, error_class, owns_claim FROM inbox.parked_message ORDER BY id')).toEqual([
      { sqs_message_id: first.messageId, error_class: 'KeyError', owns_claim: false },
      { sqs_message_id: second.messageId, error_class: 'KeyError', owns_claim: false },
    ]);
    expect(await db.query('SELECT message_id FROM inbox.consumed_message')).toEqual([]);
    expect(await db.query('SELECT order_id FROM public.orders')).toEqual([]);
  });

  /** Code units a key function may return: lone and paired surrogates, U+FFFD itself, combining marks, controls, ASCII. */
  const unit = fc.oneof(
    fc.constantFrom('a', 'b', '-', '\ud83d', '\ude00', '\ud83e', '\udd16', '\ufffd', '\u0301', 'é', '\u0000', '\u{1F600}', '\u{10FFFF}'),
    fc.integer({ min: 0xd800, max: 0xdfff }).map((code) => String.fromCharCode(code)),
  );
  const keys = fc.uniqueArray(
    fc.array(unit, { minLength: 1, maxLength: 6 }).map((units) => `k${units.join('')}`),
    { minLength: 1, maxLength: 5 },
  );

  it('keeps every well-formed key as it is, and refuses every other: no two keys ever become one claim (fast-check, seeded)', async () => {
    await fc.assert(
      fc.asyncProperty(keys, async (orderKeys) => {
        await db.query('TRUNCATE public.orders, inbox.consumed_message');
        const { handler, logger } = make('retry', { key: cutKey(64) as never });
        const records = orderKeys.map((orderKey, index) => sqsRecord({ body: { orderId: `p-${index}`, orderKey } }));
        const failed = new Set((await handler({ Records: records }, lambdaContext())).batchItemFailures.map((f) => f.itemIdentifier));
        const wellFormed = (key: string) => !/\p{Cs}/u.test(key) && !/\u0000/.test(key);
        for (const [index, record] of records.entries()) {
          expect(failed.has(record.messageId), JSON.stringify(orderKeys[index])).toBe(!wellFormed(orderKeys[index]!));
        }
        const stored = (await db.query<{ message_id: string }>('SELECT message_id FROM inbox.consumed_message')).map((row) => row.message_id);
        expect(stored.sort()).toEqual(orderKeys.filter(wellFormed).sort());
        const refusals = JSON.stringify(logger.lines.filter((line) => line.message.startsWith('record failed')));
        expect(refusals.match(/KeyError/g)?.length ?? 0).toBe(orderKeys.filter((key) => !wellFormed(key)).length);
      }),
      propertyParameters(30),
    );
  });
});

// calls: what detecting the collision costs (Begin, claim, Rollback; or the one gated statement).
const modes = [
  { name: 'transaction mode', mode: 'transaction', calls: 3 },
  { name: 'single-statement mode', mode: 'statement', calls: 1 },
] as const;

describe.each(modes)('a key collision in $name', ({ mode, calls }) => {
  /** The collision's error log line: exactly one, naming the key, the record and both hashes. */
  function expectCollisionLogged(logger: ReturnType<typeof recordingLogger>, key: string, messageId: string) {
    const errors = logger.lines.filter((l) => l.level === 'error');
    expect(errors).toHaveLength(1);
    expect(errors[0]!.message).toMatch(/key collision/);
    expect(errors[0]!.extra[0]).toMatchObject({ key, messageId });
    const context = errors[0]!.extra[0] as { storedSha256: string; receivedSha256: string };
    expect(context.storedSha256).toMatch(/^[0-9a-f]{64}$/);
    expect(context.receivedSha256).toMatch(/^[0-9a-f]{64}$/);
    expect(context.storedSha256).not.toBe(context.receivedSha256);
  }

  it('is not applied, fails the record, is logged at error level with both hashes, and counted', async () => {
    const { handler, logger, metrics } = make('retry', {}, mode);
    await handler({ Records: [sqsRecord({ key: 'k-1', body: { orderId: 'first' } })] }, lambdaContext());
    const second = sqsRecord({ key: 'k-1', body: { orderId: 'second' } });
    db.server.stats.reset();
    const response = await handler({ Records: [second] }, lambdaContext());
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: second.messageId }]);
    expect(db.server.stats.total()).toBe(calls);
    expect(await db.query('SELECT order_id, shipped_count FROM public.orders ORDER BY order_id')).toEqual([{ order_id: 'first', shipped_count: 1 }]);
    expectCollisionLogged(logger, 'k-1', second.messageId);
    expect(metrics.published[1]).toMatchObject({ KeyCollisions: [1], Processed: [0], Duplicates: [0], Failures: [1] });
  });

  it('is parked with onPermanentError park, so nothing is lost, and still logged and counted', async () => {
    const { handler, logger, metrics } = make('park', {}, mode);
    await handler({ Records: [sqsRecord({ key: 'k-2', body: { orderId: 'first' } })] }, lambdaContext());
    const second = sqsRecord({ key: 'k-2', body: { orderId: 'second' } });
    expect((await handler({ Records: [second] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(await db.query("SELECT order_id FROM public.orders WHERE order_id = 'second'")).toHaveLength(0);
    const parked = await db.query('SELECT sqs_message_id, error_class, message_key, owns_claim FROM inbox.parked_message');
    expect(parked).toEqual([{ sqs_message_id: second.messageId, error_class: 'KeyCollisionError', message_key: 'k-2', owns_claim: false }]);
    expectCollisionLogged(logger, 'k-2', second.messageId);
    expect(metrics.published[1]).toMatchObject({ KeyCollisions: [1], Parked: [1], Processed: [0] });
  });
});

describe('records Lambda could not report', () => {
  it('fails the whole batch when a record that did not commit has no messageId, instead of reporting it succeeded', async () => {
    const { handler } = make('retry', {
      apply: async () => {
        throw new Error('no');
      },
    });
    const record = { ...sqsRecord(), messageId: '' };
    await expect(handler({ Records: [sqsRecord(), record] }, lambdaContext())).rejects.toThrow(/has no messageId/);
  });

  it('fails the whole batch when a record that did not commit carries no messageId field at all', async () => {
    const { handler } = make('retry', {
      apply: async () => {
        throw new Error('no');
      },
    });
    const record = { ...sqsRecord(), messageId: undefined as never };
    await expect(handler({ Records: [record] }, lambdaContext())).rejects.toThrow(
      'a record that did not commit has no messageId, so it cannot be reported alone; failing the whole batch so SQS delivers it again',
    );
  });

  it('answers normally when the record without a messageId committed', async () => {
    const { handler } = make('retry');
    const record = { ...sqsRecord({ body: { orderId: 'nameless' }, key: 'nameless' }), messageId: '' };
    expect(await handler({ Records: [record] }, lambdaContext())).toEqual({ batchItemFailures: [] });
  });
});

describe('parking never applies a key twice', () => {
  it('parks one of two messages that share a key and a body; the other is a duplicate; the replay applies once', async () => {
    let strict = true;
    const { handler, metrics } = make('park', {
      parse: (body) => {
        if (strict) throw new Error('unknown schema version');
        return JSON.parse(body);
      },
    });
    const first = sqsRecord({ key: 'order-77', body: { orderId: 'order-77' } });
    const resent = sqsRecord({ key: 'order-77', body: { orderId: 'order-77' } });
    expect((await handler({ Records: [first] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect((await handler({ Records: [resent] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(metrics.published.map((m) => [m.Parked![0], m.Duplicates![0]])).toEqual([
      [1, 0],
      [0, 1],
    ]);
    const parked = await parkedMessages(handler).list();
    expect(parked.map((p) => [p.sqsMessageId, p.ownsClaim])).toEqual([[first.messageId, true]]);
    strict = false;
    for (const row of await parkedMessages(handler).list()) await parkedMessages(handler).replay(row.id);
    expect(await db.query("SELECT shipped_count FROM public.orders WHERE order_id = 'order-77'")).toEqual([{ shipped_count: 1 }]);
  });

  it('treats a copy of an applied message as a duplicate, not a parked record, when parse has grown stricter', async () => {
    let strict = false;
    const { handler } = make('park', {
      parse: (body) => {
        if (strict) throw new Error('stricter parser');
        return JSON.parse(body);
      },
    });
    const original = sqsRecord({ key: 'order-78', body: { orderId: 'order-78' } });
    await handler({ Records: [original] }, lambdaContext());
    strict = true;
    const copy = sqsRecord({ key: 'order-78', body: { orderId: 'order-78' } });
    expect((await handler({ Records: [copy] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(await parkedMessages(handler).list()).toEqual([]);
    expect(await db.query("SELECT shipped_count FROM public.orders WHERE order_id = 'order-78'")).toEqual([{ shipped_count: 1 }]);
  });
});

describe('key strategies', () => {
  /** A record carrying a String message attribute the `{ attribute }` strategy reads. */
  function withAttribute(name: string, value: string) {
    const record = sqsRecord();
    return { ...record, messageAttributes: { [name]: { dataType: 'String', stringValue: value } } } as typeof record;
  }
  /** A record carrying a Binary message attribute, as Lambda delivers one: base64 in binaryValue, no stringValue. */
  function withBinaryAttribute(name: string) {
    const record = sqsRecord();
    return { ...record, messageAttributes: { [name]: { dataType: 'Binary', binaryValue: Buffer.from('order-7').toString('base64') } } } as typeof record;
  }
  const binaryKey = (name: string) =>
    `message attribute "${name}" holds no text (its dataType is Binary), and a key is text. Fix: send the key as a String attribute ` +
    "(createProducer from 'sqs-inbox/producer' does), or choose it with key: (record) => ... from what the record holds";
  const long = 'k'.repeat(600);
  const loneSurrogate = (source: string, index: number) =>
    `${source} gave a key holding a lone UTF-16 surrogate (at index ${index}), which PostgreSQL would store as U+FFFD: two different keys ` +
    'would become one claim. Fix: cut keys at whole characters (Array.from(text).slice(0, n).join(""), not text.slice(0, n)), or hash them';
  const tooLong = (source: string) => `${source} gave a key of 600 bytes; the limit is 512. Use a shorter key, e.g. a UUID or a hash`;

  // message: the parked error names where the bad key came from, so the producer knows what to fix.
  const problems: { name: string; key: InboxOptions<Order>['key']; record: () => ReturnType<typeof sqsRecord>; message: string }[] = [
    {
      name: "'auto' with an over-long idempotency-key attribute",
      key: 'auto',
      record: () => sqsRecord({ key: long }),
      message: tooLong('message attribute "idempotency-key"'),
    },
    { name: "'auto' with an over-long messageId", key: 'auto', record: () => sqsRecord({ messageId: long }), message: tooLong('messageId') },
    { name: "'message-id' with an over-long messageId", key: 'message-id', record: () => sqsRecord({ messageId: long }), message: tooLong('messageId') },
    {
      name: "'deduplication-id' with an over-long deduplication id",
      key: 'deduplication-id',
      record: () => sqsRecord({ groupId: 'g', attributes: { MessageDeduplicationId: long } }),
      message: tooLong('MessageDeduplicationId'),
    },
    {
      name: "'deduplication-id' on a standard queue's record",
      key: 'deduplication-id',
      record: () => sqsRecord(),
      message: 'the record has no MessageDeduplicationId: key "deduplication-id" needs a FIFO queue',
    },
    {
      name: '{ attribute } on a record with no message attributes at all',
      key: { attribute: 'order-key' },
      record: () => ({ ...sqsRecord(), messageAttributes: undefined as never }),
      message: 'message attribute "order-key" is missing; the producer must set it on every message',
    },
    {
      name: '{ attribute } with a Binary attribute',
      key: { attribute: 'order-key' },
      record: () => withBinaryAttribute('order-key'),
      message: binaryKey('order-key'),
    },
    {
      // Before, 'auto' took the messageId: a producer's re-send under a new messageId was applied twice.
      name: "'auto' with a Binary idempotency-key attribute",
      key: 'auto',
      record: () => withBinaryAttribute('idempotency-key'),
      message: binaryKey('idempotency-key'),
    },
    {
      name: '{ attribute } with an over-long value',
      key: { attribute: 'order-key' },
      record: () => withAttribute('order-key', long),
      message: tooLong('message attribute "order-key"'),
    },
    { name: 'a key function that returns an over-long key', key: () => long, record: () => sqsRecord(), message: tooLong('the key function') },
    {
      name: 'a key function that returns an empty key',
      key: () => '',
      record: () => sqsRecord(),
      message: 'the key function gave an empty key; every message needs a non-empty idempotency key',
    },
    {
      // Before, it was told it "gave an empty key".
      name: 'a key function that returns a number',
      key: (() => 42) as never,
      record: () => sqsRecord(),
      message: 'the key function gave the number 42, not a string. Fix: give every message a non-empty string key, e.g. String(value)',
    },
    {
      name: 'a key function that returns a promise',
      key: (async () => 'k') as never,
      record: () => sqsRecord(),
      message:
        'the key function gave a Promise (a key function runs synchronously: return the key itself), not a string. Fix: give every message a non-empty string key, e.g. String(value)',
    },
    {
      name: 'a key function that returns an object',
      key: (() => ({ id: 1 })) as never,
      record: () => sqsRecord(),
      message: 'the key function gave an object, not a string. Fix: give every message a non-empty string key, e.g. String(value)',
    },
    {
      // Before, PostgreSQL stored it as U+FFFD: another key cut through another emoji became the same claim.
      name: 'a key function that cuts a key through an emoji',
      key: () => 'order-\u{1F600}'.slice(0, 7),
      record: () => sqsRecord(),
      message: loneSurrogate('the key function', 6),
    },
  ];

  it.each(problems)('parks a record with a KeyError naming the source of the key: $name', async ({ key, record: makeRecord, message }) => {
    const { handler, logger } = make('park', { key });
    const bad = makeRecord();
    expect((await handler({ Records: [bad] }, lambdaContext())).batchItemFailures).toEqual([]);
    // An id is kept to its first 512 characters: the over-long messageId is cut, and says so.
    const storedId = bad.messageId.length > 512 ? `${bad.messageId.slice(0, 512)} [cut: ${bad.messageId.length} characters]` : bad.messageId;
    expect(await db.query('SELECT sqs_message_id, error_class, error_message FROM inbox.parked_message')).toEqual([
      { sqs_message_id: storedId, error_class: 'KeyError', error_message: message },
    ]);
    expect(await db.query('SELECT message_id FROM inbox.consumed_message')).toEqual([]);
    expect(logger.lines.filter((l) => l.level === 'warn')).toEqual([
      { level: 'warn', message: 'record parked', extra: [{ messageId: bad.messageId, error: { name: 'KeyError', message } }] },
    ]);
  });

  it('parks a record that has no body with a ParseError, storing an empty body and its attributes as delivered', async () => {
    const { handler } = make('park');
    const record = { ...sqsRecord({ key: 'no-body', attributes: { AWSTraceHeader: 'Root=1-abc' } }), body: undefined as never };
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(await db.query("SELECT convert_from(payload, 'UTF8') AS body, error_class, message_key, attributes FROM inbox.parked_message")).toEqual([
      {
        body: '',
        error_class: 'ParseError',
        message_key: 'no-body',
        attributes: { attributes: record.attributes, messageAttributes: record.messageAttributes, eventSourceARN: record.eventSourceARN },
      },
    ]);
  });

  const chosen: {
    name: string;
    key: InboxOptions<Order>['key'];
    record: () => ReturnType<typeof sqsRecord>;
    expected: (record: ReturnType<typeof sqsRecord>) => string;
  }[] = [
    { name: "'auto' takes the idempotency-key attribute", key: 'auto', record: () => sqsRecord({ key: 'producer-key' }), expected: () => 'producer-key' },
    {
      name: "'auto' takes the messageId of a record with no message attributes at all",
      key: 'auto',
      record: () => ({ ...sqsRecord(), messageAttributes: undefined as never }),
      expected: (r) => r.messageId,
    },
    {
      name: "'message-id' takes the messageId even when the producer set a key",
      key: 'message-id',
      record: () => sqsRecord({ key: 'producer-key' }),
      expected: (r) => r.messageId,
    },
    {
      name: "'deduplication-id' takes the FIFO deduplication id",
      key: 'deduplication-id',
      record: () => sqsRecord({ groupId: 'g', key: 'producer-key' }),
      expected: (r) => r.attributes.MessageDeduplicationId!,
    },
    {
      name: '{ attribute } takes that attribute',
      key: { attribute: 'order-key' },
      record: () => withAttribute('order-key', 'attr-key'),
      expected: () => 'attr-key',
    },
    {
      name: `a key of exactly ${MAX_KEY_BYTES} bytes is accepted`,
      key: 'auto',
      record: () => sqsRecord({ key: 'é'.repeat(MAX_KEY_BYTES / 2) }),
      expected: () => 'é'.repeat(MAX_KEY_BYTES / 2),
    },
  ];

  it.each(chosen)('claims the key it chose: $name', async ({ key, record: makeRecord, expected }) => {
    const { handler } = make('retry', { key });
    const record = makeRecord();
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(await db.query('SELECT message_id FROM inbox.consumed_message')).toEqual([{ message_id: expected(record) }]);
  });

  it(`applies a body of exactly ${MAX_BODY_BYTES} bytes, the most SQS delivers`, async () => {
    const { handler } = make('retry');
    const envelope = JSON.stringify({ orderId: 'biggest', pad: '' });
    const body = JSON.stringify({ orderId: 'biggest', pad: 'x'.repeat(MAX_BODY_BYTES - Buffer.byteLength(envelope)) });
    expect(Buffer.byteLength(body)).toBe(MAX_BODY_BYTES);
    expect((await handler({ Records: [sqsRecord({ body })] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(await db.query("SELECT order_id FROM public.orders WHERE order_id = 'biggest'")).toHaveLength(1);
  });
});

describe.each(['transaction', 'statement'] as const)('a record that is not an object, in %s mode', (mode) => {
  const notARecord = (what: string) => `the record is ${what}, not an object; SQS records from Lambda are always objects`;
  const NO_MESSAGE_ID = 'a record that did not commit has no messageId, so it cannot be reported alone; failing the whole batch so SQS delivers it again';

  it.each([
    ['null', null],
    ['a number', 42],
    ['a string', 'orders'],
    ['undefined', undefined],
  ])('is %s: fails alone with a ParseError naming it, its batch mates apply once, and the batch fails whole (retry)', async (_, record) => {
    const { handler, logger } = make('retry', {}, mode);
    const first = sqsRecord({ body: { orderId: 'before' } });
    const last = sqsRecord({ body: { orderId: 'after' } });
    // Without a messageId the record cannot be reported alone, and reporting it succeeded would lose it.
    await expect(handler({ Records: [first, record as never, last] }, lambdaContext())).rejects.toThrow(NO_MESSAGE_ID);
    expect(JSON.stringify(logger.lines)).toContain(`"name":"ParseError","message":"${notARecord(record === null ? 'null' : typeof record)}"`);
    expect(await db.query('SELECT order_id, shipped_count FROM public.orders ORDER BY order_id')).toEqual([
      { order_id: 'after', shipped_count: 1 },
      { order_id: 'before', shipped_count: 1 },
    ]);
    // The redelivery of the whole batch applies nothing twice.
    await expect(handler({ Records: [first, record as never, last] }, lambdaContext())).rejects.toThrow(NO_MESSAGE_ID);
    expect(await db.query('SELECT sum(shipped_count)::int AS n FROM public.orders')).toEqual([{ n: 2 }]);
  });

  it('is parked with its ParseError when it is null (park), and its batch mates succeed', async () => {
    const { handler } = make('park', {}, mode);
    const first = sqsRecord({ body: { orderId: 'before' } });
    const response = await handler({ Records: [first, null as never] }, lambdaContext());
    expect(response).toEqual({ batchItemFailures: [] });
    expect(await db.query('SELECT sqs_message_id, message_key, payload, error_class, error_message, attributes FROM inbox.parked_message')).toEqual([
      {
        sqs_message_id: '',
        message_key: null,
        payload: Buffer.alloc(0),
        error_class: 'ParseError',
        error_message: notARecord('null'),
        attributes: { attributes: {}, messageAttributes: {} },
      },
    ]);
    expect(await db.query('SELECT order_id FROM public.orders')).toEqual([{ order_id: 'before' }]);
  });

  it('takes a record whose eventSourceARN is not a string as naming no queue', async () => {
    const { handler } = make('retry', {}, mode);
    const record = { ...sqsRecord({ body: { orderId: 'odd-arn' } }), eventSourceARN: 42 as never };
    expect(await handler({ Records: [record] }, lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(await db.query('SELECT order_id FROM public.orders')).toEqual([{ order_id: 'odd-arn' }]);
  });
});

describe('a FIFO batch of records Lambda would never send', () => {
  it('keeps a FIFO batch ordered when its first record is null: a failed group stops there', async () => {
    const { handler } = make(
      'park',
      {
        apply: async (tx, message) => {
          if (message.body.orderId === 'g-1') throw new Error('warehouse down');
          await tx.execute("INSERT INTO public.orders (order_id, status, shipped_count) VALUES (:orderId, 'shipped', 1)", { orderId: message.body.orderId });
        },
        statement: undefined,
      },
      'transaction',
    );
    const failing = sqsRecord({ groupId: 'g', body: { orderId: 'g-1' } });
    const later = sqsRecord({ groupId: 'g', body: { orderId: 'g-2' } });
    const response = await handler({ Records: [null as never, failing, later] }, lambdaContext());
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: failing.messageId }, { itemIdentifier: later.messageId }]);
    expect(await db.query('SELECT order_id FROM public.orders')).toEqual([]);
  });

  it('runs its records without attributes as one group: after a failure, the rest of them wait', async () => {
    const { handler } = make('retry', {
      apply: async (tx, message) => {
        if (message.body.orderId === 'bare-1') throw new Error('warehouse down');
        await tx.execute("INSERT INTO public.orders (order_id, status, shipped_count) VALUES (:orderId, 'shipped', 1)", { orderId: message.body.orderId });
      },
    });
    const bare = (orderId: string) => ({ ...sqsRecord({ groupId: 'g', body: { orderId } }), attributes: undefined as never });
    const [failing, later] = [bare('bare-1'), bare('bare-2')];
    const response = await handler({ Records: [failing, later] }, lambdaContext());
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: failing.messageId }, { itemIdentifier: later.messageId }]);
    expect(await db.query('SELECT order_id FROM public.orders')).toEqual([]);
  });
});

describe('events that are not SQS events', () => {
  const foreign: [string, unknown, RegExp][] = [
    ['an empty object', {}, /inbox\(\) handles SQS events, which carry a "Records" array; got an empty object\. Check the function's trigger/],
    ['null', null, /got null\./],
    ['"Records" that is a string', { Records: 'oops' }, /got "Records" of type string\./],
    [
      'a Kafka event (records keyed by partition, no Records array)',
      { eventSource: 'aws:kafka', records: { 'orders-0': [] } },
      /It looks like an event from an Amazon MSK topic\./,
    ],
    [
      'a Kinesis event',
      { Records: [{ eventSource: 'aws:kinesis', kinesis: { data: 'e30=', sequenceNumber: '1' } }] },
      /Records\[0\]\.eventSource is "aws:kinesis" \(a Kinesis stream\), not "aws:sqs"/,
    ],
    [
      'a DynamoDB Streams event',
      { Records: [{ eventSource: 'aws:dynamodb', eventID: '1', dynamodb: {} }] },
      /Records\[0\]\.eventSource is "aws:dynamodb" \(a DynamoDB stream\)/,
    ],
  ];

  it.each(foreign)('refuses %s with UnexpectedEventError before any record runs', async (_, event, message) => {
    const { handler } = make('retry');
    const error = await handler(event as never, lambdaContext()).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(UnexpectedEventError);
    expect((error as Error).message).toMatch(message);
    expect(await db.query('SELECT 1 FROM inbox.consumed_message')).toEqual([]);
  });

  it('refuses a batch where one record comes from another source, applying none of the SQS ones', async () => {
    const { handler } = make('retry');
    const error = await handler({ Records: [sqsRecord(), { eventSource: 'aws:kinesis' } as never] }, lambdaContext()).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((error as Error).message).toMatch(/Records\[1\]\.eventSource is "aws:kinesis"/);
    expect(await db.query('SELECT 1 FROM public.orders')).toEqual([]);
  });

  it('answers an empty Records array with no failures and no Data API call', async () => {
    const { handler } = make('retry');
    db.server.stats.reset();
    expect(await handler({ Records: [] }, lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(db.server.stats.total()).toBe(0);
  });

  it.each(['retry', 'park'] as const)('fails alone a record without a body string (%s), naming the field', async (mode) => {
    const { handler, logger } = make(mode);
    const good = sqsRecord({ body: { orderId: 'bodied' } });
    const bodiless = { ...sqsRecord(), body: undefined as never };
    const response = await handler({ Records: [bodiless, good] }, lambdaContext());
    expect(response.batchItemFailures).toEqual(mode === 'retry' ? [{ itemIdentifier: bodiless.messageId }] : []);
    expect(JSON.stringify(logger.lines)).toMatch(/ParseError.*the record has no body string \(body is undefined\)/);
    expect(await db.query("SELECT order_id FROM public.orders WHERE order_id = 'bodied'")).toHaveLength(1);
    if (mode === 'park') {
      expect(await db.query("SELECT sqs_message_id, convert_from(payload, 'UTF8') AS body FROM inbox.parked_message")).toEqual([
        { sqs_message_id: bodiless.messageId, body: '' },
      ]);
    }
  });

  it('names a null body as null', async () => {
    const { handler, logger } = make('retry');
    await handler({ Records: [{ ...sqsRecord(), body: null as never }] }, lambdaContext());
    expect(JSON.stringify(logger.lines)).toMatch(/the record has no body string \(body is null\)/);
  });

  it('names the keys of an object that is not an SQS event', async () => {
    const { handler } = make('retry');
    await expect(handler({ detail: {}, source: 'aws.events' } as never, lambdaContext())).rejects.toThrow(/got an object with "detail", "source"\./);
  });

  it('takes a hand-built record without eventSource as SQS, and names an unknown eventSource plainly', async () => {
    const { handler } = make('retry');
    const { eventSource: _, eventSourceARN: __, ...bare } = sqsRecord({ body: { orderId: 'hand-built' } });
    expect((await handler({ Records: [bare as never] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(await db.query("SELECT 1 FROM public.orders WHERE order_id = 'hand-built'")).toHaveLength(1);
    await expect(handler({ Records: [{ eventSource: 'aws:custom' } as never] }, lambdaContext())).rejects.toThrow(
      'inbox() handles SQS events; Records[0].eventSource is "aws:custom", not "aws:sqs". Check the function\'s trigger: it must be an SQS event source mapping with ReportBatchItemFailures.',
    );
  });
});

// A body that PostgreSQL cannot store as it is: U+0000 in a string (the JSON escape, which SQS delivers).
const skuOf = (message: InboxMessage<Order>) => (message.body as { sku?: string }).sku ?? message.body.orderId;
const nulBody = () => sqsRecord({ key: `nul-${uniqueness()}`, body: `{"orderId":"nul-order","sku":"ab\\u0000c"}` });
/** Each way a message's own text can meet PostgreSQL: a rejection that quotes it, and statements that write it. */
const nulModes = {
  'apply throws a PermanentError quoting the sku': {
    options: {
      apply: async (_, message) => {
        const { sku } = message.body as { sku?: string };
        if (sku !== undefined) throw new PermanentError(`sku ${sku} is unknown`);
      },
    },
    mode: 'transaction',
    errorClass: 'PermanentError',
    stored: 'sku ab\\u0000c is unknown',
  },
  'apply writes the sku': {
    options: {
      apply: async (tx, message) => void (await tx.execute("INSERT INTO public.orders (order_id, status) VALUES (:sku, 'shipped')", { sku: skuOf(message) })),
    },
    mode: 'transaction',
    errorClass: 'UnstorableTextError',
    stored: /^message\.body\.sku holds U\+0000, which PostgreSQL cannot store in text or jsonb, and a statement that reads it was refused \(SQLState 22021\)/,
  },
  'a single statement writes the sku': {
    options: {
      statement: {
        sql: "INSERT INTO public.orders (order_id, status) SELECT :sku, 'shipped' FROM claimed",
        params: (message: InboxMessage<Order>) => ({ sku: skuOf(message) }),
      },
    },
    mode: 'statement',
    errorClass: 'UnstorableTextError',
    stored: /^message\.body\.sku holds U\+0000/,
  },
} satisfies Record<string, { options: Partial<InboxOptions<Order>>; mode: keyof typeof effects; errorClass: string; stored: string | RegExp }>;

describe('a body holding text PostgreSQL cannot store (U+0000)', () => {
  it.each(Object.keys(nulModes))('is parked when %s, its error stored escaped and its body byte for byte', async (name) => {
    const { options, mode, errorClass, stored } = nulModes[name as keyof typeof nulModes];
    const { handler, metrics } = make('park', options, mode);
    const record = nulBody();
    const good = sqsRecord({ body: { orderId: 'beside-it' } });

    const response = await handler({ Records: [record, good] }, lambdaContext());

    expect(response.batchItemFailures).toEqual([]);
    expect(metrics.published[0]).toMatchObject({ Parked: [1], Failures: [0] });
    const [row] = await db.query('SELECT error_class, error_message, payload FROM inbox.parked_message');
    expect(row!.error_class).toBe(errorClass);
    expect(row!.error_message).toEqual(typeof stored === 'string' ? stored : expect.stringMatching(stored));
    expect(Buffer.from(row!.payload).equals(Buffer.from(record.body, 'utf8'))).toBe(true);
  });

  it.each(Object.keys(nulModes))('fails as the permanent error it is when %s and the consumer retries, logged with its class', async (name) => {
    const { options, mode, errorClass } = nulModes[name as keyof typeof nulModes];
    const { handler, logger } = make('retry', options, mode);
    const record = nulBody();

    const response = await handler({ Records: [record] }, lambdaContext());

    expect(response.batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    const [warning] = logger.lines.filter((line) => line.level === 'warn');
    expect((warning!.extra[0] as { error: { name: string } }).error.name).toBe(errorClass);
  });

  it('leaves such a refusal temporary for a message that holds no such text: the text came from elsewhere', async () => {
    const { handler, logger } = make('park', {
      apply: async (tx) => void (await tx.execute("SELECT convert_from(:bytes, 'UTF8')", { bytes: new Uint8Array([0x61, 0]) })),
    });
    const record = sqsRecord({ body: { orderId: 'clean' } });

    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect(JSON.stringify(logger.lines)).toMatch(/"name":"(DataApiError|PostgresError)"/);
    expect(await db.query('SELECT 1 FROM inbox.parked_message')).toEqual([]);
  });

  it('bounds the error message it parks to 4000 characters, and says how long it was', async () => {
    const long = `refused: ${'x'.repeat(100_000)}`;
    const { handler } = make('park', {
      apply: async () => {
        throw new PermanentError(long);
      },
    });
    await handler({ Records: [sqsRecord()] }, lambdaContext());
    const [row] = await db.query('SELECT error_message FROM inbox.parked_message');
    expect(row!.error_message).toBe(`${long.slice(0, 4000)} [cut: ${long.length} characters]`);
  });
});

/** A body that is not JSON, with a secret in its first characters: what JSON.parse's message quotes (Node 20+). */
const SECRET = 'card=4111111111111111';
const secretive = () => sqsRecord({ body: `${SECRET} is not JSON` });
const parsers = {
  'the default parse': {},
  'a parse of its own that calls JSON.parse': { parse: (body: string) => JSON.parse(body) },
  'parseWith a schema': { parse: parseWith(z.object({ orderId: z.string() })) },
  'a parse that throws a message quoting the body': {
    parse: (body: string) => {
      throw new Error(`cannot read ${body}`);
    },
  },
} satisfies Record<string, Partial<InboxOptions<Order>>>;

describe.each(['retry', 'park'] as const)('a malformed body (%s) never reaches a log line or the parked row', (onPermanentError) => {
  it.each(Object.keys(parsers))('with %s', async (name) => {
    const { handler, logger } = make(onPermanentError, parsers[name as keyof typeof parsers]);
    const record = secretive();

    await handler({ Records: [record] }, lambdaContext());

    const logged = JSON.stringify(logger.lines);
    expect(logged).toMatch(/ParseError/);
    expect(logged).not.toContain('4111');
    const parked = await db.query('SELECT error_message FROM inbox.parked_message');
    expect(parked).toHaveLength(onPermanentError === 'park' ? 1 : 0);
    for (const row of parked) expect(row.error_message).not.toContain('4111');
  });
});

describe('what a ParseError says instead of the body', () => {
  const said = async (options: Partial<InboxOptions<Order>>, body: string) => {
    const { handler, logger } = make('retry', options);
    await handler({ Records: [sqsRecord({ body })] }, lambdaContext());
    return (logger.lines.find((line) => line.level === 'warn')!.extra[0] as { error: { message: string } }).error.message;
  };

  it('names where and how a body stops being JSON', async () => {
    expect(await said({}, '{"orderId": "x"')).toBe('the body could not be parsed: not JSON: unexpected end of the text at position 15 of 15');
    expect(await said({ parse: (body) => JSON.parse(body) }, '{"orderId": x}')).toBe(
      'the body could not be parsed: not JSON: unexpected character at position 12 of 14',
    );
  });

  it('keeps the words of a PermanentError that parse throws, since its author chose them', async () => {
    const parse = () => {
      throw new ParseError('schema version 3 is not supported');
    };
    expect(await said({ parse }, '{}')).toBe('the body could not be parsed: schema version 3 is not supported');
  });

  it('names only the class of anything else parse throws, and how to choose the words', async () => {
    const parse = () => {
      throw new RangeError('quoting the body');
    };
    const syntaxOverJson = () => {
      throw new SyntaxError('quoting the body');
    };
    const string = () => {
      throw 'quoting the body';
    };
    const generic = (thrown: string) =>
      `the body could not be parsed: parse threw ${thrown}, whose message is left out of logs and the parked row because it may quote the body; throw a ParseError from parse to choose what is said`;
    expect(await said({ parse }, '{}')).toBe(generic('RangeError'));
    // A SyntaxError over a body that is JSON is not JSON's: it is named, not placed.
    expect(await said({ parse: syntaxOverJson }, '{}')).toBe(generic('SyntaxError'));
    expect(await said({ parse: string }, '{}')).toBe(generic('a string'));
  });

  it('names the fields a schema refused, and its messages only when asked to', async () => {
    const Strict = z.object({ orderId: z.string(), quantity: z.number() });
    const body = JSON.stringify({ orderId: 7, quantity: 'seven-4111' });
    expect(await said({ parse: parseWith(Strict) }, body)).toBe(
      'the body could not be parsed: the zod schema refused the body at body.orderId, body.quantity; its messages are left out, as they can quote the body (parseWith(schema, { issueMessages: true }) keeps them)',
    );
    expect(await said({ parse: parseWith(Strict, { issueMessages: true }) }, body)).toMatch(
      /^the body could not be parsed: body\.orderId: .+; body\.quantity: .+/,
    );
  });
});
