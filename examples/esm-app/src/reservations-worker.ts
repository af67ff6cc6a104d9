// src/reservations-worker.ts: runs in Lambda; reserves stock for an order line, exactly once
import { inbox } from 'sqs-inbox';
import type { InboxMessage, InboxTransaction } from 'sqs-inbox';

export interface Reservation {
  readonly reservationId: string;
  readonly sku: string;
  readonly units: number;
}

export const RESERVE = 'INSERT INTO public.reservations (reservation_id, sku, units) VALUES (:id, :sku, :units)';
export const TAKE_STOCK = 'UPDATE public.stock SET available = available - :units WHERE sku = :sku';

/** Both writes on `tx`, the inbox's transaction: committed with the claim, or rolled back with it. */
export async function reserve(tx: InboxTransaction, message: InboxMessage<Reservation>): Promise<void> {
  const { reservationId, sku, units } = message.body;
  await tx.execute(RESERVE, { id: reservationId, sku, units });
  await tx.execute(TAKE_STOCK, { sku, units });
}

export const handler = inbox<Reservation>({ apply: reserve });
