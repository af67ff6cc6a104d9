/**
 * JSON as the Data API wire needs it, which `JSON.parse` / `JSON.stringify` cannot do on Node 20:
 * - a `longValue` may carry more digits than a double holds (the SDK writes a BigInt as raw digits), so
 *   integers outside the safe range are parsed as `bigint`;
 * - an int8 result is written back as raw digits (`bigint`), and a `doubleValue` NaN or Infinity as the
 *   strings the SDK's codec reads ("NaN", "Infinity", "-Infinity").
 */

/** A parsed JSON value; integers beyond Number.MAX_SAFE_INTEGER come back as bigint. */
export type JsonValue = null | boolean | number | bigint | string | JsonValue[] | { [key: string]: JsonValue };

/** Raised for text that is not JSON; the message gives the offset. */
export class JsonSyntaxError extends Error {
  override readonly name = 'JsonSyntaxError';
}

/** Parses JSON text, keeping integers that a double cannot hold exactly as bigint. */
export function parseJson(text: string): JsonValue {
  let at = 0;
  const fail = (what: string): never => {
    throw new JsonSyntaxError(`${what} at offset ${at}`);
  };
  const skipSpace = () => {
    while (at < text.length) {
      const c = text.charCodeAt(at);
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) at++;
      else break;
    }
  };
  const value = (): JsonValue => {
    skipSpace();
    const c = text[at];
    if (c === '{') {
      at++;
      const object: { [key: string]: JsonValue } = {};
      skipSpace();
      if (text[at] === '}') {
        at++;
        return object;
      }
      for (;;) {
        skipSpace();
        if (text[at] !== '"') fail('Expected a string key');
        const key = string();
        skipSpace();
        if (text[at] !== ':') fail('Expected ":"');
        at++;
        // defineProperty: a "__proto__" key must stay an ordinary member.
        Object.defineProperty(object, key, { value: value(), enumerable: true, writable: true, configurable: true });
        skipSpace();
        if (text[at] === ',') at++;
        else if (text[at] === '}') {
          at++;
          return object;
        } else fail('Expected "," or "}"');
      }
    }
    if (c === '[') {
      at++;
      const array: JsonValue[] = [];
      skipSpace();
      if (text[at] === ']') {
        at++;
        return array;
      }
      for (;;) {
        array.push(value());
        skipSpace();
        if (text[at] === ',') at++;
        else if (text[at] === ']') {
          at++;
          return array;
        } else fail('Expected "," or "]"');
      }
    }
    if (c === '"') return string();
    if (text.startsWith('true', at)) return ((at += 4), true);
    if (text.startsWith('false', at)) return ((at += 5), false);
    if (text.startsWith('null', at)) return ((at += 4), null);
    return number();
  };
  // A sticky expression made per call: a regex's lastIndex is state, and none may live at module level.
  const numberToken = /-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y;
  const string = (): string => {
    // Find the closing quote by hand (a regex over a multi-megabyte string would backtrack deeply), then
    // let JSON.parse decode the escapes and reject control characters.
    let end = at + 1;
    while (end < text.length && text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
    if (end >= text.length) fail('Unterminated string');
    const token = text.slice(at, end + 1);
    at = end + 1;
    try {
      return JSON.parse(token) as string;
    } catch {
      return fail('Invalid string');
    }
  };
  const number = (): number | bigint => {
    numberToken.lastIndex = at;
    const match = numberToken.exec(text);
    if (!match) return fail('Unexpected character');
    at += match[0].length;
    const parsed = Number(match[0]);
    if (match[1] === undefined && match[2] === undefined && !Number.isSafeInteger(parsed)) return BigInt(match[0]);
    return parsed;
  };
  const result = value();
  skipSpace();
  if (at !== text.length) fail('Unexpected text after the JSON value');
  return result;
}

/** Writes JSON: bigint as raw digits, non-finite numbers as "NaN" / "Infinity" / "-Infinity", undefined members omitted. */
export function stringifyJson(value: unknown): string {
  const parts: string[] = [];
  write(value, parts);
  return parts.join('');
}

function write(value: unknown, parts: string[]): void {
  switch (typeof value) {
    case 'bigint':
      parts.push(value.toString());
      return;
    case 'number':
      parts.push(Number.isFinite(value) ? JSON.stringify(value) : `"${String(value)}"`);
      return;
    case 'string':
    case 'boolean':
      parts.push(JSON.stringify(value));
      return;
    case 'object':
      if (value === null) {
        parts.push('null');
      } else if (Array.isArray(value)) {
        parts.push('[');
        value.forEach((item, index) => {
          if (index > 0) parts.push(',');
          write(item === undefined ? null : item, parts);
        });
        parts.push(']');
      } else {
        parts.push('{');
        let first = true;
        for (const [key, item] of Object.entries(value)) {
          if (item === undefined) continue;
          if (!first) parts.push(',');
          first = false;
          parts.push(JSON.stringify(key), ':');
          write(item, parts);
        }
        parts.push('}');
      }
      return;
    default:
      parts.push('null');
  }
}

/**
 * Removes the whitespace between JSON tokens, leaving strings and number text untouched: Aurora
 * Serverless v2 returns json/jsonb compactly (`{"x":0}`, not PostgreSQL's `{"x": 0}`), and re-parsing
 * would round numbers a double cannot hold.
 */
export function compactJson(text: string): string {
  let out = '';
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (inString) {
      out += c;
      if (c === '\\') out += text[++i] ?? '';
      else if (c === '"') inString = false;
    } else if (c === '"') {
      inString = true;
      out += c;
    } else if (c !== ' ' && c !== '\n' && c !== '\r' && c !== '\t') {
      out += c;
    }
  }
  return out;
}
