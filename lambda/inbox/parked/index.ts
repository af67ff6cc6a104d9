/**
 * Parked messages (package export `sqs-inbox/parked`): `onPermanentError: 'park'` stores a record that can
 * never succeed in the inbox's parked-message table and reports it succeeded; `parkedMessages(handler)`
 * lists and replays what a consumer parked.
 *
 * @example
 * import { inbox } from 'sqs-inbox';
 * import { parkedMessages } from 'sqs-inbox/parked';
 *
 * export const handler = inbox({ consumer: 'order-worker', onPermanentError: 'park', apply });
 * for (const message of await parkedMessages(handler).list()) console.log(message.id, message.errorClass);
 * @module
 */
export { parkedMessages } from './parking.js';
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
