// src/payments-worker.ts: runs in Lambda
import { inbox, PermanentError } from 'sqs-inbox';

export interface Payment {
  readonly paymentId: string;
  readonly amountCents: number;
}

// `consumer` defaults to process.env.INBOX_CONSUMER, which InboxConsumer sets to its `consumerName`.
export const handler = inbox<Payment>({
  apply: async (tx, message) => {
    const payment = message.body;
    if (!payment?.paymentId) throw new PermanentError('body.paymentId is required');
    // Same transaction as the inbox claim: committed together, or not at all.
    await tx.execute('INSERT INTO public.payments (payment_id, amount_cents) VALUES (:id, :amount)', {
      id: payment.paymentId,
      amount: payment.amountCents,
    });
  },
});
