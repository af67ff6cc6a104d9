import type { SQSBatchItemFailure, SQSEvent } from 'aws-lambda';
import { describe, expect, it, vi } from 'vitest';
import { inbox, PermanentError } from '../../lambda/inbox/index.js';
import type { InboxOptions } from '../../lambda/inbox/index.js';
import { FAULTS, runScenario } from '../../local/index.js';
import type { ScenarioConsumer, ScenarioEnvironment } from '../../local/index.js';
import { localStackPerFile } from '../support/local-stack.js';

/** The handler inbox() returns. */
type InboxHandler = ReturnType<typeof inbox>;

// runScenario as a user drives their own handler: the local queue, the event source, the demo's seeded
// faults, and exactly-once checked on the handler's own table with the user's effects query.

interface Payment {
  readonly paymentId: string;
  readonly amountCents: number;
}

/** The effect of examples/esm-app/src/payments-worker.ts, inside the inbox's transaction. */
const applyPayment: NonNullable<InboxOptions<Payment>['apply']> = async (tx, message) => {
  const payment = message.body;
  if (!payment?.paymentId) throw new PermanentError('body.paymentId is required');
  await tx.execute('INSERT INTO public.payments (payment_id, amount_cents) VALUES (:id, :amount)', {
    id: payment.paymentId,
    amount: payment.amountCents,
  });
};

/**
 * That module as it builds its handler when it loads: from the INBOX_* environment, which runScenario
 * sets before it calls the factory.
 */
async function importPaymentsWorker(): Promise<{ handler: InboxHandler }> {
  return { handler: inbox<Payment>({ apply: applyPayment }) };
}

/** The payments table without a key on payment_id, so a double effect is a second row; `seq` judges FIFO order. */
const payments: Omit<ScenarioConsumer, 'handler'> = {
  setup: 'CREATE TABLE public.payments (id bigserial PRIMARY KEY, payment_id text NOT NULL, amount_cents int NOT NULL)',
  message: (i) => ({ key: `pay-${i}`, body: { paymentId: `pay-${i}`, amountCents: 100 + i }, groupId: `customer-${i % 20}` }),
  effects: 'SELECT payment_id AS key, count(*), min(id) AS seq FROM public.payments GROUP BY 1',
};

/**
 * The hand-rolled consumer the inbox replaces: check a processed table, apply, record, each its own
 * autocommit statement; on a failure the rest of the batch is reported failed, to keep FIFO order.
 */
function naivePaymentsWorker({ session }: ScenarioEnvironment) {
  return async (event: SQSEvent) => {
    const batchItemFailures: SQSBatchItemFailure[] = [];
    for (const record of event.Records) {
      if (batchItemFailures.length > 0) {
        batchItemFailures.push({ itemIdentifier: record.messageId });
        continue;
      }
      try {
        const payment = JSON.parse(record.body) as Payment;
        const seen = await session.execute('SELECT 1 FROM public.processed WHERE payment_id = :id', { id: payment.paymentId });
        if (seen.rows.length > 0) continue;
        await session.execute('INSERT INTO public.payments (payment_id, amount_cents) VALUES (:id, :amount)', {
          id: payment.paymentId,
          amount: payment.amountCents,
        });
        await session.execute('INSERT INTO public.processed (payment_id) VALUES (:id) ON CONFLICT DO NOTHING', { id: payment.paymentId });
      } catch {
        batchItemFailures.push({ itemIdentifier: record.messageId });
      }
    }
    return { batchItemFailures };
  };
}

// One stack for the file, on a database of its own: the runs' own databases live on the shared server.
const stack = localStackPerFile('harness');

