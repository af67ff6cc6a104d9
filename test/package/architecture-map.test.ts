import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * docs/architecture.md's layout map, read as a tree: an entry is a line whose first word ends in `/` or names
 * a file, indented two spaces per level; deeper-indented lines that start past the name column continue a
 * description.
 */
function mappedPaths(markdown: string): string[] {
  const section = markdown.slice(markdown.indexOf('## Layout'));
  const block = section.slice(section.indexOf('```\n') + 4, section.indexOf('\n```', section.indexOf('```\n') + 4));
  const parents: string[] = [];
  const paths: string[] = [];
  for (const line of block.split('\n')) {
    const indent = line.length - line.trimStart().length;
    const name = line.trim().split(/\s+/)[0] ?? '';
    if (indent % 2 !== 0 || indent >= 24 || !/(\/|\.[a-z]+)$/.test(name)) continue;
    const depth = indent / 2;
    parents.length = depth;
    const path = [...parents, name.replace(/\/$/, '')].join('/');
    paths.push(path);
    if (name.endsWith('/')) parents.push(name.replace(/\/$/, ''));
  }
  return paths;
}

function folders(root: string): string[] {
  return readdirSync(root)
    .map((name) => join(root, name))
    .filter((path) => statSync(path).isDirectory())
    .flatMap((path) => [path, ...folders(path)]);
}

describe("the architecture document's layout map", () => {
  const paths = mappedPaths(readFileSync('docs/architecture.md', 'utf8'));

  it('reads a map of the tree', () => {
    expect(paths).toEqual(expect.arrayContaining(['lambda/inbox/handler', 'lib/database', 'local/streams/kafka']));
  });

  it('names only paths that exist', () => {
    expect(paths.filter((path) => !existsSync(path))).toEqual([]);
  });

  it('names every folder of the runtime, the constructs, the testkit and the demo', () => {
    const named = new Set(paths);
    const unnamed = ['lambda', 'lib', 'local', 'demo'].flatMap(folders).filter((folder) => !named.has(folder));
    expect(unnamed).toEqual([]);
  });
});
