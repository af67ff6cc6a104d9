import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inbox } from '../../lambda/inbox/batch-handlers.js';
import type { InboxMessage, InboxTransaction } from '../../lambda/inbox/index.js';
import { inboxFixture, lambdaContext, recordingLogger, recordingMetrics, sqsRecord } from '../support/inbox.js';
import type { InboxFixture } from '../support/inbox.js';

let db: InboxFixture;
beforeAll(async () => {
  db = await inboxFixture('fifo');
  await db.query('CREATE TABLE public.effects (seq bigserial PRIMARY KEY, consumer text NOT NULL, group_id text NOT NULL, position int NOT NULL)');
});
afterAll(async () => db.close());

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
  const effects = await db.query<{ group_id: string; position: number }>(
    'SELECT group_id, position FROM public.effects WHERE consumer = $1 ORDER BY seq',
    [consumer],
  );
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
  it.each(['transaction', 'batch-transaction'] as const)('skip-group (%s): per group, effects commit in send order and nothing after a failed record of its group runs', async (mode) => {
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
      { numRuns: 40 },
    );
  });

  it.each(['transaction', 'batch-transaction'] as const)('stop-batch (%s): after the first failure no further record starts, in any group', async (mode) => {
    await fc.assert(
      fc.asyncProperty(batchArbitrary, async (batch) => {
        // One group at a time: groups run in order of first appearance, so the run order is known.
        const { records, failed, effects } = await invoke(batch, 'stop-batch', 1, mode);
        const groupsInOrder = [...new Set(batch.map((s) => s.group))];
        const runOrder = groupsInOrder.flatMap((group) => batch.map((step, index) => ({ step, index })).filter(({ step }) => step.group === group));
        const firstFailure = runOrder.findIndex(({ step }) => step.fail);
        const committed = (firstFailure === -1 ? runOrder : runOrder.slice(0, firstFailure)).map(({ step }) => `${step.group}/${step.position}`);
        if (mode === 'transaction') {
          expect(effects.map((e) => `${e.group_id}/${e.position}`)).toEqual(committed);
        } else {
          // A batch that commits as one applies its records in batch order, not group after group: the same
          // records, each group in order.
          expect(effects.map((e) => `${e.group_id}/${e.position}`).sort()).toEqual([...committed].sort());
          for (const group of groupsInOrder) {
            const positions = effects.filter((e) => e.group_id === group).map((e) => e.position);
            expect(positions).toEqual([...positions].sort((a, b) => a - b));
          }
        }
        // Everything from the first failure on, in every group, is reported failed.
        runOrder.forEach(({ index }, order) => {
          expect(failed.has(records[index]!.messageId)).toBe(firstFailure !== -1 && order >= firstFailure);
        });
      }),
      { numRuns: 40 },
    );
  });

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
