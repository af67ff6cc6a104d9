import { PermanentError } from '../../lambda/inbox/index.js';
import type { InboxTransaction } from '../../lambda/inbox/index.js';

/**
 * The example effect every example consumer applies, whatever its source: ships an order, counting
 * shipments so that a double effect shows as shipped_count 2. Needs SELECT, INSERT and UPDATE on
 * public.orders (EXAMPLE_ORDER_MIGRATIONS creates it).
 */
export async function shipOrder(tx: InboxTransaction, orderId: unknown, key: string): Promise<void> {
  if (typeof orderId !== 'string' || orderId.length === 0) {
    throw new PermanentError('orderId must be a non-empty string, e.g. {"orderId":"order-417"}');
  }
  await tx.execute(
    `INSERT INTO public.orders (order_id, status, shipped_count, last_key) VALUES (:orderId, 'shipped', 1, :key)
     ON CONFLICT (order_id) DO UPDATE
       SET status = 'shipped', shipped_count = orders.shipped_count + 1, last_key = :key, updated_at = now()`,
    { orderId, key },
  );
}
