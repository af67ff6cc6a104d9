import fc from 'fast-check';

/**
 * What a producer can put in a record to act on an operator's terminal: OSC (a window title, ended by BEL
 * or ST), CSI (clear the screen, move the cursor, colours), a CR that rewrites the line, C1 controls that
 * are a CSI or an OSC on their own, bidi overrides and isolates that reorder what is read, invisible
 * characters, and text that looks like an escape already.
 */
export const HOSTILE_SEQUENCES = [
  '\x1b]0;owned\x07',
  '\x1b]2;title\x1b\\',
  '\x1b]8;;https://example.com\x1b\\link\x1b]8;;\x1b\\',
  '\x1b[2J\x1b[H',
  '\x1b[1A\x1b[2K',
  '\x1b[31m',
  '\x1bc',
  '\r',
  '\rstatus        discarded',
  '\r\n',
  '\b\b\b',
  '\x7f',
  '\u009b2J',
  '\u009d0;owned\u009c',
  '\u0085',
  '\u202e',
  '\u202d',
  '\u2066',
  '\u2067',
  '\u2068',
  '\u2069',
  '\u200e',
  '\u200f',
  '\u061c',
  '\u200b',
  '\u2028',
  '\u2029',
  '\ufeff',
  '\u{e0041}',
  '\ud800',
  '\udfff',
  '\\x1b',
  '\\u202e',
  '\\',
  '\x00',
];

/** One piece of hostile text: a sequence above, a C0 or C1 or ASCII character, a format character, a lone surrogate, a tag, or ordinary text. */
const hostileUnit = fc.oneof(
  fc.constantFrom(...HOSTILE_SEQUENCES),
  fc.integer({ min: 0, max: 0xa0 }).map((code) => String.fromCharCode(code)),
  fc.integer({ min: 0x2000, max: 0x206f }).map((code) => String.fromCharCode(code)),
  fc.integer({ min: 0xd800, max: 0xdfff }).map((code) => String.fromCharCode(code)),
  fc.integer({ min: 0xe0000, max: 0xe007f }).map((code) => String.fromCodePoint(code)),
  fc.string({ unit: 'grapheme', maxLength: 4 }),
);

/** Text a hostile producer could send, of up to `maxLength` pieces. */
export function hostileText(options: { minLength?: number; maxLength?: number } = {}): fc.Arbitrary<string> {
  return fc.string({ unit: hostileUnit, minLength: options.minLength ?? 0, maxLength: options.maxLength ?? 20 });
}

/**
 * Hostile text the inbox can store today: without U+0000, which a text column refuses (22021), and
 * without lone surrogates, which a jsonb column refuses as JSON escapes (22P02); what stores a record must
 * make those storable before they reach a column, which is another concern than printing them.
 */
export function storableHostileText(options: { minLength?: number; maxLength?: number } = {}): fc.Arbitrary<string> {
  return hostileText(options).map((text) => text.replaceAll('\x00', '').replace(/\p{Cs}/gu, ''));
}

/**
 * The characters of `printed` a terminal could act on or hide: C0 but the line break (which `lineBreaks`
 * allows, as a layout's own), DEL, C1, the bidi and format characters (Cf: U+202A-202E, U+2066-2069,
 * U+200E/F, U+061C, zero-width ones, U+FEFF, tags), U+2028/2029 and lone surrogates. Empty for output
 * that is safe to print.
 */
export function rawControls(printed: string, options: { lineBreaks?: boolean } = {}): string[] {
  const found = printed.match(/[\u0000-\u001f\u007f-\u009f\p{Cf}\u2028\u2029\p{Cs}]/gu) ?? [];
  return found
    .filter((character) => !(options.lineBreaks && character === '\n'))
    .map((character) => `U+${character.codePointAt(0)!.toString(16).padStart(4, '0')}`);
}
