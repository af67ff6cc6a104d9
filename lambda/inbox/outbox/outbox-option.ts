import { OutboxWriter } from './outbox-writer.js';
import { checkDestinations, environmentDestinations } from './outbox-destinations.js';
import { OUTBOX_RUNTIME } from './outbox-runtime.js';
import type { OutboxRuntime } from './outbox-runtime.js';
import { errorFields } from '../telemetry/telemetry.js';
import { relayRows } from './relay.js';
import type { OutboxOptions } from './relay.js';

const RUNTIME: OutboxRuntime = {
  writer: (config, only) => new OutboxWriter(config, only),
  /**
   * Sends what an invocation's committed transactions wrote to the outbox, when time is left. Never throws:
   * the records committed, so they succeed whatever happens here; what is not sent stays for the sweeper.
   */
  async relay(session, tables, transport, ids, timeLeft, logger) {
    if (!timeLeft) return { sent: 0, deferred: ids.length };
    try {
      const report = await relayRows(session, tables, transport, ids);
      if (report.deferred > 0) logger.warn('outbox messages left for the sweeper', { deferred: report.deferred });
      return report;
    } catch (error) {
      logger.warn('the outbox relay failed; the sweeper sends its messages', { error: errorFields(error) });
      return { sent: 0, deferred: ids.length };
    }
  },
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
