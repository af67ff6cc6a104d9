import { CreateQueueCommand } from '@aws-sdk/client-sqs';
import fc from 'fast-check';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PermanentError } from '../../lambda/inbox/index.js';
import { inbox } from '../../lambda/inbox/index.js';
import type { InboxMessage, InboxOptions, InboxTransaction } from '../../lambda/inbox/index.js';
import { sqsOutbox } from '../../lambda/inbox/outbox/index.js';
import { inboxFixture, lambdaContext, recordingLogger, recordingMetrics, sqsRecord } from '../support/inbox.js';
import type { InboxFixture } from '../support/inbox.js';
import { startSqsFixture } from '../support/sqs.js';
import type { SqsFixture } from '../support/sqs.js';
import { propertyParameters } from '../support/seed.js';

let db: InboxFixture;
let sqs: SqsFixture;
let invoices: string;
beforeAll(async () => {
  db = await inboxFixture('fifo');
  sqs = await startSqsFixture();
  invoices = (await sqs.client.send(new CreateQueueCommand({ QueueName: 'invoices' }))).QueueUrl!;
  await db.query('CREATE TABLE public.effects (seq bigserial PRIMARY KEY, consumer text NOT NULL, group_id text NOT NULL, position int NOT NULL)');
});
afterAll(async () => {
  await sqs.close();
  await db.close();
});

type Step = { group: string; position: number; fail: boolean };

let run = 0;

/** One invocation over a random FIFO batch; returns what ran, in commit order, and what was reported. */
async function invoke(batch: Step[], onFailure: 'skip-group' | 'stop-batch', concurrency = 3, mode: 'transaction' | 'batch-transaction' = 'transaction') {
  const consumer = `fifo-${onFailure}-${run++}`;
  const effect = async (tx: InboxTransaction, message: InboxMessage<Step>) => {
    await tx.execute('INSERT INTO public.effects (consumer, group_id, position) VALUES (:consumer, :group, :position)', {
      consumer,
      group: message.groupId ?? '',
      position: message.body.position,
    });
    if (message.body.fail) throw new Error(`step ${message.groupId}/${message.body.position} fails`);
  };
  const handler = inbox<Step>({
    consumer,
    database: db.target,
    logger: recordingLogger(),
    metrics: recordingMetrics(),
    fifo: { onFailure },
    concurrency,
    ...(mode === 'transaction'
      ? { apply: effect }
      : {
          // One statement per message, in the order given: a failing message fails the whole batch's
          // transaction, and the fallback runs each record alone.
          applyBatch: async (tx, messages) => {
            for (const message of messages) await effect(tx, message);
          },
        }),
  });
  const records = batch.map((step) => sqsRecord({ body: step, groupId: step.group }));
  const response = await handler({ Records: records }, lambdaContext());
  const effects = await db.query<{ group_id: string; position: number }>('SELECT group_id, position FROM public.effects WHERE consumer = $1 ORDER BY seq', [
    consumer,
  ]);
  return { records, failed: new Set(response.batchItemFailures.map((f) => f.itemIdentifier)), effects };
}

const batchArbitrary = fc
  .array(fc.record({ group: fc.constantFrom('g1', 'g2', 'g3', 'g4'), fail: fc.integer({ min: 0, max: 9 }).map((n) => n < 2) }), { minLength: 1, maxLength: 10 })
  .map((steps) => {
    const positions = new Map<string, number>();
    return steps.map((step) => {
      const position = (positions.get(step.group) ?? 0) + 1;
      positions.set(step.group, position);
      return { ...step, position };
    });
  });

