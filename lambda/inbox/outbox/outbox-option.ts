import { OutboxWriter } from './outbox-writer.js';
import { checkDestinations, environmentDestinations } from './outbox-destinations.js';
import { OUTBOX_RUNTIME } from './outbox-runtime.js';
import type { OutboxRuntime } from './outbox-runtime.js';
import { relayRows } from './relay.js';
import type { OutboxOptions } from './relay.js';

const RUNTIME: OutboxRuntime = {
  writer: (config, only) => new OutboxWriter(config, only),
  relay: relayRows,
  checkDestinations,
  environmentDestinations,
};

/**
 * The `outbox` option of a consumer over your own transport (for SQS, {@link sqsOutbox} makes it): the
 * transport and destinations, plus the outbox's code, which a consumer without an outbox leaves out of its
 * bundle.
 *
 * @example
 * export const handler = inbox({
 *   outbox: outbox({ transport: { send: async (rows) => rows.map((row) => ({ id: row.id })) } }),
 *   apply: async (tx, message) => tx.send({ to: 'https://sqs.eu-west-1.amazonaws.com/123456789012/invoices', body: message.body }),
 * });
 */
export function outbox(options: OutboxOptions): OutboxOptions {
  return { ...options, [OUTBOX_RUNTIME]: RUNTIME } as OutboxOptions;
}
