// test/exactly-once.test.ts: run by cdk init's jest, as `NODE_OPTIONS=--experimental-vm-modules npx jest`
import { runScenario } from 'sqs-inbox/local';
// Imported before INBOX_* is set: the handler reads its environment at its first invocation.
import { handler } from '../src/payments-worker';

test('applies every payment exactly once, in order, through crashes, lost commits, races and duplicate sends', async () => {
  const report = await runScenario({
    handler: () => handler,
    // No primary key on payment_id: a double effect is a second row, not a failed insert.
    setup: 'CREATE TABLE public.payments (id bigserial PRIMARY KEY, payment_id text NOT NULL, amount_cents int NOT NULL)',
    message: (i) => ({ key: `pay-${i}`, body: { paymentId: `pay-${i}`, amountCents: 100 + i }, groupId: `customer-${i % 20}` }),
    effects: 'SELECT payment_id AS key, count(*), min(id) AS seq FROM public.payments GROUP BY 1',
    env: { INBOX_CONSUMER: 'payments-worker', POWERTOOLS_METRICS_DISABLED: 'true', POWERTOOLS_LOG_LEVEL: 'SILENT' },
  });
  expect(report.problems).toEqual([]);
}, 180_000);