describe('FIFO batches (property-based)', () => {
  it.each(['transaction', 'batch-transaction'] as const)(
    'skip-group (%s): per group, effects commit in send order and nothing after a failed record of its group runs',
    async (mode) => {
      await fc.assert(
        fc.asyncProperty(batchArbitrary, async (batch) => {
          const { records, failed, effects } = await invoke(batch, 'skip-group', 3, mode);
          for (const group of new Set(batch.map((s) => s.group))) {
            const steps = batch.filter((s) => s.group === group);
            const firstFailure = steps.findIndex((s) => s.fail);
            const expected = (firstFailure === -1 ? steps : steps.slice(0, firstFailure)).map((s) => s.position);
            // Committed effects of the group: exactly the prefix before its first failure, in order.
            expect(effects.filter((e) => e.group_id === group).map((e) => e.position)).toEqual(expected);
          }
          batch.forEach((step, index) => {
            const steps = batch.filter((s) => s.group === step.group);
            const firstFailure = steps.findIndex((s) => s.fail);
            const shouldFail = firstFailure !== -1 && step.position >= steps[firstFailure]!.position;
            expect(failed.has(records[index]!.messageId)).toBe(shouldFail);
          });
        }),
        propertyParameters(40),
      );
    },
  );

  it.each(['transaction', 'batch-transaction'] as const)(
    'stop-batch (%s): the batch runs in batch order, and after the first failure no further record starts, in any group',
    async (mode) => {
      await fc.assert(
        fc.asyncProperty(batchArbitrary, async (batch) => {
          // The default concurrency: stop-batch must not depend on running one group at a time.
          const { records, failed, effects } = await invoke(batch, 'stop-batch', 10, mode);
          const firstFailure = batch.findIndex((step) => step.fail);
          const committed = (firstFailure === -1 ? batch : batch.slice(0, firstFailure)).map((step) => `${step.group}/${step.position}`);
          // A failing record's own effect rolls back; nothing after it started.
          expect(effects.map((e) => `${e.group_id}/${e.position}`)).toEqual(committed);
          // Everything from the first failure on, in every group, is reported failed.
          records.forEach((record, index) => {
            expect(failed.has(record.messageId)).toBe(firstFailure !== -1 && index >= firstFailure);
          });
        }),
        propertyParameters(40),
      );
    },
  );

  it('runs one group at a time in order while groups run in parallel', async () => {
    const consumer = 'fifo-parallel';
    const active = new Map<string, number>();
    let maxGroups = 0;
    let overlapWithinGroup = false;
    const handler = inbox<Step>({
      consumer,
      database: db.target,
      logger: recordingLogger(),
      metrics: recordingMetrics(),
      concurrency: 4,
      apply: async (tx, message) => {
        const group = message.groupId!;
        if ((active.get(group) ?? 0) > 0) overlapWithinGroup = true;
        active.set(group, (active.get(group) ?? 0) + 1);
        maxGroups = Math.max(maxGroups, [...active.values()].filter((v) => v > 0).length);
        await tx.execute('SELECT pg_sleep(0.02)');
        active.set(group, active.get(group)! - 1);
      },
    });
    const records = ['a', 'b', 'c', 'd'].flatMap((group) => [1, 2, 3].map((position) => sqsRecord({ body: { group, position, fail: false }, groupId: group })));
    const response = await handler({ Records: records }, lambdaContext());
    expect(response.batchItemFailures).toEqual([]);
    expect(overlapWithinGroup).toBe(false);
    expect(maxGroups).toBeGreaterThan(1);
  });

  it('a fair queue (a standard queue whose records carry a MessageGroupId) keeps standard semantics: a failure skips nothing', async () => {
    // SQS fair queues: a MessageGroupId on a standard queue only spreads the load; its messages are not
    // ordered (shared/reference/sqs-lambda.md, "Standard queues with MessageGroupId"). Only the queue's
    // ARN says FIFO.
    const consumer = 'fair-queue';
    const handler = inbox<Step>({
      consumer,
      database: db.target,
      logger: recordingLogger(),
      metrics: recordingMetrics(),
      apply: async (tx, message) => {
        await tx.execute('INSERT INTO public.effects (consumer, group_id, position) VALUES (:consumer, :group, :position)', {
          consumer,
          group: message.groupId ?? '',
          position: message.body.position,
        });
        if (message.body.fail) throw new Error('the first record fails');
      },
    });
    const records = [1, 2, 3].map((position) => sqsRecord({ body: { group: 'tenant-a', position, fail: position === 1 }, groupId: 'tenant-a', fifo: false }));
    expect(records[0]!.attributes.MessageGroupId).toBe('tenant-a');
    const response = await handler({ Records: records }, lambdaContext());
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: records[0]!.messageId }]);
    const effects = await db.query('SELECT position FROM public.effects WHERE consumer = $1 ORDER BY position', [consumer]);
    expect(effects.map((e) => e.position)).toEqual([2, 3]);
  });
});

