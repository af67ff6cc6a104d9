import { kafkaInbox } from '../../lambda/inbox/index.js';
import type { OrderMessage } from './order-worker.js';
import { shipOrder } from './ship-order.js';

/**
 * The example Kafka consumer (Amazon MSK or self-managed): ships the order each record names, exactly once
 * per record. The claim of the record's topic-partition@offset commits with the shipment; Lambda commits
 * the offset afterwards, and when that commit is lost the redelivered records find their claims.
 * Whether failures are reported per partition follows INBOX_REPORT_BATCH_ITEM_FAILURES, which the
 * InboxConsumer construct sets from the event source mapping.
 */
export const handler = kafkaInbox<OrderMessage>({
  onPermanentError: 'park',
  apply: (tx, message) => shipOrder(tx, message.body?.orderId, message.key),
});
