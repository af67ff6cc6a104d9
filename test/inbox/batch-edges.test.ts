import { CreateQueueCommand } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { inbox, kinesisInbox } from '../../lambda/inbox/index.js';
import type { BatchSummary, InboxOptions, InboxTransaction } from '../../lambda/inbox/index.js';
import { sqsOutbox } from '../../lambda/inbox/outbox/index.js';
import { inboxFixture, lambdaContext, recordingLogger, recordingMetrics, sqsRecord } from '../support/inbox.js';
import type { InboxFixture } from '../support/inbox.js';
import { startSqsFixture } from '../support/sqs.js';
import type { SqsFixture } from '../support/sqs.js';
import { kinesisEvent, kinesisRecord } from '../support/streams.js';
import { CURRENT, onTransport } from '../support/transport.js';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { RECORD_FAILED_CHANNEL } from '../../lambda/inbox/telemetry/failure-channel.js';
import type { RecordFailure } from '../../lambda/inbox/telemetry/failure-channel.js';

// The edges of the batch modes' set (which records join it, what a failed set turns into) and of the
// duplicate filter, through the public handlers, the local Data API (which counts calls and injects
// faults) and a real PostgreSQL.
let db: InboxFixture;
beforeAll(async () => {
  // A short idle expiry, so that a slow batch effect outlives its transaction.
  db = await inboxFixture('batch_edges', { transactionIdleTimeoutMs: 400 });
});
afterAll(async () => db.close());
beforeEach(async () => {
  db.server.faults.clear();
  await db.query('TRUNCATE public.orders, inbox.consumed_message, inbox.parked_message, inbox.outbox_message');
  db.server.stats.reset();
});

type Order = { orderId: string; poison?: boolean; legacy?: boolean };

// A poison order breaks the NOT NULL on status, so PostgreSQL refuses the statement it is part of.
const SHIP_SET = `INSERT INTO public.orders (order_id, status, shipped_count)
  SELECT o.order_id, CASE WHEN o.poison THEN NULL ELSE 'shipped' END, 1 FROM jsonb_to_recordset(:orders::jsonb) AS o(order_id text, poison boolean)
  ON CONFLICT (order_id) DO UPDATE SET shipped_count = orders.shipped_count + 1`;

const ship = async (tx: InboxTransaction, messages: readonly { body: Order }[]) =>
  void (await tx.execute(SHIP_SET, { orders: messages.map((m) => ({ order_id: m.body.orderId, poison: m.body.poison ?? false })) }));

function batchHandler(extra: Partial<InboxOptions<Order>> = {}) {
  const logger = recordingLogger();
  const summaries: BatchSummary[] = [];
  const handler = inbox<Order>({
    consumer: 'order-worker',
    database: db.target,
    logger,
    metrics: recordingMetrics(),
    applyBatch: ship,
    onBatch: (summary) => summaries.push(summary),
    ...extra,
  } as InboxOptions<Order>);
  return { handler, logger, summaries };
}

const order = (orderId: string, extra: Partial<Parameters<typeof sqsRecord>[0]> = {}, body: Partial<Order> = {}) =>
  sqsRecord({ body: { orderId, ...body }, ...extra });
const malformed = (extra: Partial<Parameters<typeof sqsRecord>[0]> = {}) => sqsRecord({ body: 'not json', ...extra });
const redelivered = (record: SQSRecord): SQSRecord => ({ ...record, attributes: { ...record.attributes, ApproximateReceiveCount: '2' } });
const failedIds = (response: { batchItemFailures: { itemIdentifier: string }[] }) => response.batchItemFailures.map((f) => f.itemIdentifier);

async function shipped(): Promise<Record<string, number>> {
  const rows = await db.query('SELECT order_id, shipped_count FROM public.orders ORDER BY order_id');
  return Object.fromEntries(rows.map((row) => [row.order_id, row.shipped_count]));
}

const FELL_BACK = 'the batch failed as a whole; each of its records runs alone';
const fellBack = <Line extends { message: string }>(lines: Line[]) => lines.filter((line) => line.message === FELL_BACK);

