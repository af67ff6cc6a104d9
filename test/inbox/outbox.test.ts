import { CreateQueueCommand } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { InboxConfigError, PermanentError } from '../../lambda/inbox/index.js';
import { inbox } from '../../lambda/inbox/index.js';
import type { InboxOptions } from '../../lambda/inbox/index.js';
import { OutboxSweepError, outboxKey, sqsOutbox, sweepOutbox } from '../../lambda/inbox/outbox/index.js';
import type { OutboxSend } from '../../lambda/inbox/outbox/outbox-message.js';
import { relayRows } from '../../lambda/inbox/outbox/relay.js';
import { inboxTables } from '../../lambda/inbox/sql/schema.js';
import { sweeperHandler } from '../../lambda/functions/outbox-sweeper/outbox-sweeper.js';
import { inboxFixture, lambdaContext, recordingLogger, recordingMetrics, sqsRecord } from '../support/inbox.js';
import type { InboxFixture } from '../support/inbox.js';
import { drain, startSqsFixture } from '../support/sqs.js';
import type { SqsFixture } from '../support/sqs.js';
import { dataApiOnly } from '../support/data-api-only.js';
import { notUnderConflicts } from '../support/dsql-conflicts.js';
import { CURRENT, onTransport } from '../support/transport.js';
import { parkedMessages } from '../../lambda/inbox/parked/parking.js';

type Order = { orderId: string; customer?: string; fail?: boolean };

let db: InboxFixture;
let f: SqsFixture;
beforeAll(async () => {
  db = await inboxFixture('outbox');
  await db.query('CREATE TABLE public.shipped (order_id text PRIMARY KEY, n int NOT NULL DEFAULT 1)');
  await db.query('CREATE TABLE public.invoiced (order_id text NOT NULL, key text NOT NULL)');
});
afterAll(async () => db.close());
beforeEach(async () => {
  f = await startSqsFixture({ recordRequests: true });
});
afterEach(async () => f.close());

const tables = inboxTables();
let run = 0;

async function queue(name: string): Promise<string> {
  const { QueueUrl } = await f.client.send(
    new CreateQueueCommand({
      QueueName: `${name}-${run}`.replace('.fifo-', '-') + (name.endsWith('.fifo') ? '.fifo' : ''),
      Attributes: name.endsWith('.fifo') ? { FifoQueue: 'true' } : {},
    }),
  );
  return QueueUrl!;
}

/** The "ship" stage: ships the order and hands "invoice" on through the outbox. */
function shipper(destination: string, extra: Partial<InboxOptions<Order>> = {}) {
  const consumer = `ship-${run++}`;
  const metrics = recordingMetrics();
  const logger = recordingLogger();
  const handler = inbox<Order>({
    consumer,
    database: db.target,
    logger,
    metrics,
    outbox: sqsOutbox({ client: f.client, destinations: { invoices: destination } }),
    apply: async (tx, message) => {
      await tx.execute('INSERT INTO public.shipped (order_id) VALUES (:id) ON CONFLICT (order_id) DO UPDATE SET n = shipped.n + 1', {
        id: message.body.orderId,
      });
      tx.send({ to: 'invoices', body: { orderId: message.body.orderId }, ...(destination.endsWith('.fifo') ? { groupId: message.body.customer ?? 'c' } : {}) });
      if (message.body.fail) throw new Error('fails after the send');
    },
    ...extra,
  });
  const rows = () =>
    db.query<{ id: number; sent_at: Date | null; attempts: number; last_error: string | null; idempotency_key: string }>(
      'SELECT id, sent_at, attempts, last_error, idempotency_key FROM inbox.outbox_message WHERE consumer_name = $1 ORDER BY id',
      [consumer],
    );
  /** The relay's warnings: what it left for the sweeper, and why. */
  const relayWarnings = () =>
    logger.lines.filter((line) => line.level === 'warn' && line.message.includes('sweeper')).map((line) => [line.message, line.extra[0]]);
  return { consumer, handler, rows, metrics, relayWarnings };
}

/** `n` unsent rows of `consumer` for `url`, created a minute ago, in one FIFO group when `groupId` is given. */
async function unsentRows(consumer: string, url: string, n: number, groupId?: string): Promise<void> {
  await db.query(
    `INSERT INTO inbox.outbox_message (consumer_name, message_key, position, idempotency_key, destination, body, group_id, created_at)
     SELECT $1, 'm', i, $1 || '-' || i, $2, 'row-' || i, $4, now() - interval '1 minute' FROM generate_series(0, $3 - 1) AS i`,
    [consumer, url, n, groupId ?? null],
  );
}

