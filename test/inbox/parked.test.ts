import type { SQSRecord } from 'aws-lambda';
import fc from 'fast-check';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inbox, PermanentError } from '../../lambda/inbox/index.js';
import { ParkedCollisionError } from '../../lambda/inbox/errors.js';
import { payloadHash } from '../../lambda/inbox/prepare/keys.js';
import type { InboxOptions } from '../../lambda/inbox/index.js';
import { inboxFixture, lambdaContext, recordingLogger, recordingMetrics, sqsRecord, TRANSPORT } from '../support/inbox.js';
import { CURRENT } from '../support/transport.js';
import { textBytes } from '../../lambda/inbox/sources/text-bytes.js';
import type { InboxFixture } from '../support/inbox.js';
import type { GatedStatement, InboxMessage } from '../../lambda/inbox/index.js';
import { parkedMessages } from '../../lambda/inbox/parked/parking.js';
import { propertyParameters } from '../support/seed.js';

let db: InboxFixture;
beforeAll(async () => {
  db = await inboxFixture('parked');
});
afterAll(async () => db.close());

type Order = { orderId: string };

/**
 * A single-statement mode handler whose parser refuses every body (so records park) until `fix()` is
 * called, as when a deploy fixes the cause before the replay.
 */
function parkingUntilFixed(consumer: string, statement: (message: InboxMessage<Order>) => GatedStatement) {
  let strict = true;
  const handler = parking(consumer, {
    parse: (body) => {
      if (strict) throw new Error('unknown schema version');
      return JSON.parse(body);
    },
    statement,
  });
  return { handler, fix: () => void (strict = false), fixed: () => !strict };
}

/** A handler of `consumer` that parks permanent errors, in the mode `options` names. */
function parking(consumer: string, options: Partial<InboxOptions<Order>>) {
  return inbox<Order>({
    consumer,
    database: db.target,
    logger: recordingLogger(),
    metrics: recordingMetrics(),
    onPermanentError: 'park',
    ...options,
  } as InboxOptions<Order>);
}

