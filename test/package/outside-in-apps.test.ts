import { readFile, readdir, rename, stat, writeFile } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deployedMigrationSets } from '../../lambda/functions/migration/deployed-migrations.js';
import { migrationSets } from '../../lambda/functions/migration/migrate.js';
import { applyMigrations } from '../../lambda/inbox/sql/schema.js';
import { inboxFixture, sqsRecord } from '../support/inbox.js';
import type { InboxFixture } from '../support/inbox.js';
import { functionBundle, installApp, migrationProperties, ownTypeErrors, packTarball, removeApp, run, succeeded, userEnvironment } from './apps.js';

/**
 * The packed package in two throwaway apps outside the repository (examples/esm-app, an ES module app;
 * examples/cdk-app, the CommonJS app `cdk init app --language typescript` lays out): each type-checks under a
 * strict tsconfig, loads the package from plain JavaScript, synthesizes its stack with the README's constructs,
 * and the synthesized bundle of its own handler applies a message once against the local Data API. Part of
 * the outside-in test (outside-in.test.ts says what the whole holds).
 */

/** Imports the synthesized bundle, the way Lambda loads it, and invokes it twice with one message. */
const INVOKE_BUNDLE = `
const [bundle, event] = process.argv.slice(2);
const { handler } = await import(new URL('file://' + bundle).href);
const context = { functionName: 'payments', awsRequestId: 'local', getRemainingTimeInMillis: () => 60_000 };
const first = await handler(JSON.parse(event), context);
const second = await handler(JSON.parse(event), context);
process.stdout.write(JSON.stringify({ node: process.version, first, second }));
`;

/** A CDK app of the package's own functions only: the database (migration), the cleanup and the outbox relay. */
const PACKAGE_ONLY_APP = `
import { App, Duration, Stack } from 'aws-cdk-lib';
import { InboxCleanup, InboxDatabase, InboxDsqlDatabase, InboxOutboxRelay } from 'sqs-inbox/cdk';
const app = new App({ outdir: process.argv[2] });
const stack = new Stack(app, 'PackageOnly', { env: { account: '123456789012', region: 'eu-west-1' } });
const database = new InboxDatabase(stack, 'Inbox');
new InboxCleanup(stack, 'Cleanup', { database, retention: Duration.days(30) });
new InboxOutboxRelay(stack, 'Relay', { database, consumers: [] });
const dsql = new InboxDsqlDatabase(stack, 'Dsql');
new InboxCleanup(stack, 'DsqlCleanup', { database: dsql, retention: Duration.days(30) });
app.synth();
`;

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

/**
 * The ES module code (index.mjs) of every function of the stack the CDK synthesized into `outdir`: the package's
 * functions; aws-cdk-lib's own (the custom resource provider's, log retention's) ship index.js.
 */
async function functionCodes(outdir: string, stack: string): Promise<string[]> {
  const template = JSON.parse(await readFile(join(outdir, `${stack}.template.json`), 'utf8')) as {
    Resources: Record<string, { Type: string; Properties?: { Code?: { S3Key?: string } } }>;
  };
  const assets = Object.values(template.Resources)
    .filter((resource) => resource.Type === 'AWS::Lambda::Function' && typeof resource.Properties?.Code?.S3Key === 'string')
    .map((fn) => join(outdir, `asset.${fn.Properties!.Code!.S3Key!.replace(/\.zip$/, '')}`, 'index.mjs'));
  const modules = [];
  for (const asset of assets) if (await exists(asset)) modules.push(await readFile(asset, 'utf8'));
  return modules;
}

let tarball: string;
beforeAll(async () => {
  tarball = await packTarball();
}, 120_000);

interface AppCase {
  readonly name: string;
  readonly module: 'esm' | 'commonjs';
  readonly strictTsconfig: string;
  readonly stack: string;
  /** The app's own synth command (cdk.json's "app" runs it for `cdk synth`). */
  readonly synth: readonly string[];
  /** The entries the app has the optional peers of: the ESM app installs the local runtime's, the CDK app does not. */
  readonly entries: readonly string[];
  /** The app's own vitest tests: the README's "your own handler through the faults" test, and its stream and outbox siblings. */
  readonly ownTests: boolean;
  /** Whether its InboxDatabase creates public.payments from the app's own migration files. */
  readonly ownMigrations: boolean;
}