/** Marks sent what earlier tests left unsent, so that a sweep sees only the rows of its own test. */
async function settleLeftovers(): Promise<void> {
  await db.query('UPDATE inbox.outbox_message SET sent_at = now() WHERE sent_at IS NULL');
}

/** A sent row of another consumer, past the sent retention of the sweeper below. */
async function oldSentRow(consumer: string, url: string): Promise<void> {
  await db.query(
    `INSERT INTO inbox.outbox_message (consumer_name, message_key, position, idempotency_key, destination, body, sent_at)
     VALUES ($1, 'old', 0, $2, $3, 'x', now() - interval '2 days')`,
    [`${consumer}-old`, `old-${consumer}`, url],
  );
}

/** The scheduled sweeper function against the test's Data API and SQS, sending every unsent row. */
function sweeper(metrics: ReturnType<typeof recordingMetrics>) {
  return sweeperHandler(
    {
      INBOX_RESOURCE_ARN: db.server.resourceArn,
      INBOX_SECRET_ARN: db.server.secretArn,
      INBOX_DATABASE: db.server.database,
      INBOX_DATA_API_ENDPOINT: db.server.endpoint,
      INBOX_OUTBOX_MIN_AGE_SECONDS: '0',
      INBOX_OUTBOX_SENT_RETENTION_SECONDS: '86400',
    },
    metrics as never,
    f.client,
  );
}

const order = (orderId: string, extra: Partial<Order> = {}): SQSRecord => sqsRecord({ body: { orderId, ...extra }, key: `k-${orderId}` });

