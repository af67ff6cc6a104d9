import { InboxConfigError } from '../errors.js';

// Options come from plain JavaScript too, where the types check nothing: these helpers let each check say
// what it got, not only what it wanted.

/** What a value is, for an error message: `the string "1000"`, `the number 5`, `an array`. */
export function described(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  switch (typeof value) {
    case 'string':
      return `the string ${JSON.stringify(value)}`;
    case 'number':
    case 'boolean':
      return `the ${typeof value} ${String(value)}`;
    case 'bigint':
      return `the bigint ${String(value)}n`;
    case 'function':
      return 'a function';
    case 'undefined':
      return 'undefined';
    case 'symbol':
      return `the symbol ${String(value)}`;
    default:
      return 'an object';
  }
}

/**
 * A string option's value among `choices`, `fallback` for undefined or null. An object is the imported value
 * an earlier version took here (`park`, `withFirstStatement`): refused, naming the string that replaced it.
 */
export function plainChoice<T extends string>(
  given: unknown,
  option: string,
  { choices, fallback, retired }: { readonly choices: readonly T[]; readonly fallback: T; readonly retired: { readonly name: string; readonly value: T } },
): T {
  if (given === undefined || given === null) return fallback;
  if (typeof given === 'object' && !Array.isArray(given)) {
    throw new InboxConfigError(option, `takes a string now: pass ${option}: '${retired.value}' where you passed the imported ${retired.name}, which is gone`);
  }
  return oneOf(given, option, choices);
}

/**
 * Refuses keys that `known` does not list: a misspelt option would otherwise be ignored and its default
 * used in silence. Names the closest known key when one is a likely typo, else lists them all.
 *
 * @param option the dotted path of the object (`fifo`), or undefined for inbox()'s own options
 * @param topLevel for the handler's own options: what they belong to (`inbox()`, `kinesisInbox()`, ...), and the
 *   keys that belong inside one of the nested objects, by the nested option's name
 */
export function refuseUnknownKeys(
  given: object,
  known: Readonly<Record<string, true>>,
  option: string | undefined,
  { top = 'inbox()', misplaced = {} }: TopLevelOptions = {},
): void {
  for (const key of Object.keys(given)) {
    if (Object.hasOwn(known, key)) continue;
    const names = Object.keys(known);
    const owner = Object.keys(misplaced).find((name) => Object.hasOwn(misplaced[name]!, key));
    const close = closest(key, names);
    const hint = owner
      ? `it belongs inside ${owner}: ${owner}: { ${key}: ... }`
      : close
        ? `did you mean "${close}"?`
        : `the ${option ?? top} options are ${names.join(', ')}`;
    throw new InboxConfigError(option ? `${option}.${key}` : key, `is not an option of ${option ?? top}; ${hint}`);
  }
}

/** What the handler's own options belong to, and where the keys of its nested options go. */
interface TopLevelOptions {
  readonly top?: string;
  readonly misplaced?: Readonly<Record<string, Readonly<Record<string, true>>>>;
}

/** The known name a typo most likely meant: few edits apart for its length, ignoring case. */
function closest(typed: string, names: readonly string[]): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const name of names) {
    const distance = editDistance(typed.toLowerCase(), name.toLowerCase());
    const allowed = Math.max(1, Math.floor(Math.min(typed.length, name.length) / 4));
    if (distance <= allowed && (!best || distance < best.distance)) best = { name, distance };
  }
  return best?.name;
}

/** Levenshtein distance: insertions, deletions and substitutions. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}

/** The value when it is one of the choices; else an error listing them. */
export function oneOf<T extends string>(value: unknown, option: string, choices: readonly T[]): T {
  if ((choices as readonly unknown[]).includes(value)) return value as T;
  const allowed = choices.map((choice) => `'${choice}'`).join(' or ');
  throw new InboxConfigError(option, typeof value === 'string' ? `"${value}" must be ${allowed}` : `must be ${allowed}; got ${described(value)}`);
}