const APPS: readonly AppCase[] = [
  {
    name: 'esm-app',
    module: 'esm',
    strictTsconfig: 'tsconfig.strict.json',
    stack: 'PaymentsStack',
    synth: ['npx', 'tsx', 'bin/app.ts'],
    entries: ['sqs-inbox', 'sqs-inbox/producer', 'sqs-inbox/outbox', 'sqs-inbox/cdk', 'sqs-inbox/local'],
    ownTests: true,
    ownMigrations: true,
  },
  {
    name: 'cdk-app',
    module: 'commonjs',
    strictTsconfig: 'tsconfig.strict.json',
    stack: 'CdkAppStack',
    synth: ['npx', 'cdk', 'synth', '--quiet', '--no-notices'],
    entries: ['sqs-inbox', 'sqs-inbox/cdk', 'sqs-inbox/local'],
    ownTests: false,
    ownMigrations: false,
  },
];

describe.each(APPS)('the packed package in $name ($module)', ({ name, module, strictTsconfig, stack, synth, entries, ownTests, ownMigrations }) => {
  let app: string;
  let fixture: InboxFixture | undefined;

  beforeAll(async () => {
    app = await installApp(name, tarball);
  }, 300_000);

  afterAll(async () => {
    await fixture?.close();
    await removeApp(app);
  });

  it('type-checks its own code against our declarations under a strict tsconfig', async () => {
    const tsconfig = JSON.parse(await readFile(join(app, strictTsconfig), 'utf8')) as { compilerOptions: Record<string, unknown> };
    const base = (JSON.parse(await readFile(join(app, 'tsconfig.json'), 'utf8')) as { compilerOptions: Record<string, unknown> }).compilerOptions;
    expect({ ...base, ...tsconfig.compilerOptions }).toMatchObject({
      strict: true,
      exactOptionalPropertyTypes: true,
      noPropertyAccessFromIndexSignature: true,
      module: 'NodeNext',
      skipLibCheck: false,
    });
    const checked = await run(app, 'npx', ['tsc', '-p', strictTsconfig, '--noEmit']);
    expect(ownTypeErrors(checked.stdout + checked.stderr)).toEqual([]);
    // With the app's own tsconfig (skipLibCheck on, as cdk init sets it) nothing at all is reported.
    succeeded(await run(app, 'npx', ['tsc', '-p', 'tsconfig.json', '--noEmit']), `tsc -p tsconfig.json in ${name}`);
  }, 120_000);

  it(`loads every entry from plain JavaScript with ${module === 'esm' ? 'import' : 'require'}`, async () => {
    const script =
      module === 'esm'
        ? `const names = {}; for (const e of ${JSON.stringify(entries)}) names[e] = Object.keys(await import(e)).length; console.log(JSON.stringify(names));`
        : `const names = {}; for (const e of ${JSON.stringify(entries)}) names[e] = Object.keys(require(e)).length; console.log(JSON.stringify(names));`;
    const args = module === 'esm' ? ['--input-type=module', '-e', script] : ['-e', script];
    const loaded = succeeded(await run(app, process.execPath, args), 'loading the entries');
    const counts = JSON.parse(loaded.stdout) as Record<string, number>;
    for (const entry of entries) expect(counts[entry], entry).toBeGreaterThan(0);
  }, 60_000);

  it('synthesizes its stack, and the bundle of its own handler applies a message exactly once', async () => {
    const [command, ...args] = synth;
    succeeded(await run(app, command!, args, userEnvironment({ CDK_OUTDIR: 'cdk.out' })), `synth in ${name}`);
    const bundle = await functionBundle(app, stack, 'payments');

    fixture = await inboxFixture(`outside_in_${name.replace('-', '_')}`);
    if (ownMigrations) {
      // The app's SQL file reached the migration custom resource; applied as the migration function applies it.
      const migration = await migrationProperties(app, stack);
      expect(JSON.stringify(migration.Sets)).toContain('CREATE TABLE public.payments');
      await applyMigrations(fixture.session, migrationSets(migration.Migrations, deployedMigrationSets(migration.Sets)));
    } else {
      await fixture.query('CREATE TABLE public.payments (payment_id text NOT NULL, amount_cents int NOT NULL)');
    }
    const record = sqsRecord({ body: { paymentId: 'pay-417', amountCents: 1250 }, key: 'payment-pay-417' });
    await writeFile(join(app, 'invoke.mjs'), INVOKE_BUNDLE);
    const invoked = succeeded(
      await run(
        app,
        process.execPath,
        ['invoke.mjs', bundle, JSON.stringify({ Records: [record] })],
        userEnvironment({
          INBOX_DATA_API_ENDPOINT: fixture.server.endpoint,
          INBOX_RESOURCE_ARN: fixture.server.resourceArn,
          INBOX_SECRET_ARN: fixture.server.secretArn,
          INBOX_DATABASE: fixture.server.database,
          INBOX_CONSUMER: 'payments',
          AWS_REGION: 'us-east-1',
          AWS_ACCESS_KEY_ID: 'local',
          AWS_SECRET_ACCESS_KEY: 'local',
          POWERTOOLS_METRICS_DISABLED: 'true',
          POWERTOOLS_LOG_LEVEL: 'SILENT',
        }),
      ),
      'invoking the synthesized bundle',
    );
    const outcome = JSON.parse(invoked.stdout) as { node: string; first: unknown; second: unknown };
    expect(outcome.node).toBe(process.version);
    expect(outcome.first).toEqual({ batchItemFailures: [] });
    expect(outcome.second).toEqual({ batchItemFailures: [] });
    expect(await fixture.query('SELECT payment_id, amount_cents FROM public.payments')).toEqual([{ payment_id: 'pay-417', amount_cents: 1250 }]);
    expect(await fixture.query("SELECT message_id FROM inbox.consumed_message WHERE consumer_name = 'payments'")).toEqual([{ message_id: 'payment-pay-417' }]);
  }, 300_000);

  it("deploys the package's own functions as its prebuilt assets: a synth of them needs no esbuild", async () => {
    // Arrange: a stack of the package's functions only, and no esbuild anywhere the CDK looks for one (its module,
    // its platform binary, node_modules/.bin): NodejsFunction would fail to bundle without it (or fall back to Docker).
    await writeFile(join(app, 'package-only.mjs'), PACKAGE_ONLY_APP);
    const hidden = ['esbuild', '@esbuild', join('.bin', 'esbuild')].map((path) => join(app, 'node_modules', path));
    const moved: string[] = [];
    let synthesized: Awaited<ReturnType<typeof run>> | undefined;
    try {
      for (const path of hidden) {
        if (await exists(path)) {
          await rename(path, `${path}.hidden`);
          moved.push(path);
        }
      }
      // Act
      // Nor on PATH: npx put this repository's node_modules/.bin there, where the CDK would find our esbuild.
      const path = (userEnvironment().PATH ?? '').split(delimiter).filter((folder) => !folder.includes('node_modules'));
      synthesized = await run(app, process.execPath, ['package-only.mjs', 'cdk.out.package-only'], userEnvironment({ PATH: path.join(delimiter) }));
    } finally {
      for (const path of moved) await rename(`${path}.hidden`, path);
    }

    // Assess: the synth succeeded, and each function's code is the package's prebuilt bundle, byte for byte.
    expect(moved.length, 'the app installs esbuild for its own handlers').toBeGreaterThan(0);
    succeeded(synthesized, `synth of the package's functions in ${name} without esbuild`);
    const prebuilt = join(app, 'node_modules', 'sqs-inbox', 'dist', 'lib', 'assets');
    const expected = Object.fromEntries(
      await Promise.all((await readdir(prebuilt)).map(async (asset) => [asset, await readFile(join(prebuilt, asset, 'index.mjs'), 'utf8')] as const)),
    );
    const deployed = await functionCodes(join(app, 'cdk.out.package-only'), 'PackageOnly');
    expect(Object.keys(expected).sort()).toEqual(['dsql', 'migration', 'outbox-sweeper', 'purge']);
    expect(deployed.map((code) => Object.keys(expected).find((asset) => expected[asset] === code)).sort()).toEqual([
      // The DSQL schema function and the DSQL purge: one bundle, two functions (each with a role of its own).
      'dsql',
      'dsql',
      'migration',
      'outbox-sweeper',
      'purge',
    ]);
  }, 300_000);

  // Only the ESM app has tests of its own; a test defined conditionally is not counted as skipped.
  if (ownTests)
    it('runs its own tests of its SQS, stream and outbox handlers through the faults, with embedded PostgreSQL from its own install', async () => {
      const tested = await run(app, 'npx', ['vitest', 'run'], userEnvironment({ CI: 'true', NO_COLOR: '1', FORCE_COLOR: undefined }));
      succeeded(tested, `vitest in ${name}`);
      const summary = stripVTControlCharacters(tested.stdout);
      expect(summary).toMatch(/Tests\s+14 passed \(14\)/);
      expect(summary).not.toMatch(/failed|skipped/);
    }, 600_000);
});