describe('which records join the set (batch-transaction: Begin, claim, effect, Commit = 4 calls for a set)', () => {
  it('a record that cannot be parsed stays out of a standard batch; the rest still go as one set', async () => {
    const { handler, logger } = batchHandler();
    const bad = malformed();
    const response = await handler({ Records: [bad, order('std-a'), order('std-b')] }, lambdaContext());
    expect(failedIds(response)).toEqual([bad.messageId]);
    // The malformed record fails without a call; the two others cost one set.
    expect(db.server.stats.total()).toBe(4);
    expect(fellBack(logger.lines)).toEqual([]);
    expect(await shipped()).toEqual({ 'std-a': 1, 'std-b': 1 });
  });

  it('a malformed record that shares its key with a good one does not keep the good one out of the set', async () => {
    const { handler } = batchHandler();
    const good = order('shared-good', { key: 'shared-key' });
    const bad = malformed({ key: 'shared-key' });
    const response = await handler({ Records: [good, bad, order('shared-other')] }, lambdaContext());
    expect(failedIds(response)).toEqual([bad.messageId]);
    expect(db.server.stats.total()).toBe(4);
    expect(await shipped()).toEqual({ 'shared-good': 1, 'shared-other': 1 });
  });

  it('two records with one key and different bodies run alone: the second collides and is not applied', async () => {
    // One record at a time, so the first of the two claims the key.
    const { handler, logger } = batchHandler({ concurrency: 1 });
    const first = order('twin-first', { key: 'twin-key' });
    const second = order('twin-second', { key: 'twin-key' });
    const response = await handler({ Records: [first, second, order('twin-c'), order('twin-d')] }, lambdaContext());
    expect(failedIds(response)).toEqual([second.messageId]);
    expect(await shipped()).toEqual({ 'twin-c': 1, 'twin-d': 1, 'twin-first': 1 });
    expect(logger.lines.filter((line) => line.level === 'error').map((line) => line.message)).toEqual([
      'key collision: a different message reused a claimed idempotency key; not applied',
    ]);
  });

  it('a collision the duplicate filter found runs alone and fails without a call; the others go as one set', async () => {
    const { handler, logger } = batchHandler({ duplicateFilter: 'always' });
    await handler({ Records: [order('kc-first', { key: 'kc' })] }, lambdaContext());
    db.server.stats.reset();
    const reuse = order('kc-second', { key: 'kc' });
    const response = await handler({ Records: [reuse, order('kc-c'), order('kc-d')] }, lambdaContext());
    expect(failedIds(response)).toEqual([reuse.messageId]);
    // The lookup, then one set for the two new records.
    expect(db.server.stats.total()).toBe(1 + 4);
    expect(fellBack(logger.lines)).toEqual([]);
    expect(await shipped()).toEqual({ 'kc-c': 1, 'kc-d': 1, 'kc-first': 1 });
  });

  it('a set of one is not worth it: the only good record runs alone, and a poison one fails once', async () => {
    const { handler, logger } = batchHandler();
    const bad = malformed();
    const poison = order('lone-poison', {}, { poison: true });
    const response = await handler({ Records: [bad, poison] }, lambdaContext());
    expect(failedIds(response)).toEqual([bad.messageId, poison.messageId]);
    // Begin, claim, effect (refused), Rollback: once, never a set then a retry alone.
    expect(db.server.stats.total()).toBe(4);
    expect(fellBack(logger.lines)).toEqual([]);
  });

  it('FIFO, stop-batch: a batch with nothing to block goes as one set', async () => {
    const { handler } = batchHandler({ fifo: { onFailure: 'stop-batch' } });
    const records = ['g1', 'g2'].flatMap((group) => [0, 1].map((i) => order(`stop-${group}-${i}`, { groupId: group })));
    expect(failedIds(await handler({ Records: records }, lambdaContext()))).toEqual([]);
    expect(db.server.stats.total()).toBe(4);
    expect(Object.keys(await shipped())).toHaveLength(4);
  });

  it('FIFO: a known duplicate does not keep the rest of its group out of the set', async () => {
    const { handler } = batchHandler();
    const earlier = order('known-g1-0', { groupId: 'g1' });
    await handler({ Records: [earlier] }, lambdaContext());
    db.server.stats.reset();
    const response = await handler(
      { Records: [redelivered(earlier), order('known-g1-1', { groupId: 'g1' }), order('known-g2-0', { groupId: 'g2' })] },
      lambdaContext(),
    );
    expect(failedIds(response)).toEqual([]);
    // The lookup settles the redelivery; the other two go as one set.
    expect(db.server.stats.total()).toBe(1 + 4);
    expect(await shipped()).toEqual({ 'known-g1-0': 1, 'known-g1-1': 1, 'known-g2-0': 1 });
  });
});

