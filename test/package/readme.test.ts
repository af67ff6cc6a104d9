import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, posix } from 'node:path';
import { describe, expect, it } from 'vitest';

const REPOSITORY = join(import.meta.dirname, '../..');
/** The README and the guides in docs/ (api.md is generated from the declarations). */
const DOCUMENTS = [
  'README.md',
  ...readdirSync(join(REPOSITORY, 'docs'))
    .filter((name) => name.endsWith('.md') && name !== 'api.md')
    .map((name) => `docs/${name}`),
];

/** Every `<!-- file: path -->` marker and the fenced block right after it, in every document. */
const TEXTS = DOCUMENTS.map((document) => ({ document, text: readFileSync(join(REPOSITORY, document), 'utf8') }));
const BLOCKS = TEXTS.flatMap(({ document, text }) =>
  [...text.matchAll(/<!-- file: (\S+) -->\n```\w*\n([\s\S]*?)```\n/g)].map(([, path, body]) => ({ document, path: path!, body: body! })),
);

/** The relative targets of a Markdown text's links (an anchor dropped), leaving out URLs (`https:`, `mailto:`). */
function relativeLinks(text: string): string[] {
  return [...text.matchAll(/\]\(([^)\s#]+)(?:#[^)]*)?\)/g)].map(([, target]) => target!).filter((target) => !/^[a-z]+:/.test(target));
}

describe("the README's examples are the example apps' files", () => {
  it('marks its file-backed examples', () => {
    expect(BLOCKS.map((block) => block.path)).toEqual(
      expect.arrayContaining(['examples/esm-app/src/payments-worker.ts', 'examples/esm-app/lib/payments-stack.ts', 'examples/cdk-app/lib/cdk-app-stack.ts']),
    );
    for (const { document, text } of TEXTS) {
      expect(text.match(/<!-- file: /g)?.length ?? 0, `${document}: a file marker without its fenced block`).toBe(
        BLOCKS.filter((block) => block.document === document).length,
      );
    }
  });

  it.each(TEXTS)('$document links only to files that exist', ({ document, text }) => {
    const folder = dirname(join(REPOSITORY, document));
    expect(
      relativeLinks(text).filter((target) => !existsSync(join(folder, target))),
      `${document} links to files that do not exist`,
    ).toEqual([]);
  });

  it.each(BLOCKS)('$document shows $path exactly as it is', ({ document, path, body }) => {
    const file = join(REPOSITORY, path);
    expect(existsSync(file), `${path} does not exist`).toBe(true);
    expect(body, `${document}'s block for ${path} differs from the file: copy the file into ${document}`).toBe(readFileSync(file, 'utf8'));
  });
});

describe('what npm ships', () => {
  // What `npm publish` would put in the tarball, by npm's own reckoning of "files" (no build needed: the
  // documents are sources), and every folder on the way to a file, as a link may name a folder.
  const [{ files }] = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: REPOSITORY, encoding: 'utf8' })) as [
    { files: Array<{ path: string }> },
  ];
  const shipped = new Set(files.map((file) => file.path));
  const folders = new Set(
    [...shipped].flatMap((path) =>
      path
        .split('/')
        .slice(0, -1)
        .map((_, i, parts) => parts.slice(0, i + 1).join('/')),
    ),
  );
  const documents = [...shipped].filter((path) => path.endsWith('.md'));

  it('ships the README and the guides', () => {
    expect(documents).toEqual(expect.arrayContaining(['README.md', 'docs/local-testing.md', 'docs/choosing-a-transport.md']));
  });

  it.each(documents)("%s links only to what the tarball holds: an installed user's copy has no other file", (document) => {
    const text = readFileSync(join(REPOSITORY, document), 'utf8');
    const unreachable = relativeLinks(text).filter((target) => {
      const path = posix.normalize(posix.join(posix.dirname(document), target)).replace(/\/$/, '');
      return !shipped.has(path) && !folders.has(path);
    });
    expect(unreachable, `${document} links to files the package leaves out: ship them ("files" in package.json) or drop the link`).toEqual([]);
  });
});
