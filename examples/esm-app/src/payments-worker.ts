// src/payments-worker.ts: runs in Lambda
import { inbox, PermanentError } from 'sqs-inbox';
import type { InboxMessage, InboxTransaction } from 'sqs-inbox';

export interface Payment {
  readonly paymentId: string;
  readonly amountCents: number;
}

/** The effect, runs only when the claim inserted the row; its own function, so a unit test can call it. */
export async function applyPayment(tx: InboxTransaction, message: InboxMessage<Payment>): Promise<void> {
  const payment = message.body;
  if (!payment?.paymentId) throw new PermanentError('body.paymentId is required');
  // Same transaction as the inbox claim: committed together, or not at all.
  await tx.execute('INSERT INTO public.payments (payment_id, amount_cents) VALUES (:id, :amount)', {
    id: payment.paymentId,
    amount: payment.amountCents,
  });
}

// `consumer` defaults to process.env.INBOX_CONSUMER, which InboxConsumer sets to its `consumerName`.
// `'park'`: a payment that can never apply is stored in the parked table, so the later payments of its FIFO
// group, received with it, are not held back until they reach the dead-letter queue with it.
export const handler = inbox<Payment>({ onPermanentError: 'park', apply: applyPayment });
