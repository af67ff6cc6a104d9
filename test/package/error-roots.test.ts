import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * One error root per part: the constructs throw only their InboxConstructError (never a plain Error), and no two
 * error classes of the shipped parts share a name, so `error.name` and an import say which one it is.
 */
function sources(path: string): string[] {
  if (statSync(path).isFile()) return path.endsWith('.ts') ? [path] : [];
  return readdirSync(path).flatMap((name) => sources(join(path, name)));
}

/** `throw new Error(` and its relatives in the constructs' code: each should be an InboxConstructError. */
export function plainThrows(file: string, text: string): string[] {
  return [...text.matchAll(/throw new (Error|TypeError|RangeError)\(/g)].map((match) => `${file}: ${match[0]}`);
}

/** The error classes a file declares, by name. */
export function errorClasses(text: string): string[] {
  return [...text.matchAll(/\bclass (\w+) extends \w*Error\b/g)].map((match) => match[1]!);
}

describe('the error roots', () => {
  it('the constructs throw their own error class, never a plain Error', () => {
    const files = sources('lib');
    expect(files.flatMap((file) => plainThrows(file, readFileSync(file, 'utf8')))).toEqual([]);
    expect(plainThrows('lib/x.ts', '  throw new Error(`InboxQueue ${path}: wrong. Fix: right.`);')).toHaveLength(1);
  });

  it('no two error classes of the runtime, the constructs and the testkit share a name', () => {
    const declared = ['lambda', 'lib', 'local'].flatMap(sources).flatMap((file) => errorClasses(readFileSync(file, 'utf8')).map((name) => ({ name, file })));
    const twice = declared.filter(({ name }) => declared.filter((other) => other.name === name).length > 1);
    expect(twice).toEqual([]);
    expect(declared.map(({ name }) => name)).toEqual(expect.arrayContaining(['InboxError', 'DataApiError', 'InboxConstructError', 'DataApiErrorResponse']));
  });
});
