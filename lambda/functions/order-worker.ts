import { inbox, PermanentError } from '../inbox/index.js';

/** The example message: `{ "orderId": "order-417" }`. */
export interface OrderMessage {
  readonly orderId: string;
}

/**
 * The example consumer: ships an order exactly once. The claim and the shipment commit in one
 * transaction, so a redelivery (a crash after commit, a duplicate send) ships nothing more.
 * Configured by the environment the CDK construct sets: INBOX_RESOURCE_ARN, INBOX_SECRET_ARN (the secret of
 * its own database role, which InboxStack grants SELECT, INSERT and UPDATE on public.orders for the upsert
 * below), INBOX_DATABASE and INBOX_CONSUMER.
 */
export const handler = inbox<OrderMessage>({
  // The consumer name comes from INBOX_CONSUMER, which the InboxConsumer construct sets.
  onPermanentError: 'park',
  apply: async (tx, message) => {
    const orderId = message.body?.orderId;
    if (typeof orderId !== 'string' || orderId.length === 0) {
      throw new PermanentError('body.orderId must be a non-empty string, e.g. {"orderId":"order-417"}');
    }
    await tx.execute(
      `INSERT INTO public.orders (order_id, status, shipped_count, last_key) VALUES (:orderId, 'shipped', 1, :key)
       ON CONFLICT (order_id) DO UPDATE
         SET status = 'shipped', shipped_count = orders.shipped_count + 1, last_key = :key, updated_at = now()`,
      { orderId, key: message.key },
    );
  },
});