type Order = { orderId: string; refuse?: boolean };

const SHIP = `INSERT INTO public.orders (order_id, status, shipped_count) VALUES (:orderId, 'shipped', 1)
  ON CONFLICT (order_id) DO UPDATE SET shipped_count = orders.shipped_count + 1`;
const SHIP_SET = `INSERT INTO public.orders (order_id, status, shipped_count)
  SELECT o.order_id, 'shipped', 1 FROM jsonb_to_recordset(:orders::jsonb) AS o(order_id text)
  ON CONFLICT (order_id) DO UPDATE SET shipped_count = orders.shipped_count + 1`;
const SHIP_CLAIMED = `INSERT INTO public.orders (order_id, status, shipped_count)
  SELECT body->>'orderId', 'shipped', 1 FROM claimed
  ON CONFLICT (order_id) DO UPDATE SET shipped_count = orders.shipped_count + 1`;

/** The user's own verdict on a message: a permanent error for an order marked `refuse`. */
const check = (message: InboxMessage<Order>) => {
  if (message.body.refuse) throw new PermanentError(`order ${message.body.orderId} is refused`);
};

/** Each mode, with and without the outbox; `started` learns every order whose effect code ran alone. */
function stopBatchModes(started: Set<string>): Record<string, Partial<InboxOptions<Order>>> {
  const outbox = { outbox: sqsOutbox({ client: sqs.client, destinations: { invoices } }) };
  const apply = (send: boolean) => async (tx: InboxTransaction, message: InboxMessage<Order>) => {
    started.add(message.body.orderId);
    check(message);
    await tx.execute(SHIP, { orderId: message.body.orderId });
    if (send) tx.send({ to: 'invoices', body: { orderId: message.body.orderId } });
  };
  const applyBatch = (send: boolean) => async (tx: InboxTransaction, messages: readonly InboxMessage<Order>[]) => {
    if (messages.length === 1) started.add(messages[0]!.body.orderId);
    messages.forEach(check);
    await tx.execute(SHIP_SET, { orders: messages.map((m) => ({ order_id: m.body.orderId })) });
    if (send) for (const m of messages) tx.send({ to: 'invoices', body: { orderId: m.body.orderId } }, m);
  };
  return {
    apply: { apply: apply(false) },
    'apply with the outbox': { apply: apply(true), ...outbox },
    statement: {
      statement: (message: InboxMessage<Order>) => {
        started.add(message.body.orderId);
        check(message);
        return {
          sql: SHIP.replace("VALUES (:orderId, 'shipped', 1)", "SELECT :orderId, 'shipped', 1 FROM claimed"),
          params: { orderId: message.body.orderId },
        };
      },
    },
    applyBatch: { applyBatch: applyBatch(false) },
    'applyBatch with the outbox': { applyBatch: applyBatch(true), ...outbox },
    statementBatch: {
      statementBatch: {
        sql: SHIP_CLAIMED,
        params: (messages: readonly InboxMessage<Order>[]) => {
          if (messages.length === 1) started.add(messages[0]!.body.orderId);
          messages.forEach(check);
          return {};
        },
      },
    },
  };
}
const STOP_BATCH_MODES = ['apply', 'apply with the outbox', 'statement', 'applyBatch', 'applyBatch with the outbox', 'statementBatch'];

