// Run by vitest: the testbed fails a handler that writes its effect outside the inbox's transaction, both
// at the README's message count (its doubled effects) and at 20 messages (by naming the faults that never
// struck, instead of passing silently).
import { expect, it } from 'vitest';
import { inbox } from 'sqs-inbox';
import { runScenario } from 'sqs-inbox/local';
import type { ScenarioEnvironment } from 'sqs-inbox/local';

const payments = {
  // The effect goes through its own autocommit session: not rolled back with the claim.
  handler: ({ database, session }: ScenarioEnvironment) =>
    inbox<{ paymentId: string; amountCents: number }>({
      consumer: 'payments-worker',
      database,
      apply: async (_tx, message) => {
        await session.execute('INSERT INTO public.payments (payment_id, amount_cents) VALUES (:id, :amount)', {
          id: message.body.paymentId,
          amount: message.body.amountCents,
        });
      },
    }),
  setup: 'CREATE TABLE public.payments (id bigserial PRIMARY KEY, payment_id text NOT NULL, amount_cents int NOT NULL)',
  message: (i: number) => ({ key: `pay-${i}`, body: { paymentId: `pay-${i}`, amountCents: 100 + i }, groupId: `customer-${i % 20}` }),
  effects: 'SELECT payment_id AS key, count(*), min(id) AS seq FROM public.payments GROUP BY 1',
  env: { POWERTOOLS_METRICS_DISABLED: 'true', POWERTOOLS_LOG_LEVEL: 'SILENT' },
};

it('fails a handler whose effect is outside the transaction at 300 messages: effects applied twice', async () => {
  const report = await runScenario(payments);
  expect(report.exactlyOnce).toBe(false);
  expect(report.doubleEffects.length).toBeGreaterThan(0);
}, 240_000);

it('fails it at 20 messages too, naming the faults that never struck', async () => {
  const report = await runScenario({ ...payments, messages: 20 });
  expect(report.exactlyOnce).toBe(false);
  expect(report.problems.some((problem) => problem.includes('was never injected'))).toBe(true);
}, 120_000);