describe('what a failed set turns into', () => {
  it('a claim that collides with an earlier one sends every record alone, and says why', async () => {
    const { handler, logger } = batchHandler();
    await handler({ Records: [order('fb-first', { key: 'fb-key' })] }, lambdaContext());
    logger.lines.length = 0;
    const reuse = order('fb-second', { key: 'fb-key' });
    const response = await handler({ Records: [reuse, order('fb-c'), order('fb-d')] }, lambdaContext());
    expect(failedIds(response)).toEqual([reuse.messageId]);
    expect(fellBack(logger.lines)).toEqual([
      {
        level: 'info',
        message: FELL_BACK,
        extra: [
          { records: 3, error: { name: 'SetFallback', message: 'a record of the batch collides with an earlier claim, or its claim cannot be compared yet' } },
        ],
      },
    ]);
    expect(await shipped()).toEqual({ 'fb-c': 1, 'fb-d': 1, 'fb-first': 1 });
  });

  it("two statements in one call, which the transport refuses, are one record's doing: each record runs alone", async () => {
    const { handler, logger } = batchHandler({
      applyBatch: async (tx, messages) => {
        // Two statements in one call: the Data API refuses the call itself (a 4xx that is not a database
        // error); on the wire PostgreSQL refuses them, as the wire session sends by the extended protocol.
        if (messages.some((m) => m.body.legacy)) await tx.execute("UPDATE public.orders SET status = 'a'; UPDATE public.orders SET status = 'b'");
        await ship(tx, messages);
      },
    });
    const legacy = order('rej-legacy', {}, { legacy: true });
    const response = await handler({ Records: [order('rej-a'), legacy, order('rej-b')] }, lambdaContext());
    expect(failedIds(response)).toEqual([legacy.messageId]);
    expect(await shipped()).toEqual({ 'rej-a': 1, 'rej-b': 1 });
    expect(fellBack(logger.lines).map((line) => line.extra[0])).toEqual([
      {
        records: 3,
        error: {
          name: CURRENT.errorName,
          message: expect.stringMatching(
            onTransport({
              'data-api': /^ExecuteStatement failed \(rejected\): ValidationException: /,
              wire: /^ExecuteStatement failed \(statement\): cannot insert multiple commands into a prepared statement$/,
            }),
          ),
        },
      },
    ]);
  });

  it('a set whose transaction expired while its effect ran: each record runs alone and succeeds', async () => {
    let slow = true;
    const { handler, logger } = batchHandler({
      applyBatch: async (tx, messages) => {
        if (slow) {
          slow = false;
          // Longer than the server's idle expiry: the transaction is gone when the effect's statement arrives.
          await new Promise((resolve) => setTimeout(resolve, 1_000));
        }
        await ship(tx, messages);
      },
    });
    const response = await handler({ Records: [order('exp-a'), order('exp-b')] }, lambdaContext());
    expect(failedIds(response)).toEqual([]);
    expect(await shipped()).toEqual({ 'exp-a': 1, 'exp-b': 1 });
    expect(fellBack(logger.lines).map((line) => line.extra[0])).toEqual([
      {
        records: 2,
        error: {
          name: CURRENT.errorName,
          // On the wire the server closed the connection at its idle_in_transaction_session_timeout.
          message: expect.stringMatching(
            onTransport({
              'data-api': /^ExecuteStatement failed \(transaction-not-found\): TransactionNotFoundException: /,
              wire: /^ExecuteStatement failed \(transaction-not-found\): /,
            }),
          ),
        },
      },
    ]);
  });

  it("Aurora resuming (nothing ran, not one record's doing) fails every record of the set at its BEGIN", async () => {
    const { handler, logger } = batchHandler({ resumeDelaysMs: [], callTimeoutMs: 1_000 });
    db.server.faults.autoPause({ resumeAfterMs: 60_000 });
    const records = [order('pause-a'), order('pause-b'), order('pause-c')];
    const response = await handler({ Records: records }, lambdaContext());
    expect(failedIds(response)).toEqual(records.map((r) => r.messageId));
    // The Data API answers DatabaseResumingException at once. On the wire RDS Proxy holds the BEGIN while
    // Aurora resumes: it times out, is sent once more (nothing of the transaction exists yet), times out again.
    const begins = onTransport({ 'data-api': 1, wire: 2 });
    expect(db.server.stats.calls).toMatchObject({ BeginTransaction: begins, ExecuteStatement: 0 });
    expect(db.server.stats.total()).toBe(begins);
    expect(fellBack(logger.lines)).toEqual([]);
  });

  it('a commit that fails with something the session could not classify fails every record as an ambiguous commit', async () => {
    // The deadline clock breaks once, while the session is deciding whether to retry the refused commit.
    let clockBreaks = false;
    const context = {
      getRemainingTimeInMillis: () => {
        if (!clockBreaks) return 60_000;
        clockBreaks = false;
        throw new Error('clock broke');
      },
    };
    const { handler, logger } = batchHandler({
      applyBatch: async (tx, messages) => {
        await ship(tx, messages);
        clockBreaks = true;
      },
    });
    db.server.faults.serverError({ count: 1, operation: 'CommitTransaction', status: 500 });
    const records = [order('amb-a'), order('amb-b')];
    const response = await handler({ Records: records }, context);
    expect(failedIds(response)).toEqual(records.map((r) => r.messageId));
    expect(logger.lines).toEqual(
      records.map((record) => ({
        level: 'warn',
        message: 'record failed; SQS will deliver it again',
        extra: [
          {
            messageId: record.messageId,
            error: {
              name: CURRENT.errorName,
              // The wire session retries no commit, so it asks no clock: the refusal itself is the ambiguous failure.
              message: onTransport({
                'data-api': 'CommitTransaction failed (network, outcome unknown): Error: clock broke',
                wire: 'CommitTransaction failed (unavailable, outcome unknown): Injected fault: the database was unavailable; the statement did not run',
              }),
            },
          },
        ],
      })),
    );
    expect(await shipped()).toEqual({});
  });

  it('records the time the set took, once per record, on the injected clock', async () => {
    let clock = 1_000_000;
    const { handler, summaries } = batchHandler({
      now: () => clock,
      applyBatch: async (tx, messages) => {
        clock += 250;
        await ship(tx, messages);
      },
    });
    await handler({ Records: [order('lat-a'), order('lat-b'), order('lat-c')] }, lambdaContext());
    expect(summaries.map((s) => s.recordLatenciesMs)).toEqual([[250, 250, 250]]);
  });
});

