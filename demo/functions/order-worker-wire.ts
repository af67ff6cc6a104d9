import { inbox } from '../../lambda/inbox/index.js';
import { postgresFromEnvironment } from '../../lambda/inbox/transport/postgres/index.js';
import type { OrderMessage } from './order-worker.js';
import { shipOrder } from './ship-order.js';

/**
 * The example order worker on the PostgreSQL wire, behind RDS Proxy: the same effect as order-worker.ts, over
 * a pool the environment configures (INBOX_PG_HOST, INBOX_PG_PORT, INBOX_PG_DATABASE, INBOX_PG_USER,
 * INBOX_PG_IAM_AUTH=true, which the InboxConsumer construct sets for a consumer with `proxy`).
 */
export const handler = inbox<OrderMessage>({
  database: postgresFromEnvironment(),
  onPermanentError: 'park',
  apply: (tx, message) => shipOrder(tx, message.body?.orderId, message.key),
});
