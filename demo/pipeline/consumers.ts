import { AsyncLocalStorage } from 'node:async_hooks';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse } from 'aws-lambda';
import { inbox } from '../../lambda/inbox/index.js';
import type { InboxLogger, InboxMessage, InboxMetrics, InboxOptions, InboxTransaction } from '../../lambda/inbox/index.js';
import type { InboxTransport } from '../../lambda/inbox/transport/transport.js';

import { sqsOutbox } from '../../lambda/inbox/outbox/index.js';
import type { OutboxTransport } from '../../lambda/inbox/outbox/index.js';
import { createProducer } from '../../lambda/inbox/producer/producer.js';
import type { SqsEventHandler } from '../../local/event-source.js';
import { DROPPED_ANSWERS, WorkerDiedError } from './faults.js';
import type { HandOffFaults } from './faults.js';
import { INVOICE, INVOICE_CONSUMER, SHIP, SHIP_CONSUMER } from './tables.js';
import type { PipelineVariant } from './variants.js';

// The pipeline's two consumers: "ship" consumes the orders queue, ships the order and hands an "invoice"
// message on to the invoices queue, in one of three ways; "invoice" consumes that queue and invoices the
// order, noting whether the order was shipped when it did. Imports @aws-sdk/client-sqs: run.ts loads it
// only once the peer is known to be there.

type Order = { orderId: string };

const silent = {
  logger: { debug() {}, info() {}, warn() {}, error() {} } satisfies InboxLogger,
  metrics: { addMetric() {}, publishStoredMetrics() {} } satisfies InboxMetrics,
};

/** Both stages' inbox settings: the demo's short timeouts, poison parked. */
function settings(consumer: string, database: InboxTransport) {
  return {
    ...silent,
    consumer,
    database,
    onPermanentError: 'park',
    callTimeoutMs: 2000,
    deadlineMarginMs: 100,
    resumeDelaysMs: [100, 200, 300, 400, 500],
  } as const satisfies Partial<InboxOptions<Order>>;
}

/** Where and how the ship stage hands its invoice messages on. */
export interface HandOff {
  /** The invoices queue (FIFO). */
  readonly invoicesUrl: string;
  /** The senders' client, without the SDK's own retries: the senders retry, under their stable keys. */
  readonly client: SQSClient;
  readonly faults: HandOffFaults;
  /** Told of each order a sender hands to SQS (lost answers and retries included). */
  readonly onSend: (orderId: string) => void;
  /** Told how many outbox rows a handler's relay sent. */
  readonly onRelayed: (count: number) => void;
}

/** The invoice stage's handler, the same behind every variant: an inbox keyed by the messages' idempotency-key. */
export function invoiceHandler(database: InboxTransport): SqsEventHandler {
  return inbox<Order>({
    ...settings(INVOICE_CONSUMER, database),
    apply: async (tx, message) => {
      await tx.execute(INVOICE, { orderId: message.body.orderId });
    },
  });
}

/** The ship stage's handler of `variant`. Every variant ships through the inbox; they differ in when the invoice message goes out. */
export function shipHandler(variant: PipelineVariant, database: InboxTransport, handOff: HandOff): SqsEventHandler {
  const base = settings(SHIP_CONSUMER, database);
  const ship = (tx: InboxTransaction, message: InboxMessage<Order>) => tx.execute(SHIP, { orderId: message.body.orderId });
  if (variant === 'outbox') {
    // tx.send writes the message in the claim's transaction; the handler relays it after the commit, the sweeper if it could not.
    return inbox<Order>({
      ...base,
      outbox: { transport: outboxTransport(handOff, handOff.onRelayed) },
      apply: async (tx, message) => {
        await ship(tx, message);
        tx.send({ to: handOff.invoicesUrl, body: { orderId: message.body.orderId }, groupId: message.groupId });
      },
    });
  }
  const send = naiveSender(handOff);
  if (variant === 'send-in-handler') {
    return inbox<Order>({
      ...base,
      apply: async (tx, message) => {
        // Out before the effect is durable: a rollback after this leaves a message about nothing.
        await send([message]);
        await ship(tx, message);
      },
    });
  }
  // send-after-commit: the inbox commits each record; the handler then sends for the records it committed.
  const committed = new AsyncLocalStorage<Map<string, InboxMessage<Order>>>();
  const handler = inbox<Order>({
    ...base,
    apply: async (tx, message) => {
      await ship(tx, message);
      committed.getStore()?.set(message.id ?? message.key, message);
    },
  });
  return async (event, context) => {
    const applied = new Map<string, InboxMessage<Order>>();
    const response: SQSBatchResponse = await committed.run(applied, () => handler(event, context));
    // A record reported succeeded whose effect ran in this invocation committed; an ambiguous commit is
    // reported failed, its redelivery is a duplicate, and its message is never sent.
    const failed = new Set(response.batchItemFailures.map((failure) => failure.itemIdentifier));
    try {
      await send([...applied].filter(([id]) => !failed.has(id)).map(([, message]) => message));
    } catch (error) {
      // The worker died between the commits and the send: the event source deletes nothing (beforeDelete).
      if (error instanceof WorkerDiedError) return response;
      // As an uncaught send in a hand-written handler: the batch comes back, its records are duplicates,
      // nothing is sent again; the messages are lost unless SQS took them and only the answers were lost.
      throw error;
    }
    return response;
  };
}

/**
 * The outbox's SQS transport, for the handler's relay and for the sweeper, with the hand-off faults: when
 * the worker dies at its relay, nothing is sent and the rows stay for the sweeper. `onSent` is told how
 * many rows went out.
 */
export function outboxTransport(handOff: HandOff, onSent?: (sent: number) => void): OutboxTransport {
  const { transport } = sqsOutbox({ client: handOff.client, maxAttempts: DROPPED_ANSWERS });
  return {
    async send(rows) {
      try {
        const orders = rows.map((row) => (JSON.parse(row.body) as Order).orderId);
        const results = await handOff.faults.send(orders, () => {
          for (const order of orders) handOff.onSend(order);
          return transport.send(rows);
        });
        onSent?.(results.filter((result) => result.error === undefined).length);
        return results;
      } catch (error) {
        // A dead worker would not even mark the rows; the relay's mark of a failed attempt changes nothing the sweeper does.
        if (error instanceof WorkerDiedError) return rows.map((row) => ({ id: row.id, error: error.message }));
        throw error;
      }
    },
  };
}

/** How a consumer without an outbox sends: the producer, with a stable key per order (the best it can do without one). */
function naiveSender(handOff: HandOff): (messages: readonly InboxMessage<Order>[]) => Promise<void> {
  const producer = createProducer({ client: handOff.client, queueUrl: handOff.invoicesUrl, maxAttempts: DROPPED_ANSWERS });
  return async (messages) => {
    if (messages.length === 0) return;
    const orders = messages.map((message) => message.body.orderId);
    await handOff.faults.send(orders, () => {
      for (const order of orders) handOff.onSend(order);
      return producer.send(messages.map((message) => ({ key: `invoice-${message.key}`, body: { orderId: message.body.orderId }, groupId: message.groupId })));
    });
  };
}
