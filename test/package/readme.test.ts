import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
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
    const targets = [...text.matchAll(/\]\(([^)\s#]+)(?:#[^)]*)?\)/g)].map(([, target]) => target!).filter((target) => !/^[a-z]+:/.test(target));
    expect(
      targets.filter((target) => !existsSync(join(folder, target))),
      `${document} links to files that do not exist`,
    ).toEqual([]);
  });

  it.each(BLOCKS)('$document shows $path exactly as it is', ({ document, path, body }) => {
    const file = join(REPOSITORY, path);
    expect(existsSync(file), `${path} does not exist`).toBe(true);
    expect(body, `${document}'s block for ${path} differs from the file: copy the file into ${document}`).toBe(readFileSync(file, 'utf8'));
  });
});
