import { ParseError } from '../errors.js';

/**
 * Where and how a text stops being JSON: what a {@link ParseError} for a malformed body says instead of
 * `JSON.parse`'s own message, which quotes the text around the fault (Node 20 and newer), so that no byte
 * of a body reaches a log line or the parked row's error_message.
 */
export interface JsonFault {
  /** What went wrong, in words that hold none of the text: `unterminated string`, `unexpected character`. */
  readonly kind: string;
  /** Where: the index of the UTF-16 code unit at fault, from 0 (the text's length when it ended too soon). */
  readonly position: number;
}

/**
 * `JSON.parse(body)`, refusing a body that is not JSON with a {@link ParseError} that says where and how,
 * never what the body holds.
 *
 * @example
 * parseJson('{"orderId": "x"'); // throws ParseError: not JSON: unexpected end of the text at position 15 of 15
 */
export function parseJson(body: string): unknown {
  try {
    return JSON.parse(body) as unknown;
  } catch {
    // JSON.parse refused it, so the scan finds its fault.
    throw new ParseError(notJson(body, jsonFault(body)!));
  }
}

/** What is said of a body that is not JSON. */
export function notJson(body: string, fault: JsonFault): string {
  return `not JSON: ${fault.kind} at position ${fault.position} of ${body.length}`;
}

const WHITESPACE = /[ \t\n\r]*/y;
const LITERAL = /true|false|null/y;
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
/** A run of string characters that need no escape (no quote, backslash or control character). */
const PLAIN = /[^"\\\u0000-\u001f]*/y;
const ESCAPE = /\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})/y;

/**
 * The first fault of `text` as JSON (RFC 8259, as `JSON.parse` reads it), or undefined when it is JSON.
 * It scans without recursion, so that a deeply nested text cannot exhaust the stack.
 */
export function jsonFault(text: string): JsonFault | undefined {
  let at = 0;
  /** What closes each container the scan is in, innermost last. */
  const closers: string[] = [];
  const read = (pattern: RegExp): boolean => {
    pattern.lastIndex = at;
    if (!pattern.test(text)) return false;
    at = pattern.lastIndex;
    return true;
  };
  const fault = (kind: string): JsonFault => ({ kind: at < text.length ? kind : 'unexpected end of the text', position: at });

  /** The string that starts at `at`, up to its closing quote; its fault when it has one. */
  const string = (): JsonFault | undefined => {
    const start = at++;
    while (read(PLAIN) && read(ESCAPE));
    if (text[at] === '"') {
      at++;
      return undefined;
    }
    if (at === text.length) return { kind: 'unterminated string', position: start };
    return { kind: text[at] === '\\' ? 'bad escape in a string' : 'control character in a string', position: at };
  };
  /** A property's name and its colon, which open each member of an object. */
  const name = (): JsonFault | undefined => {
    read(WHITESPACE);
    if (text[at] !== '"') return fault('expected a property name');
    const bad = string();
    if (bad) return bad;
    read(WHITESPACE);
    if (text[at] !== ':') return fault("expected ':'");
    at++;
    return undefined;
  };

  value: for (;;) {
    read(WHITESPACE);
    const char = text[at];
    if (char === '{' || char === '[') {
      const closer = char === '{' ? '}' : ']';
      at++;
      read(WHITESPACE);
      if (text[at] !== closer) {
        closers.push(closer);
        const bad = closer === '}' ? name() : undefined;
        if (bad) return bad;
        continue;
      }
      at++;
    } else if (char === '"') {
      const bad = string();
      if (bad) return bad;
    } else if (!read(LITERAL) && !read(NUMBER)) {
      return fault('unexpected character');
    }
    // A value ended: its container's next member, the container's end, or the end of the text comes next.
    for (;;) {
      read(WHITESPACE);
      const closer = closers.at(-1);
      if (closer === undefined) return at === text.length ? undefined : fault('characters after the JSON value');
      if (text[at] === closer) {
        at++;
        closers.pop();
        continue;
      }
      if (text[at] !== ',') return fault(`expected ',' or '${closer}'`);
      at++;
      const bad = closer === '}' ? name() : undefined;
      if (bad) return bad;
      continue value;
    }
  }
}
