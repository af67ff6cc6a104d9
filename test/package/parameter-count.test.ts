import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/** The part of TypeScript's compiler API this test reads, typed here: the repository's TypeScript 7 has neither the API nor its types. */
interface Node {
  readonly parent: Node;
  getStart(source?: SourceFile): number;
  getText(): string;
}
interface SourceFile extends Node {
  getLineAndCharacterOfPosition(position: number): { readonly line: number };
}
interface FunctionLike extends Node {
  readonly parameters: readonly Node[];
  readonly name?: Node;
}
interface Bound extends Node {
  readonly name: Node;
  readonly initializer?: Node;
}
interface Compiler {
  readonly ScriptTarget: { readonly Latest: number };
  createSourceFile(fileName: string, text: string, target: number, setParentNodes: boolean): SourceFile;
  forEachChild(node: Node, visit: (child: Node) => void): void;
  isFunctionLike(node: Node): node is FunctionLike;
  isClassLike(node: Node): node is Node & { readonly name?: { readonly text: string } };
  isConstructorDeclaration(node: Node): boolean;
  isVariableDeclaration(node: Node): node is Bound;
  isPropertyAssignment(node: Node): node is Bound;
  isPropertyDeclaration(node: Node): node is Bound;
}

// API Extractor carries a TypeScript 6, which has the JS API. Resolved from the api-extractor package itself, so
// that it is found wherever npm hoists it.
const here = createRequire(import.meta.url);
const ts: Compiler = createRequire(here.resolve('@microsoft/api-extractor'))('typescript');

/** The most positional parameters a runtime function takes; past that, its arguments are named (an options or context object). */
const MAX_PARAMETERS = 4;

/**
 * The runtime functions that keep five parameters, each with its reason, as `file name`: only public
 * constructors, whose signatures the API reports (etc/*.api.md) hold, so that changing them is a change of the
 * public API, for issue 34's surface work. Each must still be found: a stale entry fails.
 */
const KEPT: Readonly<Record<string, string>> = {
  'lambda/inbox/errors.ts DatabaseCallError.constructor': 'public, and DataApiError and PostgresError inherit it',
  'lambda/inbox/errors.ts MigrationChangedError.constructor': 'public',
  'lambda/inbox/peers.ts PeerDependencyError.constructor': 'public, and LocalDependencyError extends it',
};

function sources(path: string): string[] {
  if (statSync(path).isFile()) return path.endsWith('.ts') ? [path] : [];
  return readdirSync(path).flatMap((name) => sources(join(path, name)));
}

/** What a reader calls a function-like node: `Class.method`, `Class.constructor`, the variable or property an arrow is bound to, else `(anonymous)`. */
function nameOf(node: FunctionLike): string {
  const owner = ts.isClassLike(node.parent) ? `${node.parent.name?.text ?? '(anonymous class)'}.` : '';
  if (ts.isConstructorDeclaration(node)) return `${owner}constructor`;
  if (node.name !== undefined) return `${owner}${node.name.getText()}`;
  const parent = node.parent;
  if ((ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) && parent.initializer === node) {
    return parent.name.getText();
  }
  return '(anonymous)';
}

/** Every function, method, arrow, constructor, accessor or signature of `files` that takes more than MAX_PARAMETERS, as `file:line name (n parameters)`. */
function longParameterLists(
  files: readonly string[],
  read: (file: string) => string,
): { readonly at: string; readonly name: string; readonly count: number }[] {
  return files.flatMap((file) => {
    const source = ts.createSourceFile(file, read(file), ts.ScriptTarget.Latest, true);
    const found: { at: string; name: string; count: number }[] = [];
    const visit = (node: Node) => {
      if (ts.isFunctionLike(node) && node.parameters.length > MAX_PARAMETERS) {
        const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
        found.push({ at: `${file}:${line}`, name: `${file} ${nameOf(node)}`, count: node.parameters.length });
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
    return found;
  });
}

const describeAll = (found: ReturnType<typeof longParameterLists>) =>
  found.map(({ at, name, count }) => `${at} ${name.slice(name.indexOf(' ') + 1)} takes ${count} parameters; name them (an options or context object)`);

const read = (file: string) => readFileSync(file, 'utf8');

describe('the parameter lists of the runtime (lambda/)', () => {
  const found = longParameterLists(sources('lambda'), read);

  it(`has no function, method, arrow or constructor of more than ${MAX_PARAMETERS} parameters, but the public constructors it keeps`, () => {
    expect(describeAll(found.filter(({ name }) => !(name in KEPT)))).toEqual([]);
  });

  it('keeps each of its exceptions for a function that still takes them', () => {
    expect(Object.keys(KEPT).filter((name) => !found.some((one) => one.name === name))).toEqual([]);
  });

  it('finds a long list in a function, a method, an arrow, a callback, a constructor and a signature, naming file, line and function', () => {
    const text = [
      'export function five(a: number, b: number, c: number, d: number, e: number) {}',
      'class Runner {',
      '  constructor(a: number, b: number, c: number, d: number, e: number) {}',
      '  #run(a: number, b: number, c: number, d: number, e: number) {}',
      '}',
      'const relay = async (a: number, b: number, c: number, d: number, e: number) => {};',
      'items.map(function (a, b, c, d, e) {});',
      'interface Sender { send(a: number, b: number, c: number, d: number, e: number): void }',
      'function four(a: number, b: number, c: number, d: number) {}',
    ].join('\n');
    expect(describeAll(longParameterLists(['lambda/inbox/example.ts'], () => text))).toEqual([
      'lambda/inbox/example.ts:1 five takes 5 parameters; name them (an options or context object)',
      'lambda/inbox/example.ts:3 Runner.constructor takes 5 parameters; name them (an options or context object)',
      'lambda/inbox/example.ts:4 Runner.#run takes 5 parameters; name them (an options or context object)',
      'lambda/inbox/example.ts:6 relay takes 5 parameters; name them (an options or context object)',
      'lambda/inbox/example.ts:7 (anonymous) takes 5 parameters; name them (an options or context object)',
      'lambda/inbox/example.ts:8 send takes 5 parameters; name them (an options or context object)',
    ]);
  });
});
