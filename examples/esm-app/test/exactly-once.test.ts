import { expect, it } from 'vitest';
import { runScenario } from 'sqs-inbox/local';

it('applies every payment exactly once, in order, through crashes, lost commits, races and duplicate sends', async () => {
  const report = await runScenario({
    // Loaded once the local Data API and SQS are up and INBOX_* points at them.
    handler: () => import('../src/payments-worker.js').then((m) => m.handler),
    // No primary key on payment_id: a double effect is a second row, not a failed insert.
    setup: 'CREATE TABLE public.payments (id bigserial PRIMARY KEY, payment_id text NOT NULL, amount_cents int NOT NULL)',
    message: (i) => ({ key: `pay-${i}`, body: { paymentId: `pay-${i}`, amountCents: 100 + i }, groupId: `customer-${i % 20}` }),
    effects: 'SELECT payment_id AS key, count(*), min(id) AS seq FROM public.payments GROUP BY 1',
    env: { INBOX_CONSUMER: 'payments-worker', POWERTOOLS_METRICS_DISABLED: 'true', POWERTOOLS_LOG_LEVEL: 'SILENT' },
  });
  expect(report.problems).toEqual([]);
}, 180_000);
