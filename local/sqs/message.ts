import { SqsError, invalidParameter, missingParameter } from './errors.js';
import type { MessageAttributeValue } from './types.js';

/** A message as a queue holds it. */
export interface StoredMessage {
  /** The id given at send. */
  messageId: string;
  /** The message body. */
  body: string;
  /** Hex MD5 of the body. */
  md5OfBody: string;
  /** Message attributes as sent. */
  messageAttributes: Record<string, MessageAttributeValue>;
  /** Message system attributes as sent (`AWSTraceHeader`). */
  messageSystemAttributes: Record<string, MessageAttributeValue>;
  /** The sender's account id (the model's `accountId`). */
  senderId: string;
  /** When it was sent, in clock milliseconds. */
  sentTimestamp: number;
  /** When retention counts from: the send, or for a FIFO dead-letter queue the move (AWS resets it). */
  enqueuedAt: number;
  /** Delayed until, or invisible until; `receiveCount` tells which. */
  visibleAt: number;
  /** How many times it was received (ApproximateReceiveCount). */
  receiveCount: number;
  /** When it was first received, in clock milliseconds. */
  firstReceiveTimestamp?: number | undefined;
  /** The latest receipt handle; only it deletes the message. */
  receiptHandle?: string | undefined;
  /** FIFO: its message group. */
  messageGroupId?: string | undefined;
  /** FIFO: the deduplication id, given or derived from the body. */
  messageDeduplicationId?: string | undefined;
  /** FIFO: its place in the queue. */
  sequenceNumber?: string | undefined;
  /** In a dead-letter queue: the ARN of the queue it was moved from. */
  deadLetterQueueSourceArn?: string | undefined;
}

