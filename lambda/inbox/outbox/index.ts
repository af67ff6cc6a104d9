/**
 * The outbox (package export `sqs-inbox/outbox`): `tx.send` inside `apply` writes the next message in the
 * claim's transaction; the handler sends it after the commit, and the sweeper sends what a crashed worker
 * left behind. This entry holds the SQS transport and the sweeper, which need `@aws-sdk/client-sqs`.
 *
 * @example
 * import { sqsOutbox, sweepOutbox } from 'sqs-inbox/outbox';
 * // your own transport: inbox({ outbox: { transport: { send: async (rows) => ... } }, ... })
 * @module
 */
export { sqsOutbox } from './sqs-outbox.js';
export { InboxError } from '../errors.js';
export { OutboxSweepError, sweepOutbox } from './sweep.js';
export type { SweepOptions, SweepReport } from './sweep.js';
export { outboxKey } from './outbox-message.js';
export type { OutboxOptions, OutboxTransport } from './relay.js';
export type { InboxTransport } from '../transport/transport.js';
