import type { SQSRecord } from 'aws-lambda';
import { inbox } from '../lambda/inbox/index.js';
import type { InboxLogger, InboxMetrics } from '../lambda/inbox/index.js';
import { batchHandler, consumeNaively } from './naive.js';
import type { ScenarioConsumer } from '../local/scenario/consumer.js';

/**
 * The demo's two order consumers (`npm start`), as {@link runScenario} drives any consumer: the same
 * orders, table and effects query, applied through the inbox or through the naive check-apply-record.
 */

type OrderBody = { orderId: string };

const SHIP = 'INSERT INTO public.demo_shipment (order_id) VALUES (:orderId)';

const keyOf = (record: SQSRecord) => record.messageAttributes?.['idempotency-key']?.stringValue ?? record.messageId;

const orders: Omit<ScenarioConsumer, 'handler' | 'commitPoint' | 'label'> = {
  setup: [
    'CREATE TABLE public.demo_shipment (id bigserial PRIMARY KEY, order_id text NOT NULL)',
    'CREATE TABLE public.naive_processed (message_key text PRIMARY KEY)',
  ],
  message: (index) => ({ key: `order-${index}`, body: { orderId: `order-${index}` } }),
  effects: 'SELECT order_id AS key, count(*) AS count, min(id) AS seq FROM public.demo_shipment GROUP BY order_id',
};

/** The demo's patterns: the inbox per record, the inbox per batch, and the hand-rolled check-apply-record. */
export const DEMO_PATTERNS = ['inbox', 'inbox-batch', 'naive'] as const;
export type DemoPattern = (typeof DEMO_PATTERNS)[number];

/**
 * The demo's inbox consumers' settings, on SQS and on the streams: short calls, resume retries through
 * an auto-pause, park a bad body, and no logs or metrics in the demo's output.
 */
export function demoInboxSettings<Consumer extends string>(consumer: Consumer) {
  const logger: InboxLogger = { debug() {}, info() {}, warn() {}, error() {} };
  const metrics: InboxMetrics = { addMetric() {}, publishStoredMetrics() {} };
  return {
    consumer,
    onPermanentError: 'park',
    callTimeoutMs: 2000,
    deadlineMarginMs: 100,
    resumeDelaysMs: [100, 200, 300, 400, 500],
    logger,
    metrics,
  } as const;
}

const inboxSettings = demoInboxSettings('demo-orders');

// One INSERT for the batch's newly claimed orders, in batch order, so each customer's orders keep theirs.
const SHIP_BATCH = `INSERT INTO public.demo_shipment (order_id)
  SELECT order_id FROM jsonb_to_recordset(:orders::jsonb) AS o(order_id text, position int) ORDER BY position`;

/**
 * The demo's consumer of `pattern`: `inbox` claims and ships each order in its own transaction;
 * `inbox-batch` claims the batch and ships its new orders in one transaction; `naive` checks, ships, records.
 */
export function demoConsumer(pattern: DemoPattern): ScenarioConsumer {
  if (pattern === 'inbox-batch') {
    return {
      ...orders,
      label: 'inbox-batch',
      commitPoint: 'commit',
      handler: ({ database }) =>
        inbox<OrderBody>({
          ...inboxSettings,
          database,
          applyBatch: async (tx, messages) => {
            await tx.execute(SHIP_BATCH, { orders: messages.map((message, position) => ({ order_id: message.body.orderId, position })) });
          },
        }),
    };
  }
  if (pattern === 'inbox') {
    return {
      ...orders,
      label: 'inbox',
      commitPoint: 'commit',
      handler: ({ database }) =>
        inbox<OrderBody>({
          ...inboxSettings,
          database,
          apply: async (tx, message) => {
            await tx.execute(SHIP, { orderId: message.body.orderId });
          },
        }),
    };
  }
  return {
    ...orders,
    label: 'naive',
    // The effect is its own autocommit statement: durable once it ran, whatever happens next.
    commitPoint: { statement: (sql) => sql === SHIP },
    handler: ({ database }) => {
      // No resume retries: the hand-rolled consumer fails the record and lets SQS redeliver it. On the
      // run's transport, as the inbox consumers.
      const session = database.open({ callTimeoutMs: 10_000, resumeDelaysMs: [] });
      return batchHandler(
        (record) =>
          consumeNaively(
            {
              session,
              processedTable: 'public.naive_processed',
              keyOf,
              effect: async (record) => {
                const body = JSON.parse(record.body) as OrderBody;
                await session.execute(SHIP, { orderId: body.orderId });
              },
            },
            record,
          ),
        { concurrency: 10, mayStart: (context) => (context?.getRemainingTimeInMillis() ?? Infinity) > 100 },
      );
    },
  };
}
