import { inbox } from '../../lambda/inbox/index.js';
import { shipOrder } from './ship-order.js';

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
  apply: (tx, message) => shipOrder(tx, message.body?.orderId, message.key),
});
