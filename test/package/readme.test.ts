import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const REPOSITORY = join(import.meta.dirname, '../..');
const README = readFileSync(join(REPOSITORY, 'README.md'), 'utf8');

/** Every `<!-- file: path -->` marker and the fenced block right after it. */
const BLOCKS = [...README.matchAll(/<!-- file: (\S+) -->\n```\w*\n([\s\S]*?)```\n/g)].map(([, path, body]) => ({ path: path!, body: body! }));

describe("the README's examples are the example apps' files", () => {
  it('marks its file-backed examples', () => {
    expect(BLOCKS.map((block) => block.path)).toEqual(
      expect.arrayContaining(['examples/esm-app/src/payments-worker.ts', 'examples/esm-app/lib/payments-stack.ts', 'examples/cdk-app/lib/cdk-app-stack.ts']),
    );
    expect(README.match(/<!-- file: /g)?.length).toBe(BLOCKS.length);
  });

  it.each(BLOCKS)('shows $path exactly as it is', ({ path, body }) => {
    const file = join(REPOSITORY, path);
    expect(existsSync(file), `${path} does not exist`).toBe(true);
    expect(body, `README.md's block for ${path} differs from the file: copy the file into the README`).toBe(readFileSync(file, 'utf8'));
  });
});
