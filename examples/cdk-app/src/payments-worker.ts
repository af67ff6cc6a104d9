// src/payments-worker.ts: runs in Lambda. Single-statement mode: one Data API call per message.
import { inbox } from 'sqs-inbox';

interface Payment {
  readonly paymentId: string;
  readonly amountCents: number;
}

export const handler = inbox<Payment>({
  // The claim is the CTE `claimed`: the INSERT runs only when this message's key was claimed now.
  statement: {
    sql: 'INSERT INTO public.payments (payment_id, amount_cents) SELECT :id, :amount FROM claimed',
    params: (message) => ({ id: message.body.paymentId, amount: message.body.amountCents }),
  },
});
