// The consumer `bench/bundle.ts` bundles for sqs-inbox: one transaction-mode handler, imported from the
// BUILT package by its own name (Node and esbuild resolve a package's self-reference through its exports),
// exactly as a user's Lambda imports it.
import { inbox } from 'sqs-inbox';

export const handler = inbox<{ orderId: string }>({
  consumer: 'orders',
  apply: async (tx, message) => {
    await tx.execute('UPDATE orders SET shipped = true WHERE order_id = :id', { id: message.body.orderId });
  },
});
