/**
 * A character SQS refuses in a message body or attribute value. It takes tab, newline, carriage return and
 * U+0020 to U+10FFFF, but not U+FFFE, U+FFFF nor a surrogate alone (SendMessage in the Amazon SQS API
 * Reference): a message holding another can never be sent, however often the relay tries.
 */
const REFUSED = /[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]/u;

/**
 * What SQS would refuse in `text`, as `U+0000 at character 3`; undefined when it takes it all.
 *
 * @example
 * sqsRefusal('ab\u0000c'); // 'U+0000 at character 2'
 */
export function sqsRefusal(text: string): string | undefined {
  const found = REFUSED.exec(text);
  if (found === null) return undefined;
  return `U+${found[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')} at character ${found.index}`;
}

/** Why SQS refuses it, for an error that names where the character is. */
export const SQS_TEXT_RULE = 'SQS takes tab, newline, carriage return and U+0020 to U+10FFFF, but neither U+FFFE, U+FFFF nor a lone surrogate';
