import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sqsRefusal } from '../../lambda/inbox/outbox/sqs-text.js';
import { jsonFault, parseJson } from '../../lambda/inbox/prepare/json-body.js';
import { payloadHash } from '../../lambda/inbox/prepare/keys.js';
import { bytesText, textBytes } from '../../lambda/inbox/sources/text-bytes.js';
import { storableText, unstorableTextIn } from '../../lambda/inbox/sql/storable-text.js';
import { ParseError } from '../../lambda/inbox/index.js';
import { propertyParameters } from '../support/seed.js';

// The text a record carries, as the inbox turns it into bytes, stores it and says where it went wrong:
// properties over generated text (seeded), where hand-picked strings would miss the corner that breaks.

/** Any JavaScript string: every code point, lone surrogates, U+0000, and the characters JSON escapes. */
const anyText = fc
  .array(
    fc.oneof(
      fc.string({ unit: 'binary', maxLength: 8 }),
      fc.integer({ min: 0xd800, max: 0xdfff }).map((unit) => String.fromCharCode(unit)),
      fc.constantFrom('\u0000', '\ufffd', '\ufffe', '"', '\\', '\n', '\u007f'),
    ),
    { maxLength: 12 },
  )
  .map((parts) => parts.join(''));

const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const wellFormed = (text: string) => !LONE.test(text);

/** JSON texts, and JSON texts with one character taken out, put in or replaced: most of them malformed. */
const nearJson = fc.oneof(
  fc.json(),
  fc.tuple(fc.json(), fc.nat(), fc.constantFrom('', '"', '{', '}', '[', ']', ',', ':', '\\', '\u0001', 'x', '0', '-', 'e', ' ')).map(([json, at, char]) => {
    const index = at % (json.length + 1);
    return at % 2 === 0 ? json.slice(0, index) + char + json.slice(index) : json.slice(0, index) + char + json.slice(index + 1);
  }),
  anyText,
);

describe('jsonFault: where a text stops being JSON', () => {
  it('finds a fault exactly when JSON.parse refuses the text, within the text', () => {
    fc.assert(
      fc.property(nearJson, (text) => {
        let parses = true;
        try {
          JSON.parse(text);
        } catch {
          parses = false;
        }
        const fault = jsonFault(text);
        expect(fault === undefined).toBe(parses);
        if (fault) expect(fault.position).toBeGreaterThanOrEqual(0);
        if (fault) expect(fault.position).toBeLessThanOrEqual(text.length);
      }),
      propertyParameters(3000),
    );
  });

  it('refuses a malformed body with a ParseError that holds none of it', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 6, maxLength: 40 }), (secret) => {
        const body = `{"card": ${secret}`;
        fc.pre(jsonFault(body) !== undefined);
        let thrown: unknown;
        try {
          parseJson(body);
        } catch (error) {
          thrown = error;
        }
        expect(thrown).toBeInstanceOf(ParseError);
        expect((thrown as Error).message).toMatch(/^not JSON: [A-Za-z',:{}[\] ]+ at position \d+ of \d+$/);
      }),
      propertyParameters(500),
    );
  });

  it('scans a text nested deeper than any stack would hold', () => {
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    expect(jsonFault(deep)).toBeUndefined();
    expect(jsonFault(`${deep.slice(0, -1)}`)).toEqual({ kind: 'unexpected end of the text', position: 199_999 });
  });

  it.each([
    ['{"orderId": "x"', 'unexpected end of the text', 15],
    ['"abc', 'unterminated string', 0],
    ['{"a":"\\q"}', 'bad escape in a string', 6],
    ['{"a":"\u0001"}', 'control character in a string', 6],
    ['{a:1}', 'expected a property name', 1],
    ['{"a" 1}', "expected ':'", 5],
    ['[1 2]', "expected ',' or ']'", 3],
    ['{"a":1 "b":2}', "expected ',' or '}'", 7],
    ['{"a":1}x', 'characters after the JSON value', 7],
    ['[tru]', 'unexpected character', 1],
  ])('names the fault of %j', (text, kind, position) => {
    expect(jsonFault(text)).toEqual({ kind, position });
  });
});

