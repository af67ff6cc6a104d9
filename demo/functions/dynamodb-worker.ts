import { dynamoDbInbox } from '../../lambda/inbox/index.js';
import { shipOrder } from './ship-order.js';

/**
 * The example DynamoDB Streams consumer: ships each order inserted into the orders table (item key
 * `orderId`), exactly once per change. Other changes are claimed and skipped. Configured by the
 * environment the InboxConsumer construct sets.
 */
export const handler = dynamoDbInbox({
  onPermanentError: 'park',
  apply: async (tx, message) => {
    if (message.body.eventName === 'INSERT') await shipOrder(tx, message.body.keys.orderId, message.key);
  },
});
