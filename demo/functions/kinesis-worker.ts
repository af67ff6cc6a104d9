import { kinesisInbox } from '../../lambda/inbox/index.js';
import type { OrderMessage } from './order-worker.js';
import { shipOrder } from './ship-order.js';

/**
 * The example Kinesis consumer: ships the order each record names (`{ "orderId": "order-417" }` as the
 * record's data), exactly once per record: Lambda's retries of a shard from a failed record find the
 * claims of what committed before it. Keyed by the producer's order id, so a re-put record ships nothing
 * more either. Configured by the environment the InboxConsumer construct sets.
 */
export const handler = kinesisInbox<OrderMessage>({
  onPermanentError: 'park',
  key: { field: 'orderId' },
  apply: (tx, message) => shipOrder(tx, message.body?.orderId, message.key),
});