describe("fifo: { onFailure: 'stop-batch' } stops the batch, at the default concurrency, in every mode", () => {
  let run = 0;
  beforeEach(() => db.server.faults.clear());

  /** A stop-batch consumer in `mode`, of its own name; `started` learns each order whose effect code ran alone. */
  function stopBatchHandler(mode: string) {
    const started = new Set<string>();
    const consumer = `stop-batch-${run++}`;
    const handler = inbox<Order>({
      consumer,
      database: db.target,
      logger: recordingLogger(),
      metrics: recordingMetrics(),
      fifo: { onFailure: 'stop-batch' },
      ...stopBatchModes(started)[mode],
    } as InboxOptions<Order>);
    return { handler, consumer, started };
  }

  /** A FIFO batch [a (group A), b (group B)]; returns what was reported, committed and started. */
  async function stopBatch(mode: string, a: { refuse?: boolean; malformed?: boolean } = {}) {
    const { handler, consumer, started } = stopBatchHandler(mode);
    const ids = { a: `${consumer}-a`, b: `${consumer}-b` };
    const records = [
      sqsRecord({ body: a.malformed ? '{ not json' : { orderId: ids.a, refuse: a.refuse }, groupId: 'A' }),
      sqsRecord({ body: { orderId: ids.b }, groupId: 'B' }),
    ];
    const response = await handler({ Records: records }, lambdaContext());
    const shipped = await db.query('SELECT order_id FROM public.orders WHERE order_id = ANY($1) ORDER BY order_id', [[ids.a, ids.b]]);
    const claims = await db.query('SELECT message_id FROM inbox.consumed_message WHERE consumer_name = $1', [consumer]);
    const sends = await db.query('SELECT body FROM inbox.outbox_message WHERE consumer_name = $1', [consumer]);
    return {
      failed: response.batchItemFailures.map((failure) => failure.itemIdentifier),
      records,
      shipped: shipped.map((row) => row.order_id),
      claims: claims.length,
      sends: sends.length,
      bStarted: started.has(ids.b),
    };
  }

  it.each(STOP_BATCH_MODES)('%s: a record of another group after a failed one is reported failed, unstarted, and nothing of it commits', async (mode) => {
    const { failed, records, shipped, claims, sends, bStarted } = await stopBatch(mode, { refuse: true });
    expect(failed).toEqual(records.map((record) => record.messageId));
    expect(bStarted).toBe(false);
    expect({ shipped, claims, sends }).toEqual({ shipped: [], claims: 0, sends: 0 });
  });

  it.each(STOP_BATCH_MODES)('%s: a malformed record stops the batch as well', async (mode) => {
    const { failed, records, shipped, claims, bStarted } = await stopBatch(mode, { malformed: true });
    expect(failed).toEqual(records.map((record) => record.messageId));
    expect(bStarted).toBe(false);
    expect({ shipped, claims }).toEqual({ shipped: [], claims: 0 });
  });

  it.each(STOP_BATCH_MODES)('%s: a call of the first record refused by the service (HTTP 500) stops the batch', async (mode) => {
    // The first record's own decisive call: its commit, or its one statement. A 500 did not run.
    const transaction = mode.startsWith('apply');
    db.server.faults.serverError({ count: 1, status: 500, operation: transaction ? 'CommitTransaction' : 'ExecuteStatement' });
    const { failed, records, shipped, claims, sends } = await stopBatch(mode);
    expect(failed).toEqual(records.map((record) => record.messageId));
    expect({ shipped, claims, sends }).toEqual({ shipped: [], claims: 0, sends: 0 });
  });

  it('a record after the failure that the duplicate filter knows is reported failed too, as the batch was stopped before it', async () => {
    const { handler, consumer } = stopBatchHandler('applyBatch');
    const known = sqsRecord({ body: { orderId: `${consumer}-c` }, groupId: 'C' });
    expect(await handler({ Records: [known] }, lambdaContext())).toEqual({ batchItemFailures: [] });
    // a and b join a set; the set fails for a, each runs alone; c, redelivered, is known and never joins.
    const records = [
      sqsRecord({ body: { orderId: `${consumer}-a`, refuse: true }, groupId: 'A' }),
      sqsRecord({ body: { orderId: `${consumer}-b` }, groupId: 'B' }),
      { ...known, attributes: { ...known.attributes, ApproximateReceiveCount: '2' } },
    ];
    const response = await handler({ Records: records }, lambdaContext());
    expect(response.batchItemFailures.map((failure) => failure.itemIdentifier)).toEqual(records.map((record) => record.messageId));
  });
});
