import { existsSync, readFileSync } from 'node:fs';

/** The version in the package's package.json. */
export function version(): string {
  // The nearest package.json above this module, as Node scopes a module to its package: that is the
  // package root from dist/bin/cli/ (this repository, an installed package) and from bin/cli/ (the source
  // tree) alike, where a fixed relative path would be right for only one of them.
  let folder = new URL('./', import.meta.url);
  for (;;) {
    const manifest = new URL('package.json', folder);
    if (existsSync(manifest)) return (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version;
    const parent = new URL('../', folder);
    if (parent.href === folder.href) throw new Error(`no package.json above ${import.meta.url}`);
    folder = parent;
  }
}
