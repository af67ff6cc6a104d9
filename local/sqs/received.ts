import { md5OfMessageAttributes } from './md5.js';
import type { StoredMessage } from './message.js';
import { optional } from './send.js';
import type { MessageAttributeValue, ReceivedMessage } from './types.js';

const SYSTEM_ATTRIBUTES = [
  'ApproximateReceiveCount',
  'ApproximateFirstReceiveTimestamp',
  'SentTimestamp',
  'SenderId',
  'MessageDeduplicationId',
  'MessageGroupId',
  'SequenceNumber',
  'AWSTraceHeader',
  'DeadLetterQueueSourceArn',
] as const;

/**
 * What ReceiveMessage hands out for one stored message: a copy, with the system attributes asked for
 * (`All` or names) and the message attributes asked for (`All`, `.*`, a name, or a prefix `foo.*`),
 * and the MD5 of the attributes returned.
 */
export function receivedMessage(message: StoredMessage, attributeNames: readonly string[], messageAttributeNames: readonly string[]): ReceivedMessage {
  const all = attributeNames.includes('All');
  const attributes: Record<string, string> = {};
  const values: Record<(typeof SYSTEM_ATTRIBUTES)[number], string | undefined> = {
    ApproximateReceiveCount: String(message.receiveCount),
    ApproximateFirstReceiveTimestamp: String(message.firstReceiveTimestamp ?? ''),
    SentTimestamp: String(message.sentTimestamp),
    SenderId: message.senderId,
    MessageDeduplicationId: message.messageDeduplicationId,
    MessageGroupId: message.messageGroupId,
    SequenceNumber: message.sequenceNumber,
    AWSTraceHeader: message.messageSystemAttributes.AWSTraceHeader?.stringValue,
    DeadLetterQueueSourceArn: message.deadLetterQueueSourceArn,
  };
  for (const name of SYSTEM_ATTRIBUTES) {
    const value = values[name];
    if (value !== undefined && (all || attributeNames.includes(name))) attributes[name] = value;
  }
  const messageAttributes: Record<string, MessageAttributeValue> = {};
  for (const [name, value] of Object.entries(message.messageAttributes)) {
    if (wantsAttribute(name, messageAttributeNames)) messageAttributes[name] = { ...value };
  }
  return {
    messageId: message.messageId,
    receiptHandle: message.receiptHandle ?? '',
    body: message.body,
    md5OfBody: message.md5OfBody,
    attributes,
    messageAttributes,
    ...optional('md5OfMessageAttributes', md5OfMessageAttributes(messageAttributes)),
  };
}

function wantsAttribute(name: string, patterns: readonly string[]): boolean {
  return patterns.some((p) => p === 'All' || p === '.*' || p === name || (p.endsWith('.*') && name.startsWith(p.slice(0, -1))));
}
