/**
 * The local SQS (package export `sqs-inbox/local/sqs`): an in-process queue model on an injectable clock
 * (visibility timeouts, receive counts, FIFO group locks, deduplication, redrive), its faults, and an AWS
 * JSON 1.0 endpoint for `@aws-sdk/client-sqs`.
 */
// First: before any module below makes an SDK client.
import '../quiet-sdk.js';

export { ManualClock } from './clock.js';
export type { Clock } from './clock.js';
export { SqsError } from './errors.js';
export type { SqsErrorName } from './errors.js';
export { SqsFaults } from './faults.js';
export type { StoredMessage } from './message.js';
export { SqsModel } from './model.js';
export type { QueueInfo } from './model.js';
export { startSqs } from './server.js';
export type { SqsServer, StartSqsOptions } from './server.js';
export type { BatchResult, MessageAttributeValue, ReceivedMessage, SendMessageInput, SendMessageResult } from './types.js';
