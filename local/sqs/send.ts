import { createHash, randomUUID } from 'node:crypto';
import { SqsError, invalidParameter, missingParameter } from './errors.js';
import { md5Hex, md5OfMessageAttributes } from './md5.js';
import { messageSize, validateBody, validateMessageAttributes, validateSystemAttributes } from './message.js';
import type { Queue } from './queue.js';
import { MAX_MESSAGE_SIZE } from './queue-attributes.js';
import type { SendBatchEntry, SendMessageInput, SendMessageResult } from './types.js';
import { FIFO_ID_PATTERN } from '../../lambda/inbox/contract.js';

const DEDUP_WINDOW_MS = 5 * 60_000;

/** The characters SQS allows in MessageGroupId, MessageDeduplicationId and ReceiveRequestAttemptId. */
export function isFifoId(value: string): boolean {
  return FIFO_ID_PATTERN.test(value);
}

/** How long a deduplication id (and a ReceiveRequestAttemptId) is remembered. */
export const DEDUP_WINDOW = DEDUP_WINDOW_MS;

// Recorded against SQS: localstack tests/aws/services/sqs/test_sqs.snapshot.json,
// test_send_batch_missing_deduplication_id_for_fifo_queue and test_posting_to_fifo_requires_deduplicationid_group_id.
const NO_DEDUP_ID = 'The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly';

/**
 * SendMessage on one queue: SQS's validation, FIFO deduplication and MD5s; enqueues unless deduplicated.
 * `now` is the model clock; `senderId` the account that sends.
 */
export function sendToQueue(queue: Queue, input: Omit<SendMessageInput, 'queue'>, now: number, senderId: string): SendMessageResult {
  const body = validateBody(input.body);
  queue.expire(now);
  if (input.delaySeconds !== undefined) {
    if (queue.fifo && input.delaySeconds !== 0) {
      // Recorded: localstack test_sqs.snapshot.json, test_fifo_queue_send_message_with_delay_seconds_fails.
      throw invalidParameter(
        'DelaySeconds',
        input.delaySeconds,
        'The request include parameter that is not valid for this queue type.',
        'a FIFO queue takes its delay from the queue attribute DelaySeconds only',
      );
    }
    if (!Number.isInteger(input.delaySeconds) || input.delaySeconds < 0 || input.delaySeconds > 900) {
      // AWS's text as Inqnuam/local-aws-sqs test/send-message.test.ts expects it.
      throw invalidParameter('DelaySeconds', input.delaySeconds, 'DelaySeconds must be >= 0 and <= 900.');
    }
  }
  const messageAttributes = validateMessageAttributes(input.messageAttributes);
  const messageSystemAttributes = validateSystemAttributes(input.messageSystemAttributes);
  const size = messageSize(body, messageAttributes);
  if (size > queue.config.maximumMessageSize) {
    // Recorded: localstack test_sqs.snapshot.json, test_send_oversized_message.
    throw new SqsError(
      'InvalidParameterValue',
      `One or more parameters are invalid. Reason: Message must be shorter than ${queue.config.maximumMessageSize} bytes.`,
      {
        advice: `this message is ${size} bytes, body plus message attributes`,
      },
    );
  }
  const md5s = {
    md5OfMessageBody: md5Hex(body),
    ...optional('md5OfMessageAttributes', md5OfMessageAttributes(messageAttributes)),
    ...optional('md5OfMessageSystemAttributes', md5OfMessageAttributes(messageSystemAttributes)),
  };
  const stored = {
    body,
    md5OfBody: md5s.md5OfMessageBody,
    messageAttributes,
    messageSystemAttributes,
    senderId,
    sentTimestamp: now,
    enqueuedAt: now,
    receiveCount: 0,
  };
  const groupId = input.messageGroupId;
  if (groupId !== undefined && !FIFO_ID_PATTERN.test(groupId)) {
    throw invalidParameter('MessageGroupId', groupId, 'use 1 to 128 characters: alphanumeric or punctuation !"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~.');
  }
  if (!queue.fifo) {
    if (input.messageDeduplicationId !== undefined) {
      throw invalidParameter('MessageDeduplicationId', input.messageDeduplicationId, 'The request include parameter that is not valid for this queue type.');
    }
    const messageId = randomUUID();
    const delay = input.delaySeconds ?? queue.config.delaySeconds;
    enqueue(queue, { ...stored, messageId, visibleAt: now + delay * 1000, ...optional('messageGroupId', groupId) });
    return { messageId, ...md5s, deduplicated: false };
  }
  if (groupId === undefined) throw missingParameter('MessageGroupId');
  let dedupId = input.messageDeduplicationId;
  if (dedupId === undefined) {
    if (!queue.config.contentBasedDeduplication) throw new SqsError('InvalidParameterValue', NO_DEDUP_ID);
    dedupId = createHash('sha256').update(body, 'utf8').digest('hex');
  } else if (!FIFO_ID_PATTERN.test(dedupId)) {
    throw invalidParameter('MessageDeduplicationId', dedupId, 'use 1 to 128 characters: alphanumeric or punctuation.');
  }
  const key = queue.config.deduplicationScope === 'messageGroup' ? `${groupId}\u0000${dedupId}` : dedupId;
  const seen = queue.dedup.get(key);
  if (seen) {
    // AWS accepts a duplicate and answers with the first message's id, but does not deliver it.
    return { messageId: seen.messageId, ...optional('sequenceNumber', seen.sequenceNumber), ...md5s, deduplicated: true };
  }
  const messageId = randomUUID();
  const sequenceNumber = queue.nextSequenceNumber();
  queue.dedup.set(key, { messageId, sequenceNumber, expiresAt: now + DEDUP_WINDOW_MS });
  enqueue(queue, {
    ...stored,
    messageId,
    visibleAt: now + queue.config.delaySeconds * 1000,
    messageGroupId: groupId,
    messageDeduplicationId: dedupId,
    sequenceNumber,
  });
  return { messageId, sequenceNumber, ...md5s, deduplicated: false };
}