describe('runScenario with your own handler', () => {
  it('applies every payment exactly once, in order, through crashes, lost commits, races and duplicate sends (the README test)', async () => {
    // The same lines as examples/esm-app/test/exactly-once.test.ts, with the module's import replaced:
    // runScenario starts (and closes) its own stack, on DATABASE_URL.
    const report = await runScenario({
      // Loaded once the local Data API and SQS are up and INBOX_* points at them.
      handler: () => importPaymentsWorker().then((m) => m.handler),
      // No primary key on payment_id: a double effect is a second row, not a failed insert.
      setup: 'CREATE TABLE public.payments (id bigserial PRIMARY KEY, payment_id text NOT NULL, amount_cents int NOT NULL)',
      message: (i) => ({ key: `pay-${i}`, body: { paymentId: `pay-${i}`, amountCents: 100 + i }, groupId: `customer-${i % 20}` }),
      effects: 'SELECT payment_id AS key, count(*), min(id) AS seq FROM public.payments GROUP BY 1',
      env: { INBOX_CONSUMER: 'payments-worker', POWERTOOLS_METRICS_DISABLED: 'true', POWERTOOLS_LOG_LEVEL: 'SILENT' },
    });
    expect(report.problems).toEqual([]);
    expect(report).toMatchObject({ exactlyOnce: true, completed: true, orderChecked: true, messages: 300, doubled: 0, lost: 0 });
    expect(process.env.INBOX_DATABASE).toBeUndefined();
  }, 120_000);

  it('an inbox() handler with its own table meets every fault and applies each message once, parked poison included', async () => {
    const report = await runScenario(stack(), {
      ...payments,
      label: 'payments',
      handler: ({ database }) => inbox<Payment>({ consumer: 'payments-worker', database, onPermanentError: 'park', apply: applyPayment }),
      faults: FAULTS,
      messages: 300,
    });
    expect(report.problems).toEqual([]);
    expect(report.exactlyOnce).toBe(true);
    expect(report.orderChecked).toBe(true);
    // The seed decides the producer's faults by key; the others struck too, or problems would say so.
    expect(report.poison).toBe(5);
    expect(report.parked).toBe(5);
    expect(report.duplicateSends).toBe(24);
    expect(report.applied).toBe(295);
    for (const fault of FAULTS) expect(report.faultsInjected[fault], fault).toBeGreaterThan(0);
    expect(report.callsPerMessage).toBeGreaterThan(3);
  }, 120_000);

  it('a naive check-then-apply handler under the same faults applies payments twice, and the result says so', async () => {
    const report = await runScenario(stack(), {
      ...payments,
      label: 'naive',
      setup: [payments.setup as string, 'CREATE TABLE public.processed (payment_id text PRIMARY KEY)'],
      handler: naivePaymentsWorker,
      // Its effect is durable as soon as its INSERT ran: the lost-response and crash faults aim there.
      commitPoint: { statement: (sql) => sql.startsWith('INSERT INTO public.payments') },
      messages: 200,
      visibilityTimeoutSeconds: 1,
    });
    expect(report.doubled).toBeGreaterThan(0);
    expect(report.faultsInjected['drop-commit']).toBeGreaterThan(0);
    expect(report.faultsInjected['crash-in-transaction']).toBeGreaterThan(0);
    expect(report.doubleEffects.length).toBe(report.doubled);
    expect(report.doubleEffects.every((double) => double.count >= 2)).toBe(true);
    expect(report.exactlyOnce).toBe(false);
    expect(report.problems).toContainEqual(expect.stringMatching(/^\d+ message\(s\) applied more than once: pay-\d+ \(\d+ times\)/));
    expect(report.lost).toBe(0);
  }, 120_000);

  it('aims drop-commit and crash-in-transaction at the commit point: the commit, or the effect statement', async () => {
    const faults = ['drop-commit', 'crash-in-transaction'] as const;
    const atCommit = await runScenario(stack(), {
      ...payments,
      handler: ({ database }) => inbox<Payment>({ consumer: 'payments-worker', database, apply: applyPayment }),
      messages: 100,
      // Both faults strike for this seed (3% of some 100 commits each, decided by what each commit carries).
      seed: 1,
      faults,
    });
    const commitFaults = atCommit.faultsInjected['drop-commit']! + atCommit.faultsInjected['crash-in-transaction']!;
    expect(atCommit.faultsInjected['drop-commit']).toBeGreaterThan(0);
    expect(atCommit.faultsInjected['crash-in-transaction']).toBeGreaterThan(0);
    expect(atCommit.problems).toEqual([]);
    // A lost or refused commit fails its record: each one is delivered again.
    expect(atCommit.recordsDelivered).toBeGreaterThanOrEqual(atCommit.sends + commitFaults);

    const atStatement = await runScenario(stack(), {
      ...payments,
      setup: [payments.setup as string, 'CREATE TABLE public.processed (payment_id text PRIMARY KEY)'],
      handler: naivePaymentsWorker,
      commitPoint: { statement: (sql) => sql.startsWith('INSERT INTO public.payments') },
      messages: 100,
      seed: 1,
      faults,
    });
    expect(atStatement.faultsInjected['drop-commit']).toBeGreaterThan(0);
    expect(atStatement.faultsInjected['crash-in-transaction']).toBeGreaterThan(0);
    // Each one lets the effect run unrecorded: applied once more on redelivery.
    expect(atStatement.extraEffects).toBe(atStatement.faultsInjected['drop-commit']! + atStatement.faultsInjected['crash-in-transaction']!);
  }, 60_000);

  it('reports a commit point that never matched, as when startsWith misses the claim inbox() prepends in single-statement mode', async () => {
    const faults = ['drop-commit', 'crash-in-transaction'] as const;
    const singleStatement = ({ database }: ScenarioEnvironment) =>
      inbox<Payment>({
        consumer: 'payments-worker',
        database,
        statement: {
          sql: 'INSERT INTO public.payments (payment_id, amount_cents) SELECT :id, :amount FROM claimed',
          params: (message) => ({ id: message.body.paymentId, amount: message.body.amountCents }),
        },
      });
    const never = 'commit point never matched: drop-commit and crash-in-transaction were never injected';

    // The statement inbox() sends is `WITH claimed AS (...) INSERT INTO public.payments ...`.
    const startsWith = await runScenario(stack(), {
      ...payments,
      handler: singleStatement,
      commitPoint: { statement: (sql) => sql.startsWith('INSERT INTO public.payments') },
      messages: 20,
      faults,
    });
    expect(startsWith.faultsInjected).toEqual({});
    expect(startsWith.problems).toEqual([
      `${never}; check commitPoint (inbox() single-statement SQL starts with "WITH claimed AS": match it with sql.includes(...), not sql.startsWith(...))`,
    ]);
    expect(startsWith.exactlyOnce).toBe(false);

    // Left at 'commit', the default: single-statement mode never commits a transaction.
    const atCommit = await runScenario(stack(), { ...payments, handler: singleStatement, messages: 20, faults });
    expect(atCommit.problems).toEqual([expect.stringMatching(new RegExp(`^${never}; the handler made no CommitTransaction call`))]);

    const includes = await runScenario(stack(), {
      ...payments,
      handler: singleStatement,
      commitPoint: { statement: (sql) => sql.includes('INSERT INTO public.payments') },
      messages: 100,
      faults,
    });
    expect(includes.faultsInjected['drop-commit']).toBeGreaterThan(0);
    expect(includes.faultsInjected['crash-in-transaction']).toBeGreaterThan(0);
    // Every lost answer failed its record; the redelivery found the claim: no effect ran twice.
    expect(includes.problems).toEqual([]);
    expect(includes.extraEffects).toBe(0);
  }, 90_000);

  it('reports as lost the messages a handler acknowledges without applying', async () => {
    const skipped = (key: string) => key.endsWith('7');
    const report = await runScenario(stack(), {
      ...payments,
      handler: async () => {
        const worker = (await importPaymentsWorker()).handler;
        // Acknowledges every record; applies only the rest.
        return (event: SQSEvent) => worker({ Records: event.Records.filter((record) => !skipped(JSON.parse(record.body).paymentId)) });
      },
      messages: 60,
      faults: [],
    });
    const expected = Array.from({ length: 60 }, (_, i) => `pay-${i}`).filter(skipped);
    expect(report.lostKeys).toEqual(expected);
    expect(report.problems).toEqual([`6 message(s) lost (not applied, not parked, not in the dead-letter queue): ${expected.join(', ')}`]);
    expect(report.exactlyOnce).toBe(false);
  }, 60_000);

  it('reports every message as lost when the effects query does not return their keys', async () => {
    const report = await runScenario(stack(), {
      ...payments,
      handler: () => importPaymentsWorker().then((m) => m.handler),
      // Broken: groups by the amount, not the payment.
      effects: 'SELECT amount_cents::text AS key, count(*) FROM public.payments GROUP BY 1',
      messages: 20,
      faults: [],
    });
    expect(report.lost).toBe(20);
    expect(report.applied).toBe(0);
    expect(report.unexpectedKeys).toHaveLength(20);
    expect(report.problems).toContainEqual(expect.stringContaining('nothing was applied at all: does the effects query return the keys that message() gives?'));
    expect(report.problems).toContainEqual(expect.stringContaining('the effects query returned 20 key(s) no message carried'));
  }, 60_000);

  it('refuses an effects query without a key column, and a handler built for an earlier run', async () => {
    // A module-level handler: built on the first load, from the first run's environment, then cached.
    let cached: InboxHandler | undefined;
    const handler = async () => (cached ??= (await importPaymentsWorker()).handler);
    await expect(
      runScenario(stack(), { ...payments, handler, effects: 'SELECT payment_id, count(*) FROM public.payments GROUP BY 1', messages: 5, faults: [] }),
    ).rejects.toThrow('the effects query must return a "key" column');
    await expect(runScenario(stack(), { ...payments, handler, messages: 5, faults: [] })).rejects.toThrow(
      'the factory returned the handler an earlier run built for its own database',
    );
    // The handler itself where its factory belongs.
    await expect(runScenario(stack(), { ...payments, handler: cached as never, messages: 5, faults: [] })).rejects.toThrow(
      'handler must be a factory that returns your handler',
    );
  }, 60_000);

  it("silences an inbox() handler's EMF line per invocation with Powertools' own switches in env", async () => {
    const emfLines = async (env: Record<string, string>) => {
      const written: string[] = [];
      const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
        written.push(String(chunk));
        return true;
      });
      try {
        await runScenario(stack(), { ...payments, handler: () => importPaymentsWorker().then((m) => m.handler), messages: 20, faults: [], env });
      } finally {
        write.mockRestore();
      }
      return written.filter((line) => line.includes('"_aws"')).length;
    };
    // vitest.config.ts sets both switches for every test file; a user's suite may not.
    const saved = { metrics: process.env.POWERTOOLS_METRICS_DISABLED, logs: process.env.POWERTOOLS_LOG_LEVEL };
    try {
      delete process.env.POWERTOOLS_METRICS_DISABLED;
      delete process.env.POWERTOOLS_LOG_LEVEL;
      expect(await emfLines({})).toBeGreaterThan(0);
      expect(await emfLines({ POWERTOOLS_METRICS_DISABLED: 'true', POWERTOOLS_LOG_LEVEL: 'SILENT' })).toBe(0);
    } finally {
      if (saved.metrics !== undefined) process.env.POWERTOOLS_METRICS_DISABLED = saved.metrics;
      if (saved.logs !== undefined) process.env.POWERTOOLS_LOG_LEVEL = saved.logs;
    }
  }, 60_000);
});
