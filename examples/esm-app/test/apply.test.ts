import { expect, it } from 'vitest';
import { PermanentError } from 'sqs-inbox';
import type { InboxMessage, InboxTransaction, SqlParams } from 'sqs-inbox';
import { applyPayment } from '../src/payments-worker.js';
import type { Payment } from '../src/payments-worker.js';

// A unit test of the effect alone, without PostgreSQL: it proves the statements the code sends. That they
// apply exactly once through crashes and redeliveries is what exactly-once.test.ts proves.
function recordingTransaction() {
  const statements: { sql: string; params: SqlParams | undefined }[] = [];
  const tx: InboxTransaction = {
    transactionId: 'unit-test',
    execute: async (sql, params) => {
      statements.push({ sql, params });
      return { rows: [], updated: 1 };
    },
    executeBatch: async () => 0,
    send: () => undefined,
  };
  return { tx, statements };
}
const payment = (body: Partial<Payment>) => ({ key: 'pay-1', body }) as InboxMessage<Payment>;

it('inserts the payment in the transaction it is given', async () => {
  const { tx, statements } = recordingTransaction();
  await applyPayment(tx, payment({ paymentId: 'pay-1', amountCents: 250 }));
  expect(statements).toEqual([{ sql: expect.stringContaining('INSERT INTO public.payments'), params: { id: 'pay-1', amount: 250 } }]);
});

it('refuses a payment without its id as permanent, before any statement', async () => {
  const { tx, statements } = recordingTransaction();
  await expect(applyPayment(tx, payment({ amountCents: 250 }))).rejects.toThrow(PermanentError);
  expect(statements).toEqual([]);
});