describe('the outbox', () => {
  notUnderConflicts(
    'test/inbox/outbox.test.ts',
    'sends what the committed transaction wrote, after the commit, under a key derived from the message key and position',
    async () => {
      const url = await queue('invoices');
      const { consumer, handler, rows, metrics, relayWarnings } = shipper(url);
      const id = `o-${run}`;
      db.server.stats.reset();
      expect(await handler({ Records: [order(id)] }, lambdaContext())).toEqual({ batchItemFailures: [] });
      // Begin, claim, effect, the outbox rows (one statement), commit; then the relay reads and marks them.
      expect(db.server.stats.total()).toBe(7);
      const [message] = await drain(f.client, url);
      expect(JSON.parse(message!.Body!)).toEqual({ orderId: id });
      expect(message!.MessageAttributes?.['idempotency-key']?.StringValue).toBe(outboxKey(consumer, `k-${id}`, 0));
      const [row] = await rows();
      expect(row).toMatchObject({ attempts: 1, last_error: null });
      expect(row!.sent_at).toBeInstanceOf(Date);
      expect(metrics.published.at(-1)).toMatchObject({ OutboxSent: [1], OutboxDeferred: [0] });
      expect(relayWarnings()).toEqual([]);
    },
  );

  it("claim: 'with-first-statement', a duplicate whose apply sent before its first statement: settled as a duplicate, nothing written or sent again", async () => {
    const url = await queue('riding');
    const { handler, rows } = shipper(url, {
      claim: 'with-first-statement',
      apply: async (tx, message) => {
        tx.send({ to: 'invoices', body: { orderId: message.body.orderId } });
        await tx.execute('INSERT INTO public.shipped (order_id) VALUES (:id) ON CONFLICT (order_id) DO UPDATE SET n = shipped.n + 1', {
          id: message.body.orderId,
        });
      },
    });
    const id = `o-${run}`;
    const record = order(id);
    expect(await handler({ Records: [record] }, lambdaContext())).toEqual({ batchItemFailures: [] });
    // The same message again: its first statement finds the claim taken, so the send before it is dropped.
    expect(await handler({ Records: [record] }, lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(await rows()).toHaveLength(1);
    expect(await drain(f.client, url)).toHaveLength(1);
    expect(await db.query('SELECT n FROM public.shipped WHERE order_id = $1', [id])).toEqual([{ n: 1 }]);
  });

  it('sends nothing when the transaction rolls back after tx.send (no phantom message); the retry sends under the same key', async () => {
    const url = await queue('phantom');
    const { consumer, handler, rows } = shipper(url);
    const id = `o-${run}`;
    expect((await handler({ Records: [order(id, { fail: true })] }, lambdaContext())).batchItemFailures).toHaveLength(1);
    expect(await rows()).toEqual([]);
    expect(await drain(f.client, url)).toEqual([]);
    expect(await db.query('SELECT 1 FROM public.shipped WHERE order_id = $1', [id])).toEqual([]);
    await handler({ Records: [order(id)] }, lambdaContext());
    const sent = await drain(f.client, url);
    expect(sent.map((m) => m.MessageAttributes?.['idempotency-key']?.StringValue)).toEqual([outboxKey(consumer, `k-${id}`, 0)]);
  });

  it('leaves a message whose send failed for the sweeper, and still reports the record succeeded', async () => {
    const url = await queue('flaky');
    const { handler, rows, metrics, relayWarnings } = shipper(url);
    f.sqs.faults.failRequests('SendMessageBatch', { error: 'InternalError', times: 10 });
    expect(await handler({ Records: [order(`o-${run}`)] }, lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(relayWarnings()).toEqual([['outbox messages left for the sweeper', { deferred: 1 }]]);
    const [row] = await rows();
    expect(row).toMatchObject({ sent_at: null, attempts: 1 });
    expect(row!.last_error).toMatch(/InternalError/);
    expect(metrics.published.at(-1)).toMatchObject({ OutboxSent: [0], OutboxDeferred: [1] });
    f.sqs.faults.clear();
    const report = await sweepOutbox(db.session, { transport: sqsOutbox({ client: f.client }).transport, minAgeMs: 0 });
    expect(report).toMatchObject({ sent: 1, deferred: 0, oldestUnsentAgeSeconds: 0 });
    expect(await drain(f.client, url)).toHaveLength(1);
    expect((await rows())[0]!.sent_at).toBeInstanceOf(Date);
  });

  it('leaves every message for the sweeper when the relay itself fails, logging why, and still reports the records succeeded', async () => {
    const url = await queue('relay-fails');
    const { handler, rows, metrics, relayWarnings } = shipper(url);
    // The relay's read of the rows it should send, known by its text (a conflict may run the record's statements twice).
    db.server.faults.serverError({
      operation: 'ExecuteStatement',
      count: 1,
      status: 500,
      select: (call) => /^\s*SELECT id, idempotency_key, destination, group_id, delay_seconds, message_bytes/.test(call.sql ?? ''),
    });
    const id = `o-${run}`;
    expect(await handler({ Records: [order(id)] }, lambdaContext())).toEqual({ batchItemFailures: [] });
    db.server.faults.clear();
    expect(relayWarnings()).toEqual([
      [
        'the outbox relay failed; the sweeper sends its messages',
        {
          error: {
            name: CURRENT.errorName,
            // A Data API 500 leaves the outcome unknown; the wire's refusal (53300) says the read did not run.
            message: expect.stringMatching(
              onTransport({
                'data-api': /^ExecuteStatement failed \(unavailable, outcome unknown\): /,
                wire: /^ExecuteStatement failed \(unavailable\): Injected fault/,
              }),
            ),
          },
        },
      ],
    ]);
    expect(metrics.published.at(-1)).toMatchObject({ OutboxSent: [0], OutboxDeferred: [1] });
    expect((await rows())[0]).toMatchObject({ sent_at: null, attempts: 0 });
    expect(await drain(f.client, url)).toEqual([]);
    await sweepOutbox(db.session, { transport: sqsOutbox({ client: f.client }).transport, minAgeMs: 0 });
    expect((await drain(f.client, url)).map((message) => JSON.parse(message.Body!))).toEqual([{ orderId: id }]);
  });

  it('a worker that dies after the commit and before the relay: the sweeper sends the message once', async () => {
    const url = await queue('crash');
    let remaining = 60_000;
    const { handler, rows } = shipper(url, {
      deadlineMarginMs: 1000,
      apply: async (tx, message) => {
        tx.send({ to: 'invoices', body: message.body });
        // The Lambda's time runs out right after this record: no relay, as if the worker had died there.
        remaining = 500;
      },
    });
    expect(
      await handler(
        { Records: [order(`o-${run}`)] },
        lambdaContext(() => remaining),
      ),
    ).toEqual({ batchItemFailures: [] });
    expect((await rows())[0]).toMatchObject({ sent_at: null, attempts: 0 });
    expect(await drain(f.client, url)).toEqual([]);
    await sweepOutbox(db.session, { transport: sqsOutbox({ client: f.client }).transport, minAgeMs: 0 });
    expect(await drain(f.client, url)).toHaveLength(1);
  });

  it('a lost SendMessageBatch answer: the resend carries the same key, and the FIFO queue drops the copy', async () => {
    const url = await queue('lost.fifo');
    const { handler } = shipper(url);
    f.sqs.faults.dropResponses('SendMessageBatch');
    await handler({ Records: [order(`o-${run}`, { customer: 'c1' })] }, lambdaContext());
    expect(await drain(f.client, url)).toHaveLength(1);
  });

  it("the sweeper racing the handler's relay: the next consumer applies the message once", async () => {
    const url = await queue('race');
    const { handler, rows } = shipper(url);
    f.sqs.faults.failRequests('SendMessageBatch', { error: 'InternalError', times: 10 });
    await handler({ Records: [order(`o-${run}`)] }, lambdaContext());
    f.sqs.faults.clear();
    const ids = (await rows()).map((row) => row.id);
    const transport = sqsOutbox({ client: f.client }).transport;
    await Promise.all([relayRows(db.session, tables, transport, ids), sweepOutbox(db.session, { transport, minAgeMs: 0 })]);
    const received = await drain(f.client, url);
    expect(received.length).toBeGreaterThanOrEqual(1);
    // The invoicing stage: an inbox keyed by the idempotency-key attribute.
    const invoicer = inbox<Order>({
      consumer: `invoice-${run}`,
      database: db.target,
      logger: recordingLogger(),
      metrics: recordingMetrics(),
      apply: async (tx, message) => {
        await tx.execute('INSERT INTO public.invoiced (order_id, key) VALUES (:id, :key)', { id: message.body.orderId, key: message.key });
      },
    });
    const records = received.map((m) => sqsRecord({ body: m.Body!, key: m.MessageAttributes!['idempotency-key']!.StringValue! }));
    await invoicer({ Records: records }, lambdaContext());
    expect(
      await db.query('SELECT count(*)::int AS n FROM public.invoiced WHERE key = $1', [records[0]!.messageAttributes['idempotency-key']!.stringValue]),
    ).toEqual([{ n: 1 }]);
  });

  it('sweeps unsent rows whose bodies outgrow one Data API answer together: each arrives once, whole', async () => {
    // 60 rows of 30 KB: 1.8 MB, over the 1 MiB a Data API call answers, which one read of them all would take.
    await settleLeftovers();
    const url = await queue('swept-large');
    const consumer = `large-${run++}`;
    await db.query(
      `INSERT INTO inbox.outbox_message (consumer_name, message_key, position, idempotency_key, destination, body, attributes, created_at)
       SELECT $1, 'm', i, $1 || '-' || i, $2, i || repeat('é', 15000), jsonb_build_object('trace', 't' || i), now() - interval '1 minute'
         FROM generate_series(0, 59) AS i`,
      [consumer, url],
    );

    const report = await sweepOutbox(db.session, { transport: sqsOutbox({ client: f.client }).transport, minAgeMs: 0 });

    expect(report).toMatchObject({ sent: 60, deferred: 0 });
    const received = await drain(f.client, url);
    expect(received.map((message) => [message.Body, message.MessageAttributes!.trace!.StringValue]).sort()).toEqual(
      Array.from({ length: 60 }, (_, i) => [`${i}${'é'.repeat(15_000)}`, `t${i}`]).sort(),
    );
  });

  it('keeps a FIFO group in order: a message waits behind an older unsent one of its group, and the sweeper sends both in order', async () => {
    const url = await queue('ordered.fifo');
    const { handler, rows } = shipper(url);
    f.sqs.faults.failRequests('SendMessageBatch', { error: 'InternalError', times: 10 });
    await handler({ Records: [sqsRecord({ body: { orderId: `first-${run}`, customer: 'c1' }, key: `k1-${run}`, groupId: 'c1' })] }, lambdaContext());
    f.sqs.faults.clear();
    await handler({ Records: [sqsRecord({ body: { orderId: `second-${run}`, customer: 'c1' }, key: `k2-${run}`, groupId: 'c1' })] }, lambdaContext());
    // The second message is held back: its group's first one is unsent.
    expect((await rows()).map((row) => row.sent_at === null)).toEqual([true, true]);
    expect(await drain(f.client, url)).toEqual([]);
    await sweepOutbox(db.session, { transport: sqsOutbox({ client: f.client }).transport, minAgeMs: 0 });
    expect((await drain(f.client, url)).map((m) => (JSON.parse(m.Body!) as Order).orderId)).toEqual([`first-${run}`, `second-${run}`]);
  });

  it('sends a FIFO group whole once its head is old enough, the young rows behind it too', async () => {
    const url = await queue('whole.fifo');
    const { handler, rows } = shipper(url);
    f.sqs.faults.failRequests('SendMessageBatch', { error: 'InternalError', times: 10 });
    await handler({ Records: [sqsRecord({ body: { orderId: `head-${run}`, customer: 'c9' }, key: `kh-${run}`, groupId: 'c9' })] }, lambdaContext());
    f.sqs.faults.clear();
    await db.query(`UPDATE inbox.outbox_message SET created_at = now() - interval '5 minutes' WHERE id = $1`, [(await rows())[0]!.id]);
    await handler({ Records: [sqsRecord({ body: { orderId: `tail-${run}`, customer: 'c9' }, key: `kt-${run}`, groupId: 'c9' })] }, lambdaContext());
    const report = await sweepOutbox(db.session, { transport: sqsOutbox({ client: f.client }).transport, minAgeMs: 60_000 });
    expect(report.sent).toBe(2);
    expect((await drain(f.client, url)).map((m) => (JSON.parse(m.Body!) as Order).orderId)).toEqual([`head-${run}`, `tail-${run}`]);
  });

  it("applyBatch: each send names its message; keys follow each message's own positions", async () => {
    const url = await queue('batch');
    const consumer = `ship-batch-${run++}`;
    const handler = inbox<Order>({
      consumer,
      database: db.target,
      logger: recordingLogger(),
      metrics: recordingMetrics(),
      outbox: sqsOutbox({ client: f.client }),
      applyBatch: async (tx, messages) => {
        for (const message of messages) {
          tx.send({ to: url, body: { orderId: message.body.orderId, copy: 1 } }, message);
          tx.send({ to: url, body: { orderId: message.body.orderId, copy: 2 } }, message);
        }
      },
    });
    const records = [order(`b1-${run}`), order(`b2-${run}`)];
    expect(await handler({ Records: records }, lambdaContext())).toEqual({ batchItemFailures: [] });
    const keys = (await drain(f.client, url)).map((m) => m.MessageAttributes!['idempotency-key']!.StringValue).sort();
    expect(keys).toEqual(
      [0, 1].flatMap((position) => records.map((r) => outboxKey(consumer, r.messageAttributes['idempotency-key']!.stringValue!, position))).sort(),
    );
  });

  it('refuses what could never be sent, naming the fix', async () => {
    const base = { consumer: 'o', database: db.target, logger: recordingLogger(), metrics: recordingMetrics() };
    expect(() => inbox({ ...base, outbox: sqsOutbox({ client: f.client }), statement: { sql: 'SELECT 1 FROM claimed', params: () => ({}) } })).toThrow(
      /inbox option "outbox": works in the transaction modes/,
    );
    expect(() => inbox({ ...base, outbox: { transport: {} } as never, apply: async () => {} })).toThrow(InboxConfigError);
    // The option is plain data: your own transport is { transport }, with no helper around it.
    const transport = { send: async (rows: readonly { id: number }[]) => rows.map((row) => ({ id: row.id })) };
    expect(() => inbox({ ...base, outbox: { transport }, apply: async () => {} })).not.toThrow();
    const errors: unknown[] = [];
    const handler = inbox({
      ...base,
      consumer: `refuse-${run++}`,
      apply: async (tx) => {
        try {
          tx.send({ to: 'invoices', body: 'x' });
        } catch (error) {
          errors.push(error);
          throw error;
        }
      },
    });
    await handler({ Records: [order('r-1')] }, lambdaContext());
    expect(String(errors[0])).toMatch(/inbox option "outbox": tx.send needs an outbox/);
    const named = inbox({
      ...base,
      consumer: `refuse-${run++}`,
      outbox: sqsOutbox({ client: f.client }),
      apply: async (tx) => tx.send({ to: 'invoices', body: 'x' }),
    });
    const failed = await named({ Records: [order('r-2')] }, lambdaContext());
    expect(failed.batchItemFailures).toHaveLength(1);
  });

  dataApiOnly(
    'test/inbox/outbox.test.ts',
    'runs as the scheduled sweeper function: sends what is left, deletes old sent rows, publishes its metrics',
    async () => {
      const url = await queue('swept');
      const { handler, rows, consumer } = shipper(url);
      f.sqs.faults.failRequests('SendMessageBatch', { error: 'InternalError', times: 10 });
      await handler({ Records: [order(`s-${run}`)] }, lambdaContext());
      f.sqs.faults.clear();
      await oldSentRow(consumer, url);
      const metrics = recordingMetrics();
      const report = await sweeper(metrics)({}, lambdaContext());
      expect(report).toMatchObject({ sent: 1, deferred: 0, deleted: 1, oldestUnsentAgeSeconds: 0 });
      expect(metrics.published[0]).toMatchObject({ OutboxSwept: [1], OutboxSweepDeferred: [0], OutboxOldestUnsentAgeSeconds: [0] });
      expect((await rows())[0]!.sent_at).toBeInstanceOf(Date);
      expect(await drain(f.client, url)).toHaveLength(1);
      expect(() => sweeperHandler({ INBOX_RESOURCE_ARN: 'r', INBOX_SECRET_ARN: 's', INBOX_OUTBOX_SWEEP_LIMIT: '-1' }, metrics as never, f.client)).toThrow(
        /INBOX_OUTBOX_SWEEP_LIMIT/,
      );
    },
  );

  it('stops sending before the Lambda deadline: the rest waits for the next sweep, no delete starts, and the report still comes out', async () => {
    const url = await queue('deadline');
    const consumer = `deadline-${run}`;
    await settleLeftovers();
    await unsentRows(consumer, url, 120);
    await oldSentRow(consumer, url);
    const sends = () => f.sqs.requests.filter((request) => request.operation === 'SendMessageBatch').length;
    // 120 s at the start (a margin of 60 s); 30 s once the first rows went out.
    const metrics = recordingMetrics();
    const report = await sweeper(metrics)(
      {},
      lambdaContext(() => (sends() === 0 ? 120_000 : 30_000)),
    );
    expect(report).toMatchObject({ sent: 50, deferred: 70, deleted: 0, cutShort: true, failures: [] });
    expect(report.oldestUnsentAgeSeconds).toBeGreaterThan(0);
    expect(metrics.published[0]).toMatchObject({ OutboxSwept: [50], OutboxSweepDeferred: [70], OutboxSweepFailures: [0] });
    expect(await db.query('SELECT count(*)::int AS n FROM inbox.outbox_message WHERE consumer_name = $1 AND sent_at IS NOT NULL', [consumer])).toEqual([
      { n: 50 },
    ]);
    expect(await drain(f.client, url)).toHaveLength(50);
  });

  it('keeps a FIFO group stopped across its 50-row steps: a row lost for good holds back the rest of its group', async () => {
    const url = await queue('steps.fifo');
    const consumer = `steps-${run}`;
    await settleLeftovers();
    await unsentRows(consumer, url, 60, 'g');
    // One message of the group per request (strictGroupOrder): the fourth request carries the fourth row.
    let requests = 0;
    f.sqs.faults.failEntries('SendMessageBatch', { entries: () => ++requests === 4, code: 'InvalidParameterValue', senderFault: true, times: 100 });
    const report = await sweepOutbox(db.session, { transport: sqsOutbox({ client: f.client }).transport, minAgeMs: 0 });
    expect(report).toMatchObject({ sent: 3, deferred: 57 });
    expect((await drain(f.client, url)).map((m) => m.Body)).toEqual(['row-0', 'row-1', 'row-2']);
  });

  dataApiOnly(
    'test/inbox/outbox.test.ts',
    'reports what it did when the delete and the age query fail: metrics out, failures counted, then the error',
    async () => {
      const url = await queue('sweep-fails');
      const consumer = `sweep-fails-${run}`;
      await settleLeftovers();
      await unsentRows(consumer, url, 1);
      await oldSentRow(consumer, url);
      db.server.faults.dropResponse({
        operation: 'ExecuteStatement',
        match: (sql) => sql.startsWith('DELETE FROM') || sql.includes('min(created_at)'),
        count: Infinity,
      });
      const metrics = recordingMetrics();
      const error = await sweeper(metrics)({}, lambdaContext()).catch((e: unknown) => e);
      db.server.faults.clear();
      expect(error).toBeInstanceOf(OutboxSweepError);
      const { report } = error as OutboxSweepError;
      expect(report).toMatchObject({ sent: 1, deferred: 0, deleted: 0, oldestUnsentAgeSeconds: undefined, cutShort: false });
      expect(report.failures.map((failure) => failure.step)).toEqual(['delete', 'age']);
      expect((error as Error).message).toMatch(/^outbox sweep: delete failed: .*; age failed: .*The next sweep tries again\.$/);
      expect(metrics.published).toHaveLength(1);
      expect(metrics.published[0]).toMatchObject({ OutboxSwept: [1], OutboxSweepDeferred: [0], OutboxSweepFailures: [2] });
      // Unknown, so no data point: the age alarm treats missing data as breaching.
      expect(metrics.published[0]).not.toHaveProperty('OutboxOldestUnsentAgeSeconds');
      expect(await drain(f.client, url)).toHaveLength(1);
    },
  );

  it("sends a replayed parked message's outbox rows right after the replay commits, not at the next sweep", async () => {
    const url = await queue('replayed');
    let fixed = false;
    const { handler, rows } = shipper(url, {
      onPermanentError: 'park',
      apply: async (tx, message) => {
        if (!fixed) throw new PermanentError('warehouse unknown');
        tx.send({ to: 'invoices', body: { orderId: message.body.orderId } });
      },
    });
    const id = `p-${run}`;
    await handler({ Records: [order(id)] }, lambdaContext());
    const [parked] = await parkedMessages(handler).list();
    fixed = true;
    expect(await parkedMessages(handler).replay(parked!.id)).toBe('replayed');
    expect((await drain(f.client, url)).map((m) => JSON.parse(m.Body!))).toEqual([{ orderId: id }]);
    expect((await rows())[0]!.sent_at).toBeInstanceOf(Date);
  });

  it('reads destination names from INBOX_DESTINATIONS', async () => {
    const url = await queue('named');
    process.env.INBOX_DESTINATIONS = JSON.stringify({ invoices: url });
    try {
      const handler = inbox<Order>({
        consumer: `named-${run++}`,
        database: db.target,
        logger: recordingLogger(),
        metrics: recordingMetrics(),
        outbox: sqsOutbox({ client: f.client }),
        apply: async (tx, message) => tx.send({ to: 'invoices', body: message.body }),
      });
      await handler({ Records: [order(`n-${run}`)] }, lambdaContext());
    } finally {
      delete process.env.INBOX_DESTINATIONS;
    }
    expect(await drain(f.client, url)).toHaveLength(1);
  });
});

describe('tx.send of what SQS refuses', () => {
  /** A consumer that parks, whose apply sends `send` to `url`; what tx.send threw, if it threw. */
  function sender(send: Partial<OutboxSend>, url: string) {
    const consumer = `unsendable-${run++}`;
    const thrown: unknown[] = [];
    const logger = recordingLogger();
    const handler = inbox<Order>({
      consumer,
      database: db.target,
      logger,
      metrics: recordingMetrics(),
      onPermanentError: 'park',
      outbox: sqsOutbox({ client: f.client }),
      apply: async (tx) => {
        try {
          tx.send({ to: url, body: 'fine', ...send });
        } catch (error) {
          thrown.push(error);
          throw error;
        }
      },
    });
    const rows = () => db.query('SELECT body FROM inbox.outbox_message WHERE consumer_name = $1', [consumer]);
    return { handler, thrown, logger, rows };
  }

  // SQS counts the body with every attribute's name, type and value: the outbox's idempotency-key attribute
  // ("idempotency-key", "String" and a 36-character key) takes 57 bytes of the 1 MiB.
  const LARGEST_BODY = 1024 * 1024 - 57;

  it.each([
    ['a body holding U+0000', { body: 'ab\u0000c' }, 'tx.send.body holds U+0000 at character 2, which SQS refuses'],
    ['an attribute holding U+0001', { attributes: { note: 'a\u0001' } }, 'tx.send.attributes["note"] holds U+0001 at character 1, which SQS refuses'],
    ['a group holding U+FFFF', { groupId: 'g\uffff' }, 'tx.send.groupId holds U+FFFF at character 1, which SQS refuses'],
    ['a body holding a lone surrogate', { body: 'a\ud800' }, 'tx.send.body holds U+D800 at character 1, which SQS refuses'],
    [
      'a group with a space',
      { groupId: 'has space' },
      'tx.send.groupId holds a character other than an ASCII letter, digit or punctuation, which SQS refuses in a MessageGroupId (1 to 128 of those)',
    ],
    ['a group of 129 characters', { groupId: 'g'.repeat(129) }, 'tx.send.groupId is 129 characters long, which SQS refuses in a MessageGroupId'],
    ['an empty group', { groupId: '' }, 'tx.send.groupId is 0 characters long, which SQS refuses in a MessageGroupId'],
    ['an empty attribute', { attributes: { trace: 'x', note: '' } }, 'tx.send.attributes["note"] is empty, which SQS refuses: this message can never be sent'],
    [
      'a body one byte over the limit with its key attribute',
      { body: 'x'.repeat(LARGEST_BODY + 1) },
      "tx.send: the message is 1048577 bytes with its attributes and its idempotency key, over SQS's limit of 1048576: it can never be sent. Fix: store the payload elsewhere",
    ],
    [
      'attributes that take the body over the limit',
      { body: `${'é'.repeat((LARGEST_BODY - 21) / 2)}x`, attributes: { trace: 'x'.repeat(10) } },
      "tx.send: the message is 1048577 bytes with its attributes and its idempotency key, over SQS's limit",
    ],
  ])('fails the record as permanent, naming where (%s): with park it is parked, and nothing is written to send', async (_, send, where) => {
    const { handler, rows } = sender(send, await queue('refused'));

    expect(await handler({ Records: [order(`u-${run}`)] }, lambdaContext())).toEqual({ batchItemFailures: [] });

    const [parked] = await parkedMessages(handler).list();
    expect(parked).toMatchObject({ errorClass: 'PermanentError', errorMessage: expect.stringContaining(where) });
    expect(await rows()).toEqual([]);
  });

  it('takes a body as large as SQS takes it with its key attribute and attributes, which arrives whole', async () => {
    const url = await queue('largest');
    const { handler, rows, logger } = sender({ body: 'é'.repeat((LARGEST_BODY - 21) / 2), attributes: { trace: 'x'.repeat(10) } }, url);

    expect(await handler({ Records: [order(`l-${run}`)] }, lambdaContext())).toEqual({ batchItemFailures: [] });

    expect(await rows()).toHaveLength(1);
    expect(logger.lines.filter((line) => line.level !== 'info')).toEqual([]);
    const [message] = await drain(f.client, url);
    expect(Buffer.byteLength(message!.Body!)).toBe(LARGEST_BODY - 21);
  });

  const REFUSED_NAMES: [string, string, string][] = [
    ['the key the outbox sets', 'idempotency-key', 'is the key the outbox sends each message under, which it sets itself: name your attribute otherwise'],
    ...['AWS.trace', 'amazon.trace', '.trace', 'trace.', 'a..b', 'has space', 'café', 'x'.repeat(257), ''].map((name): [string, string, string] => [
      JSON.stringify(name).slice(0, 20),
      name,
      'is no message attribute name SQS takes: use 1 to 256 letters, digits, _, - and .',
    ]),
  ];
  it.each(REFUSED_NAMES)(
    'fails the record, not as permanent, for an attribute name SQS refuses (%s): the code must change, nothing is parked',
    async (_, name, fix) => {
      const { handler, thrown, rows } = sender({ attributes: { [name]: 'v' } }, await queue('named'));
      const record = order(`n-${run}`);

      expect(await handler({ Records: [record] }, lambdaContext())).toEqual({ batchItemFailures: [{ itemIdentifier: record.messageId }] });

      expect(thrown[0]).toBeInstanceOf(InboxConfigError);
      expect((thrown[0] as Error).message).toBe(`inbox option "tx.send.attributes[${JSON.stringify(name)}]": ${(thrown[0] as Error).message.split('": ')[1]}`);
      expect((thrown[0] as Error).message).toContain(fix);
      expect(await parkedMessages(handler).list()).toEqual([]);
      expect(await rows()).toEqual([]);
    },
  );

  it('sends the attribute names SQS takes, and a group on a standard queue', async () => {
    const url = await queue('names');
    const attributes = { 'a.b-c_D9': '1', awstrace: '2', 'trace.aws': '3', ['n'.repeat(256)]: '4' };
    const { handler } = sender({ attributes, groupId: `!"#$%&'()*+,-./:;<=>?@[\\]^_\`{|}~${'g'.repeat(96)}` }, url);

    expect(await handler({ Records: [order(`a-${run}`)] }, lambdaContext())).toEqual({ batchItemFailures: [] });

    const [message] = await drain(f.client, url);
    expect(Object.fromEntries(Object.entries(message!.MessageAttributes!).map(([name, value]) => [name, value.StringValue]))).toEqual({
      ...attributes,
      'idempotency-key': expect.any(String),
    });
  });
});