/**
 * The checks of SendMessageBatch that fail the whole request: the total size and, on a FIFO queue, an
 * entry without its MessageGroupId or (without content-based deduplication) its MessageDeduplicationId.
 * On AWS such a batch sends nothing (localstack test_sqs.snapshot.json,
 * test_send_batch_missing_message_group_id_for_fifo_queue: InvalidParameterValue "The request must
 * contain the parameter MessageGroupId.", and test_send_batch_missing_deduplication_id_for_fifo_queue).
 */
export function checkSendBatch(queue: Queue, entries: readonly SendBatchEntry[]): void {
  let total = 0;
  for (const entry of entries) total += messageSize(typeof entry.body === 'string' ? entry.body : '', entry.messageAttributes);
  if (total > MAX_MESSAGE_SIZE) {
    // Recorded: localstack test_sqs.snapshot.json, test_send_message_batch_with_oversized_contents.
    throw new SqsError('BatchRequestTooLong', `Batch requests cannot be longer than ${MAX_MESSAGE_SIZE} bytes. You have sent ${total} bytes.`);
  }
  if (!queue.fifo) return;
  if (entries.some((e) => e.messageGroupId === undefined)) {
    throw new SqsError('InvalidParameterValue', 'The request must contain the parameter MessageGroupId.', {
      advice: 'every entry of a FIFO batch needs a MessageGroupId; AWS sends none of the batch otherwise',
    });
  }
  if (!queue.config.contentBasedDeduplication && entries.some((e) => e.messageDeduplicationId === undefined)) {
    throw new SqsError('InvalidParameterValue', NO_DEDUP_ID, {
      advice:
        'every entry of a FIFO batch needs a MessageDeduplicationId unless the queue has ContentBasedDeduplication; AWS sends none of the batch otherwise',
    });
  }
}

function enqueue(queue: Queue, message: Parameters<Queue['messages']['set']>[1]): void {
  queue.messages.set(message.messageId, message);
  queue.notify();
}

/** `{ [key]: value }`, or `{}` when the value is undefined (exactOptionalPropertyTypes-friendly). */
export function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}
