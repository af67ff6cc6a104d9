import { randomUUID } from 'node:crypto';
import type { StoredMessage } from './message.js';
import type { Queue } from './queue.js';

/**
 * A dead-lettered message as a message move task (the console's "Start DLQ redrive") puts it on its
 * destination. The SQS developer guide, "Configure a dead-letter queue redrive": "All redriven messages are
 * treated as new messages and are assigned a new messageID and enqueueTime"; on a FIFO queue it also gets a new
 * deduplication id. Body, message attributes and group stay. Nothing of the old identity is carried: that is
 * what makes the console's redrive apply a committed effect again for an inbox keyed on the messageId.
 */
export function movedMessage(message: StoredMessage, destination: Queue, now: number): StoredMessage {
  const messageId = randomUUID();
  const moved: StoredMessage = {
    ...message,
    messageId,
    sentTimestamp: now,
    enqueuedAt: now,
    visibleAt: now,
    receiveCount: 0,
  };
  delete moved.receiptHandle;
  delete moved.firstReceiveTimestamp;
  delete moved.deadLetterQueueSourceArn;
  if (!destination.fifo) return moved;
  return { ...moved, messageDeduplicationId: messageId, sequenceNumber: destination.nextSequenceNumber() };
}
