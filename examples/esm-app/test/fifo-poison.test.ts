import { expect, it } from 'vitest';
import { runScenario } from 'sqs-inbox/local';

it('parks a poison payment alone: no well-formed payment of its FIFO group follows it to the dead-letter queue', async () => {
  const report = await runScenario({
    handler: () => import('../src/payments-worker.js').then((m) => m.handler),
    setup: 'CREATE TABLE public.payments (id bigserial PRIMARY KEY, payment_id text NOT NULL, amount_cents int NOT NULL)',
    message: (i) => ({ key: `pay-${i}`, body: { paymentId: `pay-${i}`, amountCents: 100 + i }, groupId: `customer-${i % 20}` }),
    effects: 'SELECT payment_id AS key, count(*), min(id) AS seq FROM public.payments GROUP BY 1',
    env: { INBOX_CONSUMER: 'payments-worker', POWERTOOLS_METRICS_DISABLED: 'true', POWERTOOLS_LOG_LEVEL: 'SILENT' },
    // Only poison bodies, on a FIFO queue whose redrive policy sends a message to the dead-letter queue at its
    // fifth receive: whatever reaches it was taken there by a poison message of its group.
    faults: ['poison'],
    fifo: true,
    seed: 417,
    visibilityTimeoutSeconds: 10,
  });
  expect(report.poison).toBeGreaterThanOrEqual(4);
  expect(report.wellFormedInDlqOrParked).toBe(0);
  expect(report.deadLettered).toBe(0);
  expect(report.parked).toBe(report.poison);
  expect(report.problems).toEqual([]);
}, 180_000);