// XML 1.0 characters, as SQS allows them in bodies and attribute values.
// eslint-disable-next-line no-control-regex
const INVALID_CHARACTER = /[^\u0009\u000A\u000D\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u;

const ATTRIBUTE_NAME = /^[A-Za-z0-9_.-]+$/;
const DATA_TYPE = /^(String|Number|Binary)(\.[^\s]{1,250})?$/;

export const MAX_MESSAGE_ATTRIBUTES = 10;

export function validateBody(body: unknown): string {
  if (typeof body !== 'string' || body.length === 0) throw missingParameter('MessageBody');
  const bad = INVALID_CHARACTER.exec(body);
  if (bad) {
    const code = bad[0].codePointAt(0) ?? 0;
    throw new SqsError(
      'InvalidMessageContents',
      `Invalid binary character '#x${code.toString(16).toUpperCase()}' was found in the message body, the set of allowed characters is #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF`,
    );
  }
  return body;
}

export function validateMessageAttributes(attributes: Readonly<Record<string, MessageAttributeValue>> | undefined): Record<string, MessageAttributeValue> {
  const names = Object.keys(attributes ?? {});
  if (!attributes || names.length === 0) return {};
  if (names.length > MAX_MESSAGE_ATTRIBUTES) {
    throw new SqsError('InvalidParameterValue', `Number of message attributes [${names.length}] exceeds the allowed maximum [${MAX_MESSAGE_ATTRIBUTES}].`);
  }
  const result: Record<string, MessageAttributeValue> = {};
  for (const name of names) {
    const attribute = attributes[name];
    // AWS's texts, as Inqnuam/local-aws-sqs test/send-message.test.ts expects them, unless noted.
    if (name === '') throw new SqsError('InvalidParameterValue', 'The request must contain non-empty message (user) attribute names.');
    if (/^(aws|amazon)\./i.test(name)) {
      throw new SqsError(
        'InvalidParameterValue',
        "You can't use message attribute names beginning with 'AWS.' or 'Amazon'. These strings are reserved for internal use.",
      );
    }
    if (Buffer.byteLength(name, 'utf8') > 256) throw new SqsError('InvalidParameterValue', 'Message (user) attribute name must be shorter than 256 bytes.');
    if (!ATTRIBUTE_NAME.test(name) || name.startsWith('.') || name.endsWith('.') || name.includes('..')) {
      // moto/sqs/models.py, validate_attribute_name.
      throw new SqsError(
        'InvalidParameterValue',
        `The message attribute name '${name}' is invalid. Attribute name can contain A-Z, a-z, 0-9, underscore (_), hyphen (-), and period (.) characters.`,
        { advice: 'no leading, trailing or double period either' },
      );
    }
    if (!attribute || typeof attribute.dataType !== 'string' || attribute.dataType === '') {
      throw new SqsError('InvalidParameterValue', `The message (user) attribute '${name}' must contain a non-empty message attribute value.`, {
        advice: 'set DataType to String, Number or Binary, and the matching StringValue or BinaryValue',
      });
    }
    if (Buffer.byteLength(attribute.dataType, 'utf8') > 256)
      throw new SqsError('InvalidParameterValue', 'Message (user) attribute type must be shorter than 256 bytes.');
    if (!DATA_TYPE.test(attribute.dataType)) {
      throw new SqsError(
        'InvalidParameterValue',
        `The type of message (user) attribute '${name}' is invalid. You must use only the following supported type prefixes: Binary, Number, String.`,
      );
    }
    if (attribute.dataType.startsWith('Binary')) {
      if (!attribute.binaryValue || attribute.binaryValue.length === 0) {
        throw new SqsError('InvalidParameterValue', `Message (user) attribute '${name}' must contain a non-empty value of type 'Binary'.`);
      }
      result[name] = { dataType: attribute.dataType, binaryValue: attribute.binaryValue };
      continue;
    }
    const value = attribute.stringValue;
    if (typeof value !== 'string' || value === '') {
      // Recorded: localstack tests/aws/services/sqs/test_sqs.snapshot.json, test_send_message_with_empty_string_attribute.
      throw new SqsError(
        'InvalidParameterValue',
        `Message (user) attribute '${name}' must contain a non-empty value of type '${attribute.dataType.split('.')[0]}'.`,
      );
    }
    if (INVALID_CHARACTER.test(value)) {
      throw new SqsError(
        'InvalidMessageContents',
        `The message attribute '${name}' contains a character outside the allowed set (#x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF).`,
      );
    }
    if (attribute.dataType.startsWith('Number') && !/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(value.trim())) {
      throw new SqsError('InvalidParameterValue', `Can't cast the value of message (user) attribute '${name}' to a number.`);
    }
    result[name] = { dataType: attribute.dataType, stringValue: value };
  }
  return result;
}

export function validateSystemAttributes(attributes: Readonly<Record<string, MessageAttributeValue>> | undefined): Record<string, MessageAttributeValue> {
  const result: Record<string, MessageAttributeValue> = {};
  for (const [name, attribute] of Object.entries(attributes ?? {})) {
    if (name !== 'AWSTraceHeader') {
      // AWS's text, as Inqnuam/local-aws-sqs test/send-message.test.ts expects it.
      throw new SqsError('InvalidParameterValue', `Message system attribute name '${name}' is invalid.`, {
        advice: 'only AWSTraceHeader can be sent as a message system attribute',
      });
    }
    if (attribute.dataType !== 'String' || !attribute.stringValue) {
      throw invalidParameter('MessageSystemAttributes', name, 'AWSTraceHeader must be a non-empty String.');
    }
    result[name] = { dataType: 'String', stringValue: attribute.stringValue };
  }
  return result;
}

/** The size SQS counts against MaximumMessageSize: body plus every attribute's name, type and value. */
export function messageSize(body: string, attributes: Readonly<Record<string, MessageAttributeValue>> | undefined): number {
  let size = Buffer.byteLength(body, 'utf8');
  for (const [name, attribute] of Object.entries(attributes ?? {})) {
    size += Buffer.byteLength(name, 'utf8') + Buffer.byteLength(attribute.dataType, 'utf8');
    size += attribute.binaryValue ? attribute.binaryValue.length : Buffer.byteLength(attribute.stringValue ?? '', 'utf8');
  }
  return size;
}
