import { describe, expect, it } from 'vitest';

describe('the import entry of sqs-inbox/cdk (lib/cdk.ts)', () => {
  it('exports every value of lib/index.ts, the same ones', async () => {
    const [entry, constructs] = await Promise.all([import('../../lib/cdk.js'), import('../../lib/index.js')]);
    expect(Object.keys(entry).sort()).toEqual(Object.keys(constructs).sort());
    for (const name of Object.keys(constructs)) expect(entry[name as keyof typeof entry], name).toBe(constructs[name as keyof typeof constructs]);
  });
});