describe('the outbox of a set', () => {
  let sqs: SqsFixture;
  let url: string;
  beforeAll(async () => {
    sqs = await startSqsFixture();
    ({ QueueUrl: url } = (await sqs.client.send(new CreateQueueCommand({ QueueName: 'invoices' }))) as { QueueUrl: string });
  });
  afterAll(async () => sqs.close());

  // Sends without naming the message: only a transaction with a single new message can tell whose it is.
  const unnamedSender = () =>
    batchHandler({
      outbox: sqsOutbox({ client: sqs.client, destinations: { invoices: url } }),
      applyBatch: async (tx, messages) => {
        for (const message of messages) tx.send({ to: 'invoices', body: { orderId: message.body.orderId } });
        await ship(tx, messages);
      },
    });
  const outboxRows = () => db.query('SELECT message_key, position FROM inbox.outbox_message ORDER BY message_key, position');

  it('a set with exactly one new message lets a send name none: it belongs to that message', async () => {
    const { handler, logger } = unnamedSender();
    const [a, b, c] = [order('one-a', { key: 'one-a' }), order('one-b', { key: 'one-b' }), order('one-c', { key: 'one-c' })];
    await handler({ Records: [a!] }, lambdaContext());
    await handler({ Records: [b!] }, lambdaContext());
    await db.query('TRUNCATE inbox.outbox_message');
    // a and b again (a producer sent them twice), beside one new message.
    expect(failedIds(await handler({ Records: [a!, b!, c!] }, lambdaContext()))).toEqual([]);
    expect(logger.lines).toEqual([]);
    expect(await outboxRows()).toEqual([{ message_key: 'one-c', position: 0 }]);
  });

  it('a set with two new messages refuses a send that names none, and each record runs alone with its own send', async () => {
    const { handler, logger } = unnamedSender();
    const records = [order('two-a', { key: 'two-a' }), order('two-b', { key: 'two-b' })];
    expect(failedIds(await handler({ Records: records }, lambdaContext()))).toEqual([]);
    expect(fellBack(logger.lines).map((line) => line.extra[0])).toEqual([
      {
        records: 2,
        error: {
          name: 'InboxConfigError',
          message: 'inbox option "tx.send": in applyBatch, name the message the send belongs to: tx.send({ to, body }, message), so that its key stays stable',
        },
      },
    ]);
    expect(await outboxRows()).toEqual([
      { message_key: 'two-a', position: 0 },
      { message_key: 'two-b', position: 0 },
    ]);
  });
});

