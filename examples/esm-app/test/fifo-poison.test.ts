import { expect, it } from 'vitest';
import { runScenario } from 'sqs-inbox/local';

// Only poison bodies, on a FIFO queue whose redrive policy sends a message to the dead-letter queue at its fifth
// receive: whatever well-formed payment reaches it was taken there by a poison payment of its group.
const payment = (i: number) => ({ paymentId: `fifo-${i}`, amountCents: 500 + i });

it('parks a poison payment alone: no well-formed payment of its FIFO group follows it to the dead-letter queue', async () => {
  const report = await runScenario({
    faults: ['poison'],
    fifo: true,
    seed: 417,
    visibilityTimeoutSeconds: 10,
    handler: async () => (await import('../src/payments-worker.js')).handler,
    setup: 'CREATE TABLE public.payments (id bigserial PRIMARY KEY, payment_id text NOT NULL, amount_cents int NOT NULL)',
    message: (i) => ({ key: payment(i).paymentId, groupId: `account-${i % 20}`, body: payment(i) }),
    effects: 'SELECT payment_id AS key, count(*), min(id) AS seq FROM public.payments GROUP BY payment_id',
    env: { POWERTOOLS_METRICS_DISABLED: 'true', POWERTOOLS_LOG_LEVEL: 'SILENT', INBOX_CONSUMER: 'fifo-payments' },
  });
  expect(report.poison).toBeGreaterThanOrEqual(4);
  expect(report.wellFormedInDlqOrParked).toBe(0);
  expect(report.deadLettered).toBe(0);
  expect(report.parked).toBe(report.poison);
  expect(report.problems).toEqual([]);
}, 180_000);