describe('textBytes and bytesText: a text as bytes, losing nothing', () => {
  it('gives back every string, lone surrogates included', () => {
    fc.assert(
      fc.property(anyText, (text) => {
        expect(bytesText(textBytes(text))).toBe(text);
      }),
      propertyParameters(2000),
    );
  });

  it('is UTF-8 for well-formed text, so that a claim hashed before keeps its hash', () => {
    fc.assert(
      fc.property(anyText.filter(wellFormed), (text) => {
        expect(textBytes(text).equals(Buffer.from(text, 'utf8'))).toBe(true);
        expect(Buffer.from(payloadHash(text)).equals(createHash('sha256').update(text, 'utf8').digest())).toBe(true);
      }),
      propertyParameters(1000),
    );
  });

  it('hashes apart two bodies that differ only in a lone surrogate (UTF-8 would make both U+FFFD)', () => {
    expect(Buffer.from(payloadHash('a\ud800')).equals(Buffer.from(payloadHash('a\ud801')))).toBe(false);
    expect(Buffer.from(payloadHash('a\ud800')).equals(Buffer.from(payloadHash(new Uint8Array(textBytes('a\ud800')))))).toBe(true);
  });

  it('reads bytes that are not UTF-8 as U+FFFD, as Node does, and the three-byte form of a surrogate as it', () => {
    expect(bytesText(new Uint8Array([0x61, 0xff, 0xed, 0xa0, 0x80, 0xed, 0x9f, 0xbf, 0xed, 0xa0, 0x41, 0xed]))).toBe('a\ufffd\ud800\ud7ff\ufffd\ufffdA\ufffd');
    // 0xED before a byte that is no surrogate's second: below 0xA0 and not a continuation, or past 0xBF.
    expect(bytesText(new Uint8Array([0xed, 0x41, 0x80, 0xed, 0xc0, 0x80]))).toBe('\ufffdA\ufffd\ufffd\ufffd\ufffd');
  });
});

describe('storableText: diagnostic text a parked row can always hold', () => {
  it('holds neither U+0000 nor a lone surrogate, keeps everything else, and is cut at the limit', () => {
    fc.assert(
      fc.property(anyText, fc.integer({ min: 1, max: 40 }), (text, limit) => {
        const stored = storableText(text, limit);
        expect(stored).not.toContain('\u0000');
        expect(wellFormed(stored)).toBe(true);
        const escaped = storableText(text, Number.POSITIVE_INFINITY);
        expect(escaped.replace(/\\u(0000|d[89a-f][0-9a-f]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)))).toBe(
          text.replace(/\\u(0000|d[89a-f][0-9a-f]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16))),
        );
        if (escaped.length <= limit) expect(stored).toBe(escaped);
        else expect(stored).toBe(`${escaped.slice(0, stored.length - ` [cut: ${escaped.length} characters]`.length)} [cut: ${escaped.length} characters]`);
      }),
      propertyParameters(2000),
    );
  });

  it('never cuts a surrogate pair in two', () => {
    expect(storableText('ab😀c', 3)).toBe('ab [cut: 5 characters]');
    expect(storableText('ab😀c', 4)).toBe('ab😀 [cut: 5 characters]');
  });
});

describe('unstorableTextIn: where a value holds text PostgreSQL cannot store', () => {
  it('finds U+0000 or a lone surrogate put anywhere in a JSON value, and nothing in one without', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.constantFrom('\u0000', '\udc00'), fc.nat(), (value, bad, pick) => {
        fc.pre(unstorableTextIn(value, 'body') === undefined);
        const spots: [Record<string, unknown> | unknown[], string][] = [];
        const visit = (item: unknown) => {
          if (typeof item !== 'object' || item === null) return;
          for (const [name, inner] of Object.entries(item)) {
            spots.push([item as Record<string, unknown>, name]);
            visit(inner);
          }
        };
        visit(value);
        fc.pre(spots.length > 0);
        const [holder, name] = spots[pick % spots.length]!;
        (holder as Record<string, unknown>)[name] = `x${bad}`;
        expect(unstorableTextIn(value, 'body')).toMatchObject({ kind: bad === '\u0000' ? 'U+0000' : 'a lone surrogate' });
      }),
      propertyParameters(1000),
    );
  });

  it('names the path, a property name that holds it, and leaves binary values and cycles alone', () => {
    const cyclic: Record<string, unknown> = { bytes: new Uint8Array([0]) };
    cyclic.self = cyclic;
    expect(unstorableTextIn(cyclic, 'body')).toBeUndefined();
    expect(unstorableTextIn({ items: [{ sku: 'a' }, { sku: 'b\u0000' }] }, 'body')).toEqual({ path: 'body.items[1].sku', kind: 'U+0000' });
    expect(unstorableTextIn({ 'k\ud800': 1 }, 'body')).toEqual({ path: 'body.k\ud800', kind: 'a lone surrogate in the property name' });
  });
});

describe('sqsRefusal: text SQS refuses in a message', () => {
  it('names the first character outside what SQS takes, and nothing in text it takes', () => {
    const takes = (point: number) =>
      point === 0x9 || point === 0xa || point === 0xd || (point >= 0x20 && point <= 0xd7ff) || (point >= 0xe000 && point <= 0xfffd) || point >= 0x10000;
    fc.assert(
      fc.property(anyText, (text) => {
        const points = [...text].map((char) => char.codePointAt(0)!);
        const first = points.findIndex((point) => !takes(point));
        const refusal = sqsRefusal(text);
        if (first === -1) expect(refusal).toBeUndefined();
        else expect(refusal).toMatch(new RegExp(`^U\\+${points[first]!.toString(16).toUpperCase().padStart(4, '0')} at character \\d+$`));
      }),
      propertyParameters(2000),
    );
  });
});
