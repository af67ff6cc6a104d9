import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/** The API report of `sqs-inbox/cdk`, which test/package/api-docs.test.ts keeps equal to what API Extractor writes. */
const REPORT = readFileSync(new URL('../../etc/sqs-inbox-cdk.api.md', import.meta.url), 'utf8');

describe('the import entry of sqs-inbox/cdk (lib/cdk.ts)', () => {
  it('exports every value of lib/index.ts, the same ones', async () => {
    const [entry, constructs] = await Promise.all([import('../../lib/cdk.js'), import('../../lib/index.js')]);
    expect(Object.keys(entry).sort()).toEqual(Object.keys(constructs).sort());
    for (const name of Object.keys(constructs)) expect(entry[name as keyof typeof entry], name).toBe(constructs[name as keyof typeof constructs]);
  });
});

describe('the surface of sqs-inbox/cdk', () => {
  it('names every type a user meets in a signature, and every link resolves (no forgotten export, no unresolved link)', () => {
    expect(REPORT.match(/^.*\((ae-forgotten-export|ae-unresolved-link)\).*$/gm) ?? []).toEqual([]);
  });

  it('keeps within its budget of 45 names (npm run api:count)', () => {
    const names = REPORT.match(/^export (?:declare )?(?:abstract )?(?:class|interface|type|function|const|enum) (\w+)/gm) ?? [];
    expect(names.length).toBeGreaterThan(30);
    expect(names.length).toBeLessThanOrEqual(45);
  });
});
