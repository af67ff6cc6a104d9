import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { printable, printableCell, printableJson, printableLines } from '../../bin/cli/printable.js';
import { HOSTILE_SEQUENCES, hostileText, rawControls } from '../support/hostile-text.js';
import { propertyParameters } from '../support/seed.js';

// What the CLI prints of a record or the database goes through bin/cli/printable.ts (the real CLI on
// hostile records: cli-parked.test.ts). Here, every function of it over generated hostile text.

const RUNS = 3000;

/** An escape as printable writes one: \\, \n, \r, \t, \xhh, \uhhhh, \u{h...}. */
const ESCAPE = /\\(?:([\\nrt])|x([0-9a-f]{2})|u([0-9a-f]{4})|u\{([0-9a-f]{5,6})\})/g;
const SHORT: Record<string, string> = { '\\': '\\', n: '\n', r: '\r', t: '\t' };

/** Reads printed text back; throws where a backslash starts no escape, which would make the print ambiguous. */
function readBack(printed: string): string {
  const rest = printed.replace(ESCAPE, '');
  if (rest.includes('\\')) throw new Error(`a backslash that starts no escape in ${JSON.stringify(printed)}`);
  return printed.replace(ESCAPE, (_, short: string, byte: string, unit: string, astral: string) =>
    short ? SHORT[short]! : String.fromCodePoint(Number.parseInt(byte ?? unit ?? astral, 16)),
  );
}

describe('printable', () => {
  it('leaves no character a terminal acts on or hides, and reads back to exactly the text', () => {
    fc.assert(
      fc.property(hostileText(), (text) => {
        const printed = printable(text);
        expect(rawControls(printed)).toEqual([]);
        expect(readBack(printed)).toBe(text);
      }),
      propertyParameters(RUNS),
    );
  });

  it.each([
    ['an OSC window title', '\x1b]0;owned\x07', '\\x1b]0;owned\\x07'],
    ['a CSI clearing the screen', '\x1b[2J', '\\x1b[2J'],
    ['a CR rewriting the line', 'ok\rfake', 'ok\\rfake'],
    ['a C1 CSI', '\u009b2J', '\\x9b2J'],
    ['a bidi override', 'txt.\u202egpj', 'txt.\\u202egpj'],
    ['isolates and marks', '\u2066a\u2069\u200e\u200f', '\\u2066a\\u2069\\u200e\\u200f'],
    ['a lone surrogate', 'a\ud800b', 'a\\ud800b'],
    ['a tag character', 'a\u{e0041}', 'a\\u{e0041}'],
    ['text that looks like an escape', 'C:\\x1b', 'C:\\\\x1b'],
    ['DEL, NUL and NEL', '\x7f\x00\u0085', '\\x7f\\x00\\x85'],
  ])('writes %s as an escape', (_, text, printed) => {
    expect(printable(text)).toBe(printed);
  });

  it('prints text without controls or backslashes as it is: accents, CJK, emoji, spaces', () => {
    const plain = fc.string({ unit: 'grapheme', maxLength: 40 }).filter((text) => rawControls(text).length === 0 && !text.includes('\\'));
    fc.assert(
      fc.property(plain, (text) => {
        expect(printable(text)).toBe(text);
      }),
      propertyParameters(RUNS),
    );
  });
});

describe('printableLines', () => {
  it('keeps only the line breaks, one line each, and the lines read back to the text', () => {
    fc.assert(
      fc.property(hostileText(), (text) => {
        const lines = printableLines(text);
        for (const line of lines) expect(rawControls(line)).toEqual([]);
        expect(lines.map(readBack).join('\n')).toBe(text);
      }),
      propertyParameters(RUNS),
    );
  });
});

describe('printableJson', () => {
  const hostileJson = fc.jsonValue({ stringUnit: fc.constantFrom(...HOSTILE_SEQUENCES, 'a', 'é', '😀', ' '), maxDepth: 3 });

  it.each([undefined, 2])('writes a document that parses to the same value, without raw controls (indent %s)', (space) => {
    fc.assert(
      fc.property(hostileJson, (value) => {
        const printed = printableJson(value, space);
        expect(rawControls(printed, { lineBreaks: space !== undefined })).toEqual([]);
        expect(JSON.parse(printed)).toEqual(JSON.parse(JSON.stringify(value)));
      }),
      propertyParameters(RUNS),
    );
  });

  it('escapes what JSON.stringify leaves raw, astral format characters as a surrogate pair', () => {
    expect(printableJson({ '\u202e': '\u009b\x7f\u2028\u{e0041}\x1b' })).toBe('{"\\u202e":"\\u009b\\u007f\\u2028\\udb40\\udc41\\u001b"}');
  });
});

describe('printableCell', () => {
  it('fits its width, cuts only between whole escapes, and holds no raw control', () => {
    fc.assert(
      fc.property(hostileText({ maxLength: 60 }), fc.integer({ min: 4, max: 60 }), (text, width) => {
        const cell = printableCell(text, width);
        const whole = printable(text.replace(/\p{Zs}+/gu, ' '));
        expect(rawControls(cell)).toEqual([]);
        // A column per code point: an escape is ASCII, a character one column.
        expect([...cell].length).toBeLessThanOrEqual(width);
        if ([...whole].length <= width) {
          expect(cell).toBe(whole);
        } else {
          expect(cell.endsWith('...')).toBe(true);
          const kept = cell.slice(0, -3);
          expect(whole.startsWith(kept)).toBe(true);
          // A cut inside an escape would leave a backslash that starts none, which readBack refuses.
          readBack(kept);
        }
      }),
      propertyParameters(RUNS),
    );
  });

  it('shows a line break in a cell as \\n, and runs of spaces as one', () => {
    expect(printableCell('a\n    b\tc', 20)).toBe('a\\n b\\tc');
    expect(printableCell(`PermanentError: ${'x'.repeat(60)}`, 20)).toBe('PermanentError: x...');
    expect(printableCell('ab\x1b[2J', 6)).toBe('ab...');
  });
});
