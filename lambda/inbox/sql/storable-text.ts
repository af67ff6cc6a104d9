// Text PostgreSQL refuses: U+0000, which neither `text` nor `jsonb` can hold (SQLSTATE 22021, 22P05), and a
// lone UTF-16 surrogate, which `jsonb` refuses (22P02) and UTF-8 cannot carry (Node writes U+FFFD instead).

import { LONE_SURROGATE } from '../sources/text-bytes.js';

/** Either kind of character. */
const UNSTORABLE = new RegExp(`\\u0000|${LONE_SURROGATE.source}`);
const EVERY_UNSTORABLE = new RegExp(UNSTORABLE.source, 'g');

/** The SQLSTATEs of a statement PostgreSQL refused for text it cannot store. */
export const UNSTORABLE_TEXT_STATES: ReadonlySet<string> = new Set(['22021', '22P05', '22P02']);

/**
 * Diagnostic text (an error's message and class, a record's id) as the parked table stores it, so that its
 * parking cannot fail on it: U+0000 and each lone surrogate written as JSON writes them (`\u0000`,
 * `\udc00`), everything else kept; cut to its first `limit` characters (never inside a surrogate pair),
 * followed by ` [cut: N characters]` when it was longer.
 *
 * @example
 * storableText('sku "ab\u0000c" unknown', 4000); // 'sku "ab\\u0000c" unknown'
 */
export function storableText(text: string, limit: number): string {
  const escaped = text.replace(EVERY_UNSTORABLE, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
  if (escaped.length <= limit) return escaped;
  const end = /[\ud800-\udbff]/.test(escaped[limit - 1]!) ? limit - 1 : limit;
  return `${escaped.slice(0, end)} [cut: ${escaped.length} characters]`;
}

/** Where a value holds text PostgreSQL cannot store, and which kind. */
export interface UnstorableText {
  /** The path to the string (or the property name) that holds it: `body.items[2].sku`. */
  readonly path: string;
  /** `U+0000` or `a lone surrogate`. */
  readonly kind: string;
}

/**
 * The first string (or property name) in `value` that holds U+0000 or a lone surrogate, found without
 * recursion (a parsed body may nest deeply) and visiting each object once; undefined when there is none.
 * Binary values (Uint8Array, ...) hold no text.
 */
export function unstorableTextIn(value: unknown, root: string): UnstorableText | undefined {
  const seen = new Set<object>();
  const pending: [unknown, string][] = [[value, root]];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [item, path] = next;
    if (typeof item === 'string') {
      const found = kindOf(item);
      if (found) return { path, kind: found };
    } else if (typeof item === 'object' && item !== null && !ArrayBuffer.isView(item) && !seen.has(item)) {
      seen.add(item);
      for (const [name, inner] of Object.entries(item)) {
        const at = Array.isArray(item) ? `${path}[${name}]` : `${path}.${name}`;
        const inName = kindOf(name);
        if (inName) return { path: at, kind: `${inName} in the property name` };
        pending.push([inner, at]);
      }
    }
  }
  return undefined;
}

function kindOf(text: string): string | undefined {
  const found = UNSTORABLE.exec(text)?.[0];
  if (found === undefined) return undefined;
  return found === '\u0000' ? 'U+0000' : 'a lone surrogate';
}
