// Text from a record or the database, made safe to print on an operator's terminal. A parked message holds
// whatever a producer sent: printed raw, ESC ] 0 ; ... BEL retitles the window, ESC [ 2 J clears the screen,
// a CR rewrites the line the operator reads, U+202E reverses it, and U+009B is a CSI of its own. Every
// such character is printed as an escape instead (\x1b, \u202e), and a backslash as \\, so that what is
// printed reads back to exactly one text. Every print of such text in the CLI goes through this file.

/**
 * What a terminal may act on or hide: C0, DEL and C1 (Cc), format characters (Cf: the bidi overrides and
 * isolates U+202A-202E and U+2066-2069, the marks U+200E/F and U+061C, zero-width characters, U+FEFF, the
 * tag characters), the line and paragraph separators U+2028 and U+2029, and lone surrogates (Cs).
 */
const UNPRINTABLE = String.raw`\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}`;
/** Those, and the backslash that starts every escape, in text. */
const ESCAPED_IN_TEXT = new RegExp(`[\\\\${UNPRINTABLE}]`, 'gu');
/** Those but the line break, which JSON.stringify leaves raw only as the layout of an indented document. */
const RAW_IN_JSON = new RegExp(`(?!\\n)[${UNPRINTABLE}]`, 'gu');
const SHORT: Readonly<Record<string, string>> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' };

const hex = (code: number, digits: number) => code.toString(16).padStart(digits, '0');

function escaped(character: string): string {
  if (Object.hasOwn(SHORT, character)) return SHORT[character]!;
  const code = character.codePointAt(0)!;
  if (code <= 0xff) return `\\x${hex(code, 2)}`;
  return code <= 0xffff ? `\\u${hex(code, 4)}` : `\\u{${code.toString(16)}}`;
}

/**
 * One line of text as it may reach a terminal: every character a terminal could act on or hide as an
 * escape (`\x1b`, `\r`, `\u202e`, `\u{e0041}`), a backslash as `\\`, everything else as it is.
 * @example printable('ok\x1b]0;owned\x07') // 'ok\\x1b]0;owned\\x07'
 */
export function printable(text: string): string {
  return text.replace(ESCAPED_IN_TEXT, escaped);
}

/**
 * Text of several lines, for a layout that prints each line on its own (indented): the line breaks are
 * the layout's, everything else as {@link printable}.
 */
export function printableLines(text: string): string[] {
  return text.split('\n').map(printable);
}

/**
 * A JSON document as it may reach a terminal: `JSON.stringify`, with what it leaves raw in strings (DEL,
 * C1, format characters, U+2028/2029) written as `\u` escapes, so the document parses to the same value.
 * Bytes (a parked message's payload) are written as base64.
 * @example printableJson({ note: '\u202eevil' }) // '{"note":"\\u202eevil"}'
 */
export function printableJson(value: unknown, space?: number): string {
  // Outside its strings, JSON.stringify writes only ASCII punctuation, spaces and, indented, line breaks.
  return JSON.stringify(value, base64Bytes, space).replace(RAW_IN_JSON, (character) =>
    Array.from({ length: character.length }, (_, index) => `\\u${hex(character.charCodeAt(index), 4)}`).join(''),
  );
}

/**
 * A table cell: {@link printable}, runs of spaces as one, cut to `width` columns with `...`. The cut falls
 * between whole escapes and characters, never inside `\x1b` or a surrogate pair.
 */
export function printableCell(text: string, width: number): string {
  const units: string[] = [];
  let columns = 0;
  for (const character of text) {
    const unit = /^\p{Zs}$/u.test(character) ? ' ' : printable(character);
    if (unit === ' ' && units.at(-1) === ' ') continue;
    units.push(unit);
    columns += columnsOf(unit);
    // One column past the width is enough to know the cell is cut.
    if (columns > width) break;
  }
  if (columns <= width) return units.join('');
  const kept: string[] = [];
  let used = 0;
  for (const unit of units) {
    if (used + columnsOf(unit) > width - 3) break;
    kept.push(unit);
    used += columnsOf(unit);
  }
  return `${kept.join('')}...`;
}

/** An escape takes a column per character; any other character one (an astral one is two UTF-16 units). */
function columnsOf(unit: string): number {
  return unit.startsWith('\\') ? unit.length : 1;
}

/** JSON.stringify's replacer that writes bytes as base64; read from the holder, before a Buffer's toJSON made them an object. */
function base64Bytes(this: Record<string, unknown>, key: string, value: unknown): unknown {
  const raw = this[key];
  return raw instanceof Uint8Array ? Buffer.from(raw).toString('base64') : value;
}
