import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Duration } from 'aws-cdk-lib';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { describe, expect, it } from 'vitest';
import { InboxConsumer, InboxDatabase, InboxDatabaseProxy, InboxSources, PeerDependencyError } from '../../lib/index.js';
import { absentSigners } from '../../lib/consumer/signer-peers.js';
import { FIXTURE_HANDLER, testStack } from './support.js';

const REPOSITORY = join(import.meta.dirname, '../..');

/**
 * A handler in a project of its own, outside the repository, that installed no signer: what `cdk init`
 * gives a user who has not run `npm install @aws-sdk/rds-signer`. Its code imports the signer the way
 * sqs-inbox/postgres does, at the first sign-in.
 */
function appWithoutSigners(): string {
  const project = mkdtempSync(join(tmpdir(), 'signer-peers-'));
  mkdirSync(join(project, 'src'));
  writeFileSync(join(project, 'package.json'), '{ "name": "no-signers", "private": true }\n');
  writeFileSync(join(project, 'package-lock.json'), '{ "name": "no-signers", "lockfileVersion": 3, "requires": true, "packages": {} }\n');
  const entry = join(project, 'src', 'worker.ts');
  writeFileSync(
    entry,
    "export const handler = async () => (process.env.INBOX_PG_IAM_AUTH === 'true' ? (await import('@aws-sdk/rds-signer')).Signer.name : 'no sign-in');\n",
  );
  return entry;
}

describe('the signers a bundled handler loads at its first sign-in', () => {
  it('fails the synth of a consumer behind RDS Proxy with IAM when @aws-sdk/rds-signer is not installed, naming the package and the command', () => {
    const entry = appWithoutSigners();
    const make = () => {
      const stack = testStack('Signers');
      const database = new InboxDatabase(stack, 'Db');
      const proxy = new InboxDatabaseProxy(stack, 'Proxy', { database });
      const source = InboxSources.sqs(new sqs.Queue(stack, 'Queue', { visibilityTimeout: Duration.minutes(3) }));
      return new InboxConsumer(stack, 'Worker', { database, proxy, source, consumerName: 'worker', entry });
    };
    expect(make).toThrow(PeerDependencyError);
    expect(make).toThrow(
      'sqs-inbox/postgres needs the package "@aws-sdk/rds-signer", which is not installed. Fix: npm install @aws-sdk/rds-signer ' +
        '(the function of Signers/Worker/Handler bundles it: INBOX_PG_IAM_AUTH=true: it signs in to RDS Proxy with IAM authentication).',
    );
  });

  it('leaves a signer the app has not installed out of the bundle of a function that never signs in with it: esbuild bundles it', () => {
    // `cdk synth` in the user's project (the CDK bundles from the project its current directory is in), with
    // the built constructs, as an app that installed the package runs them.
    const entry = appWithoutSigners();
    const project = dirname(dirname(entry));
    // The esbuild a user installs as a dev dependency (the README's install table): here the repository's.
    mkdirSync(join(project, 'node_modules', '.bin'), { recursive: true });
    symlinkSync(join(REPOSITORY, 'node_modules', 'esbuild'), join(project, 'node_modules', 'esbuild'));
    symlinkSync(join(REPOSITORY, 'node_modules', 'esbuild', 'bin', 'esbuild'), join(project, 'node_modules', '.bin', 'esbuild'));
    const synth = `
      import { createRequire } from 'node:module';
      const { App, Duration, Stack } = createRequire(${JSON.stringify(join(REPOSITORY, 'package.json'))})('aws-cdk-lib');
      const { InboxFunction } = await import(${JSON.stringify(pathToFileURL(join(REPOSITORY, 'dist/lib/index.js')).href)});
      const app = new App({ outdir: 'cdk.out' });
      new InboxFunction(new Stack(app, 'Bundled'), 'Worker', { entry: ${JSON.stringify(entry)}, environment: {}, timeout: Duration.seconds(30), description: 'no sign-in' });
      app.synth();`;
    const ran = spawnSync(process.execPath, ['--input-type=module', '-e', synth], {
      cwd: project,
      encoding: 'utf8',
    });
    expect(ran.stderr).not.toContain('Could not resolve');
    expect(ran.status, ran.stderr).toBe(0);
    const bundle = readdirSync(join(project, 'cdk.out')).find((name) => name.startsWith('asset.'));
    const code = readFileSync(join(project, 'cdk.out', bundle!, 'index.mjs'), 'utf8');
    // Left to the runtime, where sqs-inbox's PeerDependencyError names it should it ever load.
    expect(code).toContain('import("@aws-sdk/rds-signer")');
  }, 120_000);

  it('leaves out only what is missing where the entry is, and needs nothing a function does not sign in with', () => {
    const outside = appWithoutSigners();
    expect(absentSigners(outside, {}, 'Test/Worker')).toEqual(['@aws-sdk/rds-signer', '@aws-sdk/dsql-signer']);
    expect(() => absentSigners(outside, { INBOX_DSQL_ENDPOINT: 'abc.dsql.us-east-1.on.aws' }, 'Test/Worker')).toThrow(
      'sqs-inbox/dsql needs the package "@aws-sdk/dsql-signer", which is not installed. Fix: npm install @aws-sdk/dsql-signer (the function of Test/Worker bundles it: INBOX_DSQL_ENDPOINT is set: it signs in to Aurora DSQL).',
    );
    // The repository installs both: nothing left out, whatever the function signs in with.
    expect(absentSigners(FIXTURE_HANDLER, { INBOX_PG_IAM_AUTH: 'true', INBOX_DSQL_ENDPOINT: 'x' }, 'Test/Worker')).toEqual([]);
  });
});
