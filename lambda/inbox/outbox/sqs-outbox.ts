/**
 * The outbox's SQS transport (package export `sqs-inbox/outbox`): what `tx.send` writes is sent with
 * SendMessageBatch after the commit, under its stable idempotency key. Needs `@aws-sdk/client-sqs`.
 *
 * @example
 * import { sqsOutbox } from 'sqs-inbox/outbox';
 * @module
 */

import type { SQSClient } from '@aws-sdk/client-sqs';
import { InvalidMessagesError, SendFailedError, createProducer } from '../producer/producer.js';
import type { Producer } from '../producer/producer.js';
import type { OutboxEnvelope } from './outbox-message.js';
import type { OutboxOptions, OutboxTransport, SendResult } from './relay.js';

/**
 * The outbox over SQS: each destination's rows go out with SendMessageBatch in id order, the stable key as
 * the `idempotency-key` attribute and, on FIFO queues, as the MessageDeduplicationId; at most one message
 * of a FIFO group per request, and none after one of its group failed, so a group is never reordered.
 *
 * @example
 * export const handler = inbox({
 *   outbox: sqsOutbox({ client: new SQSClient({}), destinations: { invoices: process.env.INVOICES_URL! } }),
 *   apply: async (tx, message) => {
 *     await tx.execute('UPDATE orders SET status = :s WHERE order_id = :id', { s: 'shipped', id: message.body.orderId });
 *     tx.send({ to: 'invoices', body: { orderId: message.body.orderId }, groupId: message.body.customerId });
 *   },
 * });
 */
export function sqsOutbox(options: {
  /** The SQS client to send with. */
  readonly client: SQSClient;
  /** Names for queue URLs, for `tx.send({ to: 'invoices', ... })`. @default see {@link OutboxOptions.destinations} */
  readonly destinations?: Readonly<Record<string, string>> | undefined;
  /** Sends per entry, including the first, for entries SQS failed on its side. @default 3 */
  readonly maxAttempts?: number | undefined;
}): OutboxOptions {
  const producers = new Map<string, Producer>();
  const producerFor = (queueUrl: string) => {
    let producer = producers.get(queueUrl);
    if (!producer) {
      producer = createProducer({ client: options.client, queueUrl, maxAttempts: options.maxAttempts ?? 3, strictGroupOrder: true });
      producers.set(queueUrl, producer);
    }
    return producer;
  };
  const transport: OutboxTransport = {
    async send(rows) {
      const byDestination = new Map<string, OutboxEnvelope[]>();
      for (const row of rows) byDestination.set(row.destination, [...(byDestination.get(row.destination) ?? []), row]);
      const results = await Promise.all([...byDestination].map(([queueUrl, list]) => sendTo(producerFor(queueUrl), list)));
      return results.flat();
    },
  };
  return { transport, ...(options.destinations ? { destinations: options.destinations } : {}) };
}

async function sendTo(producer: Producer, rows: readonly OutboxEnvelope[]): Promise<SendResult[]> {
  const messages = rows.map((row) => ({
    body: row.body,
    key: row.key,
    groupId: row.groupId,
    attributes: { ...row.attributes },
    ...(row.delaySeconds !== undefined ? { delaySeconds: row.delaySeconds } : {}),
  }));
  try {
    await producer.send(messages);
    return rows.map((row) => ({ id: row.id }));
  } catch (error) {
    if (error instanceof InvalidMessagesError) {
      // Nothing was sent. The invalid rows fail for good; the others go out without them, or one bad row
      // would hold back its whole destination at every sweep.
      const invalid = new Map(error.problems.map((problem) => [problem.index, `invalid ${problem.field}: ${problem.message}`]));
      const valid = rows.filter((_, index) => !invalid.has(index));
      const results = valid.length === rows.length ? [] : await sendTo(producer, valid);
      return rows.map((row, index) => (invalid.has(index) ? { id: row.id, error: invalid.get(index)! } : results.find((result) => result.id === row.id)!));
    }
    if (!(error instanceof SendFailedError)) {
      const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      return rows.map((row) => ({ id: row.id, error: text }));
    }
    const failed = new Map(error.failures.map((failure) => [failure.index, `${failure.code}: ${failure.message}`]));
    return rows.map((row, index) => (failed.has(index) ? { id: row.id, error: failed.get(index)! } : { id: row.id }));
  }
}