describe('parked messages', () => {
  it('parks a business rejection without blocking its FIFO group, then replays it once after the fix', async () => {
    let rejecting = true;
    const handler = inbox<Order>({
      consumer: 'order-worker',
      database: db.target,
      logger: recordingLogger(),
      metrics: recordingMetrics(),
      onPermanentError: 'park',
      apply: async (tx, message) => {
        if (rejecting && message.body.orderId === 'order-2') throw new PermanentError('warehouse code unknown');
        await tx.execute(
          `INSERT INTO public.orders (order_id, status, shipped_count) VALUES (:orderId, 'shipped', 1)
           ON CONFLICT (order_id) DO UPDATE SET shipped_count = orders.shipped_count + 1`,
          { orderId: message.body.orderId },
        );
      },
    });
    const records = [1, 2, 3].map((i) => sqsRecord({ body: { orderId: `order-${i}` }, groupId: 'customer-1' }));
    const response = await handler({ Records: records }, lambdaContext());
    expect(response.batchItemFailures).toEqual([]);
    const shipped = await db.query('SELECT order_id FROM public.orders ORDER BY order_id');
    expect(shipped.map((r) => r.order_id)).toEqual(['order-1', 'order-3']);

    const parked = await parkedMessages(handler).list();
    expect(parked).toHaveLength(1);
    expect(parked[0]).toMatchObject({
      sqsMessageId: records[1]!.messageId,
      errorClass: 'PermanentError',
      errorMessage: 'warehouse code unknown',
      replayedAt: null,
    });
    expect(parked[0]!.parkedAt).toBeInstanceOf(Date);

    // Parking claimed the key, so a redelivery, even once the cause is fixed, is a duplicate: only the
    // replay applies it.
    expect(await db.query('SELECT 1 FROM inbox.consumed_message WHERE message_id = $1', [records[1]!.messageId])).toHaveLength(1);
    rejecting = false;
    expect((await handler({ Records: [records[1]!] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(await db.query("SELECT 1 FROM public.orders WHERE order_id = 'order-2'")).toHaveLength(0);
    expect(await parkedMessages(handler).list()).toHaveLength(1);

    expect(await parkedMessages(handler).replay(parked[0]!.id)).toBe('replayed');
    expect(await parkedMessages(handler).replay(parked[0]!.id)).toBe('already-replayed');
    expect(await parkedMessages(handler).replay(999_999)).toBe('not-found');
    const after = await db.query("SELECT shipped_count FROM public.orders WHERE order_id = 'order-2'");
    expect(after).toEqual([{ shipped_count: 1 }]);
    expect(await parkedMessages(handler).list()).toHaveLength(0);
    expect(await parkedMessages(handler).list({ includeReplayed: true })).toHaveLength(1);
  });

  it('applies a message once when two replays of it race: one replayed, the other already-replayed', async () => {
    let rejecting = true;
    const handler = inbox<Order>({
      consumer: 'racing-replays',
      database: db.target,
      logger: recordingLogger(),
      metrics: recordingMetrics(),
      onPermanentError: 'park',
      apply: async (tx, message) => {
        if (rejecting) throw new PermanentError('warehouse code unknown');
        // Hold the replay's transaction open after it read the parked row, so the other replay reads it
        // while this one has not committed: without the row lock both would see it unreplayed.
        await tx.execute('SELECT pg_sleep(0.3)');
        await tx.execute(
          `INSERT INTO public.orders (order_id, status, shipped_count) VALUES (:orderId, 'shipped', 1)
           ON CONFLICT (order_id) DO UPDATE SET shipped_count = orders.shipped_count + 1`,
          { orderId: message.body.orderId },
        );
      },
    });
    await handler({ Records: [sqsRecord({ body: { orderId: 'order-raced' } })] }, lambdaContext());
    const [parked] = await parkedMessages(handler).list();
    rejecting = false;

    const racing = [parkedMessages(handler).replay(parked!.id), parkedMessages(handler).replay(parked!.id)];
    const results = await Promise.all(racing);

    expect(await db.query("SELECT shipped_count FROM public.orders WHERE order_id = 'order-raced'")).toEqual([{ shipped_count: 1 }]);
    expect(results.sort()).toEqual(['already-replayed', 'replayed']);
    expect(await parkedMessages(handler).list()).toEqual([]);
  });

  it('leaves a message parked when its replay still fails', async () => {
    const handler = inbox<Order>({
      consumer: 'strict',
      database: db.target,
      logger: recordingLogger(),
      metrics: recordingMetrics(),
      onPermanentError: 'park',
      apply: async () => {
        throw new PermanentError('still wrong');
      },
    });
    await handler({ Records: [sqsRecord()] }, lambdaContext());
    const [parked] = await parkedMessages(handler).list();
    await expect(parkedMessages(handler).replay(parked!.id)).rejects.toThrow('still wrong');
    expect(await parkedMessages(handler).list()).toHaveLength(1);
  });

  it('replays in single-statement mode: the gated statement runs once under the parked claim', async () => {
    const { handler, fix } = parkingUntilFixed('single-statement-replay', (message) => ({
      sql: `INSERT INTO public.orders (order_id, status, shipped_count) SELECT :orderId, 'shipped', 1 FROM claimed
            ON CONFLICT (order_id) DO UPDATE SET shipped_count = orders.shipped_count + 1;`,
      params: { orderId: message.body.orderId },
    }));
    const record = sqsRecord({ body: { orderId: 'order-single' }, key: 'order-single' });
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([]);
    const [parked] = await parkedMessages(handler).list();
    fix();
    expect(await parkedMessages(handler).replay(parked!.id)).toBe('replayed');
    expect(await handler({ Records: [record] }, lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(await db.query("SELECT shipped_count FROM public.orders WHERE order_id = 'order-single'")).toEqual([{ shipped_count: 1 }]);
  });

  it('refuses, at replay, a single-statement mode statement that uses a reserved parameter name', async () => {
    const { handler, fix, fixed } = parkingUntilFixed('single-statement-reserved', (message) => ({
      sql: 'INSERT INTO public.orders (order_id) SELECT :inbox_order FROM claimed',
      params: fixed() ? { inbox_order: message.body.orderId } : {},
    }));
    await handler({ Records: [sqsRecord()] }, lambdaContext());
    const [parked] = await parkedMessages(handler).list();
    fix();
    await expect(parkedMessages(handler).replay(parked!.id)).rejects.toThrow('inbox option "statement": parameter ":inbox_order" uses the prefix inbox_');
  });

  it('parks a record that came without a messageId under an empty id, losing nothing else', async () => {
    const handler = inbox<Order>({
      consumer: 'unnamed-record',
      database: db.target,
      logger: recordingLogger(),
      metrics: recordingMetrics(),
      onPermanentError: 'park',
      apply: async () => {
        throw new PermanentError('warehouse code unknown');
      },
    });
    const record = { ...sqsRecord({ body: { orderId: 'order-u' }, key: 'key-u' }), messageId: '' };
    expect(await handler({ Records: [record] }, lambdaContext())).toEqual({ batchItemFailures: [] });
    expect((await parkedMessages(handler).list()).map(({ sqsMessageId, key, body, errorMessage }) => ({ sqsMessageId, key, body, errorMessage }))).toEqual([
      { sqsMessageId: '', key: 'key-u', body: record.body, errorMessage: 'warehouse code unknown' },
    ]);
  });

  it('hands apply, at replay, the parked record with the delivery-only fields left empty', async () => {
    let rejecting = true;
    const seen: unknown[] = [];
    const handler = inbox<Order>({
      consumer: 'replayed-record',
      database: db.target,
      logger: recordingLogger(),
      metrics: recordingMetrics(),
      onPermanentError: 'park',
      apply: async (_, message) => {
        if (rejecting) throw new PermanentError('not yet');
        seen.push(message);
      },
    });
    const record = sqsRecord({ body: { orderId: 'order-r' }, key: 'key-r', groupId: 'g-r', receiveCount: 2 });
    await handler({ Records: [record] }, lambdaContext());
    const [parked] = await parkedMessages(handler).list();
    rejecting = false;
    db.server.stats.reset();
    await parkedMessages(handler).replay(parked!.id);
    // Once; where a conflict rolls the replay back (the dsql-conflicts project), once more per conflict, the
    // same record each time.
    expect(seen.length).toBeGreaterThanOrEqual(1);
    expect(seen.length).toBeLessThanOrEqual(1 + db.conflictsInjected());
    expect(new Set(seen.map((message) => JSON.stringify(message))).size).toBe(1);
    expect(seen.slice(0, 1)).toEqual([
      {
        key: 'key-r',
        body: { orderId: 'order-r' },
        id: record.messageId,
        attempt: 2,
        groupId: 'g-r',
        record: {
          messageId: record.messageId,
          receiptHandle: '',
          body: record.body,
          attributes: record.attributes,
          messageAttributes: record.messageAttributes,
          md5OfBody: '',
          eventSource: 'aws:sqs',
          eventSourceARN: '',
          awsRegion: '',
        },
      },
    ]);
  });
});

// Ships an order and records the key it was applied under, in each per-record mode.
const SHIP_UNDER_KEY = `INSERT INTO public.orders (order_id, status, shipped_count, last_key) VALUES (:orderId, 'shipped', 1, :key)
  ON CONFLICT (order_id) DO UPDATE SET shipped_count = orders.shipped_count + 1, last_key = excluded.last_key`;
const COLLISION_MODES: Record<string, Partial<InboxOptions<Order>>> = {
  apply: { apply: async (tx, message) => void (await tx.execute(SHIP_UNDER_KEY, { orderId: message.body.orderId, key: message.key })) },
  statement: {
    statement: {
      sql: `INSERT INTO public.orders (order_id, status, shipped_count, last_key) SELECT :orderId, 'shipped', 1, message_id FROM claimed
            ON CONFLICT (order_id) DO UPDATE SET shipped_count = orders.shipped_count + 1, last_key = excluded.last_key`,
      params: (message: InboxMessage<Order>) => ({ orderId: message.body.orderId }),
    },
  },
};

describe('parkedMessages(handler)', () => {
  it('refuses what is not a handler an inbox made, naming what to pass', () => {
    for (const given of [{}, () => {}, null]) {
      expect(() => parkedMessages(given as object)).toThrow(
        new TypeError(
          'parkedMessages(handler): pass the handler that inbox() (or kinesisInbox(), dynamoDbInbox(), kafkaInbox()) returned, ' +
            'imported from sqs-inbox the way parkedMessages is (both with import, or both with require)',
        ),
      );
    }
  });

  it("lists what the consumer parked, whichever handler of it asks: the parked rows are the consumer's", async () => {
    const consumer = `asker-${Date.now()}`;
    const parks = parking(consumer, {
      apply: async () => {
        throw new PermanentError('refused');
      },
    });
    await parks({ Records: [sqsRecord({ key: 'asked', body: { orderId: 'asked' } })] }, lambdaContext());
    // A handler of the same consumer that does not park still reads and replays what was parked.
    const retrying = parking(consumer, { onPermanentError: 'retry', apply: async () => {} });
    expect((await parkedMessages(retrying).list()).map((message) => message.key)).toEqual(['asked']);
  });
});

describe('replaying a key collision', () => {
  let run = 0;
  /** Message one takes effect under `key`; message two, another body under the same key, is parked as a collision. */
  async function collided(mode: string) {
    const consumer = `collision-${mode}-${run++}`;
    const key = `${consumer}-key`;
    const handler = parking(consumer, COLLISION_MODES[mode]!);
    const second = () => sqsRecord({ body: { orderId: `${consumer}-2` }, key });
    await handler({ Records: [sqsRecord({ body: { orderId: `${consumer}-1` }, key })] }, lambdaContext());
    expect(await handler({ Records: [second()] }, lambdaContext())).toEqual({ batchItemFailures: [] });
    const [parked] = await parkedMessages(handler).list();
    expect(parked).toMatchObject({ errorClass: 'KeyCollisionError', key, ownsClaim: false });
    const shipped = async () =>
      db.query('SELECT order_id, shipped_count, last_key FROM public.orders WHERE order_id LIKE $1 ORDER BY order_id', [`${consumer}-%`]);
    return { handler, consumer, key, parked: parked!, second, shipped };
  }

  it.each(Object.keys(COLLISION_MODES))('%s: is refused by default, with the fix, and the message stays parked (as redriveParked refuses it)', async (mode) => {
    const { handler, consumer, key, parked, shipped } = await collided(mode);
    const refusal = parkedMessages(handler).replay(parked.id);
    await expect(refusal).rejects.toThrow(ParkedCollisionError);
    await expect(parkedMessages(handler).replay(parked.id)).rejects.toThrow("replay it with { collision: 'apply-under-new-key' }");
    expect(await shipped()).toEqual([{ order_id: `${consumer}-1`, shipped_count: 1, last_key: key }]);
    expect((await parkedMessages(handler).list()).map((message) => message.id)).toEqual([parked.id]);
  });

  it.each(Object.keys(COLLISION_MODES))(
    "%s: with { collision: 'apply-under-new-key' } applies it once, under its key and body hash; a parked copy of it then applies nothing",
    async (mode) => {
      const { handler, consumer, key, parked, second, shipped } = await collided(mode);
      const ownKey = `${key}@sha256:${Buffer.from(payloadHash(parked.payload)).toString('hex')}`;
      expect(await parkedMessages(handler).replay(parked.id, { collision: 'apply-under-new-key' })).toBe('replayed');
      const both = [
        { order_id: `${consumer}-1`, shipped_count: 1, last_key: key },
        { order_id: `${consumer}-2`, shipped_count: 1, last_key: ownKey },
      ];
      expect(await shipped()).toEqual(both);
      const claims = await db.query('SELECT message_id FROM inbox.consumed_message WHERE consumer_name = $1 ORDER BY message_id', [consumer]);
      expect(claims.map((claim) => claim.message_id)).toEqual([key, ownKey]);
      // The producer sends the second message again: it collides and parks again, and its replay finds its
      // own key claimed.
      expect(await handler({ Records: [second()] }, lambdaContext())).toEqual({ batchItemFailures: [] });
      const [copy] = await parkedMessages(handler).list();
      expect(copy).toMatchObject({ errorClass: 'KeyCollisionError', key });
      expect(await parkedMessages(handler).replay(copy!.id, { collision: 'apply-under-new-key' })).toBe('replayed');
      expect(await shipped()).toEqual(both);
      expect(await parkedMessages(handler).list()).toEqual([]);
    },
  );

  it('refuses an unknown collision choice, naming the two', async () => {
    const { handler, parked } = await collided('apply');
    await expect(parkedMessages(handler).replay(parked.id, { collision: 'apply' as never })).rejects.toThrow("must be 'refuse' or 'apply-under-new-key'");
  });
});

/** A consumer that parks every record it gets, keyless ones included: `key` gives no key, so each parks without a claim. */
function parkingEverything(consumer: string, extra: Partial<InboxOptions<Order>> = {}) {
  const logger = recordingLogger();
  const metrics = recordingMetrics();
  const handler = inbox<Order>({
    consumer,
    database: db.target,
    logger,
    metrics,
    onPermanentError: 'park',
    apply: async () => {
      throw new PermanentError('warehouse code unknown');
    },
    ...extra,
  } as InboxOptions<Order>);
  return { handler, logger, metrics };
}
const rowsOf = (consumer: string) =>
  db.query('SELECT sqs_message_id, convert_from(payload, $2) AS body FROM inbox.parked_message WHERE consumer_name = $1 ORDER BY id', [consumer, 'UTF8']);

describe('a record is its id and its payload', () => {
  let n = 0;
  it.each([
    ['without a key (a KeyError parks it without a claim)', { key: () => '' }],
    ['with a key of its own', {}],
  ] as const)('stores a second, different record under the same id too, %s, and reports neither parked before it is stored', async (_, extra) => {
    const consumer = `same-id-${n++}`;
    const { handler } = parkingEverything(consumer, extra);
    const first = sqsRecord({ messageId: 'reused-id', body: { orderId: 'first' } });
    const second = sqsRecord({ messageId: 'reused-id', body: { orderId: 'second' } });

    expect(await handler({ Records: [first] }, lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(await handler({ Records: [second] }, lambdaContext())).toEqual({ batchItemFailures: [] });

    // Both reported parked: both must be in the table.
    expect(await db.query('SELECT sqs_message_id FROM inbox.parked_message WHERE consumer_name = $1', [consumer])).toEqual([
      { sqs_message_id: 'reused-id' },
      { sqs_message_id: 'reused-id' },
    ]);
    expect(await rowsOf(consumer)).toEqual([
      { sqs_message_id: 'reused-id', body: first.body },
      { sqs_message_id: 'reused-id', body: second.body },
    ]);
  });

  it.each([
    ['with the same payload', { orderId: 'same' }],
    ['with different payloads', undefined],
  ] as const)('stores every record without an id, %s: nothing tells one from another, or from a redelivery', async (_, body) => {
    // Lambda never sends one; a hand-built event can. Two of them with one payload were one row, and the
    // second was reported parked without being stored: acknowledged and lost.
    const consumer = `no-id-${n++}`;
    const { handler } = parkingEverything(consumer);
    const records = ['one', 'two'].map((orderId) => {
      const record: Partial<SQSRecord> = sqsRecord({ body: body ?? { orderId }, attributes: { MessageGroupId: orderId } });
      delete record.messageId;
      return record;
    });

    for (const record of records) expect(await handler({ Records: [record as SQSRecord] }, lambdaContext())).toEqual({ batchItemFailures: [] });

    const rows = await db.query('SELECT sqs_message_id, attributes, error_class FROM inbox.parked_message WHERE consumer_name = $1 ORDER BY id', [consumer]);
    expect(rows.map((row) => [row.sqs_message_id, row.attributes.attributes.MessageGroupId, row.error_class])).toEqual([
      ['', 'one', 'KeyError'],
      ['', 'two', 'KeyError'],
    ]);
  });

  it('stores a record without an id beside a row stored for one like it with its hash, as parkings did before', async () => {
    const consumer = `no-id-${n++}`;
    const { handler } = parkingEverything(consumer);
    const record: Partial<SQSRecord> = sqsRecord({ body: { orderId: 'old' } });
    delete record.messageId;
    await db.query(
      `INSERT INTO inbox.parked_message (consumer_name, sqs_message_id, payload, payload_sha256, attributes, error_class, error_message, attempt)
       VALUES ($1, '', convert_to($2, 'UTF8'), sha256(convert_to($2, 'UTF8')), '{}', 'KeyError', 'old', 1)`,
      [consumer, record.body],
    );

    expect(await handler({ Records: [record as SQSRecord] }, lambdaContext())).toEqual({ batchItemFailures: [] });

    expect(await rowsOf(consumer)).toEqual([
      { sqs_message_id: '', body: record.body },
      { sqs_message_id: '', body: record.body },
    ]);
  });

  it('stores the same record once, however often it is parked', async () => {
    const consumer = `same-record-${n++}`;
    const { handler, metrics } = parkingEverything(consumer, { key: () => '' });
    const record = sqsRecord({ body: { orderId: 'again' } });
    for (const attempt of [1, 2, 3]) {
      const delivery = { ...record, attributes: { ...record.attributes, ApproximateReceiveCount: String(attempt) } };
      expect(await handler({ Records: [delivery] }, lambdaContext())).toEqual({ batchItemFailures: [] });
    }
    expect(await rowsOf(consumer)).toEqual([{ sqs_message_id: record.messageId, body: record.body }]);
    expect(metrics.published.map((m) => m.Parked![0])).toEqual([1, 1, 1]);
  });
});

describe('a parking that another parking of the same record overtakes', () => {
  let n = 0;
  /**
   * Holds a transaction that stores the record's row, lets the handler's parking wait on it, then commits:
   * the parking then finds the row stored by a transaction that began after its statement did.
   */
  async function overtaken(consumer: string, record: ReturnType<typeof sqsRecord>, handler: ReturnType<typeof parkingEverything>['handler']) {
    const other = new pg.Client({ connectionString: db.url });
    await other.connect();
    try {
      await other.query('BEGIN');
      await other.query(
        `INSERT INTO inbox.parked_message (consumer_name, sqs_message_id, payload, payload_sha256, attributes, error_class, error_message, attempt)
         VALUES ($1, $2, $3, $4, '{}', 'PermanentError', 'parked by the other', 1)`,
        [consumer, record.messageId, Buffer.from(record.body), Buffer.from(payloadHash(record.body))],
      );
      const response = handler({ Records: [record] }, lambdaContext());
      await expect
        .poll(async () => (await db.query("SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")).length, {
          timeout: 5000,
        })
        .toBe(1);
      await other.query('COMMIT');
      return await response;
    } finally {
      await other.end();
    }
  }

  it.each([
    ['without a claim', { key: () => '' }],
    ['that claimed its key: the claim is undone with it, for the stored row owns none', {}],
  ] as const)('%s: fails the record with its own error and why it was not parked, and its redelivery finds it parked', async (_, extra) => {
    const consumer = `overtaken-${n++}`;
    const { handler, logger } = parkingEverything(consumer, extra);
    const record = sqsRecord({ key: `key-${consumer}`, body: { orderId: consumer } });

    const response = await overtaken(consumer, record, handler);

    // On the DSQL profile (repeatable read) the insert meets the other's row as a conflict: the parking runs again and finds it.
    if (TRANSPORT === 'dsql') {
      expect(response).toEqual({ batchItemFailures: [] });
    } else {
      expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: record.messageId }] });
      const [warning] = logger.lines.filter((line) => line.level === 'warn');
      expect(warning!.message).toBe('record failed, and could not be parked; SQS will deliver it again');
      expect(warning!.extra[0]).toMatchObject({ messageId: record.messageId, error: { name: expect.stringMatching(/^(PermanentError|KeyError)$/) } });
    }
    expect(await db.query('SELECT 1 FROM inbox.consumed_message WHERE consumer_name = $1', [consumer])).toEqual([]);
    expect(await handler({ Records: [record] }, lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(await db.query('SELECT error_message, owns_claim FROM inbox.parked_message WHERE consumer_name = $1', [consumer])).toEqual([
      { error_message: 'parked by the other', owns_claim: false },
    ]);
  });
});

describe('a parking that fails', () => {
  it('leaves the record failed with its own error, and logs why it could not be parked', async () => {
    const { handler, logger } = parkingEverything(`park-fails-${Date.now()}`);
    const record = sqsRecord({ body: 'not json' });
    db.server.faults.serverError({ count: 1, select: (call) => call.sql?.includes('INSERT INTO "inbox"."parked_message"') === true });

    expect(await handler({ Records: [record] }, lambdaContext())).toEqual({ batchItemFailures: [{ itemIdentifier: record.messageId }] });

    expect(logger.lines.filter((line) => line.level === 'warn')).toEqual([
      {
        level: 'warn',
        message: 'record failed, and could not be parked; SQS will deliver it again',
        extra: [
          {
            messageId: record.messageId,
            error: { name: 'ParseError', message: 'the body could not be parsed: not JSON: unexpected character at position 0 of 8' },
            parkError: { name: CURRENT.errorName, message: expect.stringContaining('(unavailable') },
          },
        ],
      },
    ]);
  });
});

/** Bodies SQS could carry, and text it could not (a lone surrogate, U+0000): each is stored and handed back as it came. */
const anyText = fc
  .array(
    fc.oneof(
      fc.string({ unit: 'binary', maxLength: 6 }),
      fc.integer({ min: 0xd800, max: 0xdfff }).map((unit) => String.fromCharCode(unit)),
      fc.constantFrom('\u0000', '\ufffd', '\r\n', '"', '\\'),
    ),
    { maxLength: 8 },
  )
  .map((parts) => parts.join(''));

describe('the payload a parked SQS record keeps', () => {
  it('is its body byte for byte, which the replay hands back exactly (generated bodies, seeded)', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(anyText, async (body) => {
        let rejecting = true;
        const seen: string[] = [];
        const { handler } = parkingEverything(`payload-${n++}`, {
          parse: (text) => text as never,
          apply: async (_, message) => {
            if (rejecting) throw new PermanentError('not yet');
            seen.push(message.record.body);
          },
        });
        const record = sqsRecord({ body });
        expect(await handler({ Records: [record] }, lambdaContext())).toEqual({ batchItemFailures: [] });
        const [parked] = await parkedMessages(handler).list();
        expect(parked!.body).toBe(body);
        expect(Buffer.from(parked!.payload).equals(textBytes(body))).toBe(true);
        rejecting = false;
        expect(await parkedMessages(handler).replay(parked!.id)).toBe('replayed');
        expect(seen[0]).toBe(body);
      }),
      propertyParameters(25),
    );
  });

  it('lists and replays a message whose body is 1 MiB, which no Data API answer holds with its row', async () => {
    let rejecting = true;
    const seen: number[] = [];
    const { handler } = parkingEverything(`payload-large-${Date.now()}`, {
      apply: async (_, message) => {
        if (rejecting) throw new PermanentError('not yet');
        seen.push(Buffer.byteLength(message.record.body));
      },
    });
    const body = JSON.stringify({ pad: 'x'.repeat(1024 * 1024 - 10) });
    expect(await handler({ Records: [sqsRecord({ body })] }, lambdaContext())).toEqual({ batchItemFailures: [] });
    rejecting = false;

    const [parked] = await parkedMessages(handler).list();
    expect(parked!.body).toBe(body);
    expect(await parkedMessages(handler).replay(parked!.id)).toBe('replayed');
    expect(seen).toEqual([1024 * 1024]);
  });

  it('reads a row parked before migration 6, which kept its body as text, as that text', async () => {
    const consumer = `before-6-${Date.now()}`;
    const { handler } = parkingEverything(consumer);
    await db.query(
      `INSERT INTO inbox.parked_message (consumer_name, sqs_message_id, body, attributes, error_class, error_message, attempt)
       VALUES ($1, 'old-1', '{"orderId":"old"}', '{}', 'PermanentError', 'old', 1)`,
      [consumer],
    );
    const [parked] = await parkedMessages(handler).list();
    expect(parked!.body).toBe('{"orderId":"old"}');
    expect(parked!.payload).toEqual(new Uint8Array(Buffer.from('{"orderId":"old"}')));
  });
});
