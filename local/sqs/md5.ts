import { createHash } from 'node:crypto';
import type { MessageAttributeValue } from './types.js';

/** The hex MD5 of a string's UTF-8 bytes: SQS's `MD5OfMessageBody`. */
export function md5Hex(text: string): string {
  return createHash('md5').update(text, 'utf8').digest('hex');
}

/**
 * The MD5 SQS computes over message attributes (and, with the same algorithm, over message system
 * attributes): names sorted; for each, length-prefixed (4-byte big-endian) UTF-8 name and data type,
 * one transport byte (1 = String/Number, 2 = Binary), then the length-prefixed value.
 * Returns undefined for no attributes, as SQS omits the field then.
 */
export function md5OfMessageAttributes(attributes: Readonly<Record<string, MessageAttributeValue>> | undefined): string | undefined {
  const names = Object.keys(attributes ?? {}).sort();
  if (!attributes || names.length === 0) return undefined;
  const hash = createHash('md5');
  for (const name of names) {
    const attribute = attributes[name];
    if (!attribute) continue;
    hash.update(lengthPrefixed(Buffer.from(name, 'utf8')));
    hash.update(lengthPrefixed(Buffer.from(attribute.dataType, 'utf8')));
    if (attribute.binaryValue !== undefined) {
      hash.update(Uint8Array.of(2));
      hash.update(lengthPrefixed(Buffer.from(attribute.binaryValue)));
    } else {
      hash.update(Uint8Array.of(1));
      hash.update(lengthPrefixed(Buffer.from(attribute.stringValue ?? '', 'utf8')));
    }
  }
  return hash.digest('hex');
}

function lengthPrefixed(bytes: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(bytes.length, 0);
  return Buffer.concat([length, bytes]);
}
