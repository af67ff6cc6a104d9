// What SQS takes in one message besides its characters (sqs-text.ts): its size, body and attributes
// together, and the names of its attributes. The producer checks a message against them before it sends;
// `tx.send` and a redrive check the outbox row they write, which would otherwise commit and never go out.

/** SQS's limit for one message and for a whole SendMessageBatch request: 1 MiB. */
export const MAX_SQS_MESSAGE_BYTES = 1_048_576;

/** A message attribute as SQS counts it. */
export interface SqsAttributeValue {
  readonly DataType?: string | undefined;
  readonly StringValue?: string | undefined;
  readonly BinaryValue?: Uint8Array | undefined;
}

/**
 * The size SQS counts: the body plus each attribute's name, data type and value, in bytes.
 *
 * @example
 * sqsMessageBytes('{"a":1}', { trace: { DataType: 'String', StringValue: 'x' } }); // 7 + 5 + 6 + 1 = 19
 */
export function sqsMessageBytes(body: string, attributes: Readonly<Record<string, SqsAttributeValue>>): number {
  let size = Buffer.byteLength(body);
  for (const [name, value] of Object.entries(attributes)) {
    size += Buffer.byteLength(name) + Buffer.byteLength(value.DataType ?? '');
    size += value.BinaryValue ? value.BinaryValue.length : Buffer.byteLength(value.StringValue ?? '');
  }
  return size;
}

/** String attributes as the outbox sends them: each value a `String`. */
export function stringAttributes(attributes: Readonly<Record<string, string>>): Record<string, SqsAttributeValue> {
  return Object.fromEntries(Object.entries(attributes).map(([name, value]) => [name, { DataType: 'String', StringValue: value }]));
}

/**
 * A message attribute name SQS takes: 1 to 256 letters, digits, `_`, `-` and `.`, not beginning with
 * `AWS.` or `Amazon.` (in any case), nor beginning or ending with a period, nor holding two in a row.
 */
export const SQS_ATTRIBUTE_NAME = /^(?!aws\.|amazon\.|\.)(?!.*\.\.)(?!.*\.$)[\w.-]{1,256}$/i;