describe('the duplicate filter', () => {
  it('makes no lookup for a redelivered batch where no record could be claimed', async () => {
    const { handler, logger } = batchHandler();
    const records = [redelivered(malformed()), redelivered(malformed())];
    const response = await handler({ Records: records }, lambdaContext());
    expect(failedIds(response)).toEqual(records.map((r) => r.messageId));
    expect(db.server.stats.total()).toBe(0);
    expect(logger.lines.map((line) => line.message)).toEqual(['record failed; SQS will deliver it again', 'record failed; SQS will deliver it again']);
  });

  it('marks the claimed keys of a partly new batch and leaves the new ones to the set, quietly', async () => {
    const { handler, logger } = batchHandler();
    const earlier = order('partly-0');
    await handler({ Records: [earlier] }, lambdaContext());
    db.server.stats.reset();
    const response = await handler({ Records: [redelivered(earlier), order('partly-1'), order('partly-2')] }, lambdaContext());
    expect(failedIds(response)).toEqual([]);
    expect(db.server.stats.total()).toBe(1 + 4);
    expect(logger.lines).toEqual([]);
    expect(await shipped()).toEqual({ 'partly-0': 1, 'partly-1': 1, 'partly-2': 1 });
  });

  it('takes a claim stored without a hash (an older writer) as a redelivery, settled by the lookup alone', async () => {
    await db.query("INSERT INTO inbox.consumed_message (consumer_name, message_id, payload_sha256) VALUES ('order-worker', 'legacy-key', NULL)");
    const { handler, logger } = batchHandler();
    const response = await handler({ Records: [redelivered(order('legacy', { key: 'legacy-key' }))] }, lambdaContext());
    expect(failedIds(response)).toEqual([]);
    expect(db.server.stats.total()).toBe(1);
    expect(logger.lines).toEqual([]);
    expect(await shipped()).toEqual({});
  });

  it('a stream handler forgets the older half of the keys it met past 10 000: an old retry then reaches its claim, still a no-op', async () => {
    const handler = kinesisInbox<Order>({ consumer: 'clicks', database: db.target, logger: recordingLogger(), metrics: recordingMetrics(), applyBatch: ship });
    // 10 001 records: the instance keeps the newest 5 000 to 10 000 keys it met.
    const records = Array.from({ length: 10_001 }, (_, i) => kinesisRecord({ body: { orderId: `recent-${i}` } }));
    // In sets of 1 000, not 3 334: a set's statements then stay well within the call timeout on a busy machine
    // (the filter counts keys, not invocations).
    for (let start = 0; start < records.length; start += 1_000) {
      expect(await handler(kinesisEvent(records.slice(start, start + 1_000)), lambdaContext())).toEqual({ batchItemFailures: [] });
    }
    db.server.stats.reset();
    // The first key was forgotten: no lookup; its own transaction finds the claim (Begin, claim, Rollback).
    expect(await handler(kinesisEvent([records[0]!]), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(db.server.stats.total()).toBe(3);
    db.server.stats.reset();
    // The 5 001st is still remembered: one lookup settles it.
    expect(await handler(kinesisEvent([records[5_000]!]), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(db.server.stats.total()).toBe(1);
    expect(await db.query("SELECT count(*)::int AS n, max(shipped_count) AS most FROM public.orders WHERE order_id LIKE 'recent-%'")).toEqual([
      { n: 10_001, most: 1 },
    ]);
    // 10 001 claims and effects: on a busy machine past the default 30 s (on the wire, 4 Dec 2026), and a test
    // that timed out kept running, so its rows failed the file's later tests.
  }, 120_000);
});

/** A statementBatch consumer running `sql`, whose `parse` (JSON.parse by default) reads the bodies. */
function statementHandler(sql: string, onPermanentError: 'retry' | 'park' = 'park', parse?: (body: string) => unknown) {
  const logger = recordingLogger();
  const handler = inbox<Order>({
    consumer: 'order-worker',
    database: db.target,
    logger,
    metrics: recordingMetrics(),
    onPermanentError: onPermanentError === 'park' ? 'park' : 'retry',
    ...(parse ? { parse } : {}),
    statementBatch: { sql },
  } as InboxOptions<Order>);
  return { handler, logger };
}

describe('statementBatch and a record holding text PostgreSQL cannot store (U+0000)', () => {
  const keyed = (orderId: string, body = JSON.stringify({ orderId }), extra: Partial<Parameters<typeof sqsRecord>[0]> = {}) =>
    sqsRecord({ key: orderId, body, ...extra });
  const withNul = () => keyed('nul', '{"orderId":"nul","note":"a\\u0000b"}');

  it('applies every record in the one statement when it never reads body, the one holding U+0000 too', async () => {
    const { handler } = statementHandler("INSERT INTO public.orders (order_id, status, shipped_count) SELECT message_key, 'shipped', 1 FROM claimed");
    const records = [keyed('a'), withNul(), keyed('b')];

    expect(await handler({ Records: records }, lambdaContext())).toEqual({ batchItemFailures: [] });

    expect(await shipped()).toEqual({ a: 1, b: 1, nul: 1 });
    expect(db.server.stats.total()).toBe(1);
  });

  it.each([
    ['its body', "SELECT body->>'orderId', 'shipped', 1 FROM claimed", withNul, 'message.body.note'],
    [
      'its group',
      "SELECT message_key, coalesce(group_id, 'none'), 1 FROM claimed",
      () => keyed('nul', undefined, { attributes: { MessageGroupId: 'g\u0000' } }),
      'message.groupId',
    ],
  ])('parks it as an UnstorableTextError, alone, when the statement reads %s; the others are applied', async (_, select, record, path) => {
    const { handler } = statementHandler(`INSERT INTO public.orders (order_id, status, shipped_count) ${select}`);
    const records = [keyed('a'), record(), keyed('b')];

    expect(await handler({ Records: records }, lambdaContext())).toEqual({ batchItemFailures: [] });

    expect(await shipped()).toEqual({ a: 1, b: 1 });
    expect(await db.query('SELECT message_key, error_class, error_message FROM inbox.parked_message')).toEqual([
      {
        message_key: 'nul',
        error_class: 'UnstorableTextError',
        error_message: expect.stringMatching(new RegExp(`^${path.replace('.', '\\.')} holds U\\+0000`)),
      },
    ]);
  });

  it('fails it with its permanent error when the consumer retries', async () => {
    const { handler, logger } = statementHandler(
      "INSERT INTO public.orders (order_id, status, shipped_count) SELECT body->>'orderId', 'shipped', 1 FROM claimed",
      'retry',
    );
    const bad = withNul();

    expect(await handler({ Records: [keyed('a'), bad] }, lambdaContext())).toEqual({ batchItemFailures: [{ itemIdentifier: bad.messageId }] });

    const failed = logger.lines.find((line) => line.message.startsWith('record failed'));
    expect((failed!.extra[0] as { error: { name: string } }).error.name).toBe('UnstorableTextError');
  });
});

describe('statementBatch and a body JSON.stringify cannot write (nested too deep, a BigInt)', () => {
  /** A statementBatch consumer running `sql`, whose parse gives `amount` as a BigInt when the body has one. */
  const bigintHandler = (sql: string, onPermanentError: 'retry' | 'park' = 'park') =>
    statementHandler(sql, onPermanentError, (body) => {
      const parsed = JSON.parse(body);
      return typeof parsed.amount === 'string' ? { ...parsed, amount: BigInt(parsed.amount) } : parsed;
    });
  const keyed = (orderId: string, body: string = JSON.stringify({ orderId })) => sqsRecord({ key: orderId, body });
  // Valid JSON, 200 KB: JSON.parse reads it, and JSON.stringify overflows its stack on what it gives (at some
  // thousands of levels, whatever the stack's size).
  const deep = () => keyed('deep', `${'['.repeat(100_000)}${']'.repeat(100_000)}`);
  const bigint = () => keyed('bigint', JSON.stringify({ orderId: 'bigint', amount: '123456789012345678901234567890' }));
  const SHIP_KEYS = "INSERT INTO public.orders (order_id, status, shipped_count) SELECT message_key, 'shipped', 1 FROM claimed";
  const SHIP_BODIES = "INSERT INTO public.orders (order_id, status, shipped_count) SELECT coalesce(body->>'orderId', 'none'), 'shipped', 1 FROM claimed";

  it.each([
    ['nested 100,000 deep', deep],
    ['holding a BigInt', bigint],
  ])('applies every record in the one statement when it never reads body, the one %s too', async (_, record) => {
    const { handler } = bigintHandler(SHIP_KEYS);
    const bad = record();

    expect(await handler({ Records: [keyed('a'), bad, keyed('b')] }, lambdaContext())).toEqual({ batchItemFailures: [] });

    expect(await shipped()).toEqual({ a: 1, b: 1, [bad.messageAttributes['idempotency-key']!.stringValue!]: 1 });
    expect(db.server.stats.total()).toBe(1);
  });

  it.each([
    ['nested 100,000 deep', deep],
    ['holding a BigInt', bigint],
  ])('parks a body %s as a PermanentError, alone, when the statement reads body; the others are applied', async (_, record) => {
    const { handler } = bigintHandler(SHIP_BODIES);

    expect(await handler({ Records: [keyed('a'), record(), keyed('b')] }, lambdaContext())).toEqual({ batchItemFailures: [] });

    expect(await shipped()).toEqual({ a: 1, b: 1 });
    expect(await db.query('SELECT error_class, error_message FROM inbox.parked_message')).toEqual([
      {
        error_class: 'PermanentError',
        error_message:
          "statementBatch.sql reads body, and this message's body, as parse returned it, cannot be written as JSON: JSON.stringify refuses it " +
          '(it nests too deep, or holds a BigInt or a cycle), so the message can never be applied as it is. ' +
          'Fix: have parse return plain JSON values (a BigInt as its digits in a string), or leave body out of the statement',
      },
    ]);
  });

  it('fails it with its permanent error, on every delivery, when the consumer retries', async () => {
    const { handler, logger } = bigintHandler(SHIP_BODIES, 'retry');
    const bad = deep();
    // The failure channel carries the error itself (the log line only its name and message): its cause is the
    // database's refusal, which the testbed and a subscriber of the channel get to see.
    const published: RecordFailure[] = [];
    const listen = (message: unknown) => published.push(message as RecordFailure);
    subscribe(RECORD_FAILED_CHANNEL, listen);
    try {
      for (let delivery = 0; delivery < 2; delivery++) {
        expect(await handler({ Records: [keyed('a'), bad] }, lambdaContext())).toEqual({ batchItemFailures: [{ itemIdentifier: bad.messageId }] });
      }
    } finally {
      unsubscribe(RECORD_FAILED_CHANNEL, listen);
    }

    const failed = logger.lines
      .filter((line) => line.message.startsWith('record failed'))
      .map((line) => (line.extra[0] as { error: { name: string } }).error.name);
    expect(failed).toEqual(['PermanentError', 'PermanentError']);
    const refusal = CURRENT.protocol === 'data-api' ? 'DataApiError' : 'PostgresError';
    expect(published.map(({ id, error }) => [id, error.name, (error.cause as Error | undefined)?.name])).toEqual([
      [bad.messageId, 'PermanentError', refusal],
      [bad.messageId, 'PermanentError', refusal],
    ]);
    expect(await shipped()).toEqual({ a: 1 });
  });

  it('keeps a statement failure of its own a temporary one, even for a message whose body JSON cannot write', async () => {
    // 22P02 as jsonb gives for the unwritable body, here from the statement's own cast: not the body's doing.
    const { handler, logger } = bigintHandler(
      "INSERT INTO public.orders (order_id, status, shipped_count) SELECT message_key, 'shipped', 'many'::int FROM claimed",
      'park',
    );
    const bad = deep();

    expect(await handler({ Records: [bad] }, lambdaContext())).toEqual({ batchItemFailures: [{ itemIdentifier: bad.messageId }] });

    const failed = logger.lines.find((line) => line.message.startsWith('record failed'));
    expect((failed!.extra[0] as { error: { name: string } }).error.name).toBe(CURRENT.protocol === 'data-api' ? 'DataApiError' : 'PostgresError');
  });
});
