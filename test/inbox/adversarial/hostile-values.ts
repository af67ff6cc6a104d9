import fc from 'fast-check';

// The hostile values the adversarial suite puts in records: texts with NUL, control characters, lone
// surrogates and escapes; JSON of odd shapes and depths; bytes that are not UTF-8; keys at their limits.
// Each source takes what its service can carry (SQS only its character set; a stream any bytes).

/**
 * In every generated body (or image): the suite asserts that it never reaches a log line, so that a body's
 * bytes in a log are found whatever path put them there.
 */
export const MARKER = 'Qz7bodyMarker';

/** The characters SQS accepts in a body or a String attribute: #x9 | #xA | #xD | #x20-#xD7FF | #xE000-#xFFFD | #x10000-#x10FFFF. */
export const isSqsText = (text: string): boolean => /^[\t\n\r\u0020-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]*$/u.test(text);

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** Whether the text is well-formed UTF-16 (no lone surrogate): what UTF-8 can encode. */
export const isWellFormed = (text: string): boolean => text.match(LONE_SURROGATE) === null;

/** The text with each lone surrogate replaced by U+FFFD, as a UTF-8 encoder writes it. */
export const wellFormed = (text: string): string => text.replace(LONE_SURROGATE, '\ufffd');

/** Characters chosen to break things: NUL, controls, lone surrogates, BOM, line separators, quotes, escapes, terminal sequences. */
const NASTY = [
  '\u0000',
  '\u0001',
  '\u001b[2J',
  '\u007f',
  '\ud800',
  '\udfff',
  '\ud83d\ude00',
  '\ufeff',
  '\ufffd',
  '\uffff',
  '\u2028',
  '\\',
  '"',
  "'",
  '\\u0000',
  '%s',
  '$' + '{x}',
  '\u00e9',
];

/** One UTF-16 unit of any value, or a character that breaks things. */
const hostileUnit = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...NASTY) },
  { weight: 4, arbitrary: fc.string({ unit: 'grapheme', maxLength: 1 }) },
  { weight: 2, arbitrary: fc.integer({ min: 0, max: 0xffff }).map((unit) => String.fromCharCode(unit)) },
);

/** A short text of any UTF-16 units: what a JavaScript string can hold, well-formed or not. */
export const hostileText = (maxLength = 12) => fc.array(hostileUnit, { maxLength }).map((units) => units.join(''));

/** A short text SQS could carry. */
export const sqsText = (maxLength = 12) => hostileText(maxLength).map((text) => [...text].filter((char) => isSqsText(char)).join(''));

/** A JSON value whose strings hold hostile text (JSON.stringify escapes NUL, controls and lone surrogates). */
export const hostileJson = (text: fc.Arbitrary<string>): fc.Arbitrary<unknown> =>
  fc.letrec<{ value: unknown }>((tie) => ({
    value: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      text,
      fc.constantFrom(null, true, false, 0, -0, 1e308, 2 ** 53 + 1, 0.1),
      fc.array(tie('value'), { maxLength: 3 }),
      fc.dictionary(text, tie('value'), { maxKeys: 3 }),
    ),
  })).value;

/** Bytes that are not UTF-8: a lone continuation byte, a CESU-8 surrogate, an overlong NUL, a truncated sequence, 0xFF. */
export const INVALID_UTF8 = [[0x80], [0xed, 0xa0, 0x80], [0xc0, 0x80], [0xe2, 0x82], [0xff], [0xf4, 0x90, 0x80, 0x80]];

/** A payload that is not valid UTF-8: ASCII with the marker, and invalid sequences between. */
export const invalidUtf8 = fc.tuple(fc.constantFrom(...INVALID_UTF8), fc.boolean(), fc.boolean()).map(([bad, asJson, twice]) => {
  const text = asJson ? `{"m":"${MARKER}","v":"` : `${MARKER} `;
  const tail = asJson ? '"}' : '';
  return [...Buffer.from(text, 'utf8'), ...bad, ...(twice ? [0x41, ...bad] : []), ...Buffer.from(tail, 'utf8')];
});

/**
 * How a producer's key may look: an ordinary one, one of non-ASCII text, and the ones that break keys
 * (a control character, more than 512 bytes, a lone surrogate, empty, a JSON number where a body field holds it).
 */
export type KeyVariant = 'plain' | 'unicode' | 'control' | 'long' | 'surrogate' | 'empty' | 'number';

export const keyVariant: fc.Arbitrary<KeyVariant> = fc.oneof(
  { weight: 8, arbitrary: fc.constant<KeyVariant>('plain') },
  { weight: 1, arbitrary: fc.constantFrom<KeyVariant>('unicode', 'control', 'long', 'surrogate', 'empty', 'number') },
);

/** The key of `variant` for a message: distinct per `unique` text (and `serial`, the number a `number` key is). */
export function producerKey(variant: KeyVariant, unique: string, serial: number): string | number {
  switch (variant) {
    case 'plain':
      return `key-${unique}`;
    case 'unicode':
      return `clé-${unique}-日本-😀`;
    case 'control':
      return `key-${unique}\n`;
    case 'long':
      return `key-${unique}-${'é'.repeat(260)}`;
    case 'surrogate':
      return `key-${unique}-\ud800`;
    case 'empty':
      return '';
    case 'number':
      return 100_000 + serial;
  }
}
