/**
 * Parking (package export `sqs-inbox/parked`): `onPermanentError: park` stores a record that can never
 * succeed in the inbox's parked-message table and reports it succeeded; `parkedMessages(handler)` lists
 * and replays what a consumer parked. Its own entry, so that a consumer that does not park bundles none
 * of it.
 *
 * @example
 * import { inbox } from 'sqs-inbox';
 * import { park, parkedMessages } from 'sqs-inbox/parked';
 *
 * export const handler = inbox({ consumer: 'order-worker', onPermanentError: park, apply });
 * for (const message of await parkedMessages(handler).list()) console.log(message.id, message.errorClass);
 * @module
 */
export { park, parkedMessages } from './parking.js';
export type { Park } from './parking-runtime.js';
export type {
  ParkedMessage,
  ParkedMessages,
  ParkedMessageReader,
  ParkedStatus,
  ParkedRefusal,
  ReplayResult,
  ReplayOptions,
  ListParkedOptions,
} from './store.js';
