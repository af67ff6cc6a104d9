// The pipeline's consumers, tables and statements: what the consumers write and the judge reads.

/** The inbox consumer names of the two stages. */
export const SHIP_CONSUMER = 'pipeline-ship';
export const INVOICE_CONSUMER = 'pipeline-invoice';

/** The two stages' tables, made in each run's fresh database. */
export const PIPELINE_SETUP = [
  'CREATE TABLE public.pipeline_shipment (id bigserial PRIMARY KEY, order_id text NOT NULL)',
  'CREATE TABLE public.pipeline_invoice (id bigserial PRIMARY KEY, order_id text NOT NULL, shipped boolean NOT NULL)',
] as const;

/** The ship stage's effect. */
export const SHIP = 'INSERT INTO public.pipeline_shipment (order_id) VALUES (:orderId)';

/**
 * The invoice stage's effect, noting whether the order was shipped. Read committed: the invoice's
 * transaction sees the shipment only once the ship stage's commit is done.
 */
export const INVOICE = `INSERT INTO public.pipeline_invoice (order_id, shipped)
  VALUES (:orderId, EXISTS (SELECT 1 FROM public.pipeline_shipment WHERE order_id = :orderId))`;

/** Effects queries, one row per order: how many times it was shipped, and invoiced, and when first. */
export const SHIPMENTS = 'SELECT order_id AS key, count(*) AS count, min(id) AS seq FROM public.pipeline_shipment GROUP BY order_id';
export const INVOICES = 'SELECT order_id AS key, count(*) AS count, min(id) AS seq FROM public.pipeline_invoice GROUP BY order_id';

/** Orders invoiced while not shipped: the invoice message announced a shipment that had not committed, or never did. */
export const PHANTOMS = 'SELECT DISTINCT order_id AS key FROM public.pipeline_invoice WHERE NOT shipped';
