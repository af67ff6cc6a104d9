// A record's text as bytes and back, losing no code unit: what the parked table keeps of an SQS body.

/** A UTF-16 code unit of a surrogate pair standing alone, which UTF-8 cannot hold. */
export const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * The UTF-8 bytes of `text`; a lone surrogate, which UTF-8 cannot hold (Node writes U+FFFD instead), as the
 * three bytes UTF-8's rule gives its code point (WTF-8), so that two bodies differing only there never
 * hash or park alike, and {@link bytesText} gives back the very same string. Well-formed text is plain UTF-8.
 */
export function textBytes(text: string): Buffer {
  const parts: Buffer[] = [];
  let start = 0;
  for (const { index } of text.matchAll(LONE_SURROGATE)) {
    const unit = text.charCodeAt(index);
    parts.push(Buffer.from(text.slice(start, index)), Buffer.from([0xe0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3f), 0x80 | (unit & 0x3f)]));
    start = index + 1;
  }
  parts.push(Buffer.from(text.slice(start)));
  return Buffer.concat(parts);
}

/**
 * The text of `bytes` read as UTF-8, with the three-byte form of a lone surrogate ({@link textBytes}) read
 * back as that surrogate; bytes that are not UTF-8 read as U+FFFD, as Node reads them.
 */
export function bytesText(bytes: Uint8Array): string {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let text = '';
  let start = 0;
  // 0xED is never a continuation byte: each one found starts a sequence, and 0xA0 to 0xBF after it make a surrogate.
  for (let at = buffer.indexOf(0xed); at !== -1; at = buffer.indexOf(0xed, at + 1)) {
    const second = buffer[at + 1] ?? 0;
    const third = buffer[at + 2] ?? 0;
    if (second < 0xa0 || second > 0xbf || (third & 0xc0) !== 0x80) continue;
    text += buffer.toString('utf8', start, at) + String.fromCharCode(0xd000 | ((second & 0x3f) << 6) | (third & 0x3f));
    start = at + 3;
  }
  return text + buffer.toString('utf8', start);
}
