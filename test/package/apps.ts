import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { chmod, cp, mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { promisify } from 'node:util';

const exec = promisify(execFile);
const REPOSITORY = join(import.meta.dirname, '../..');

/** What a finished command printed. */
export interface Ran {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * The environment a user's shell would give: no variables from the `npm test` that runs us (npm_config_*
 * would steer the apps' own npm), none of vitest's, and the Node that runs this test first on PATH, so
 * that `npx`, tsx and the apps' scripts run on the same Node version (20 or 22) as the test.
 */
export function userEnvironment(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (/^(npm_|VITEST|NODE_OPTIONS$|INIT_CWD$|DATABASE_URL$|INBOX_|POWERTOOLS_)/.test(name)) continue;
    env[name] = value;
  }
  env.PATH = `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}`;
  env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  for (const [name, value] of Object.entries(extra)) {
    if (value === undefined) delete env[name];
    else env[name] = value;
  }
  return env;
}

/** Runs a command in `cwd` and resolves with its exit code and output; never rejects on a non-zero exit. */
export async function run(cwd: string, command: string, args: readonly string[], env: NodeJS.ProcessEnv = userEnvironment()): Promise<Ran> {
  try {
    const { stdout, stderr } = await exec(command, [...args], { cwd, env, maxBuffer: 64 * 1024 * 1024, timeout: 600_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number | string; stdout?: string; stderr?: string; message: string };
    return { code: typeof failed.code === 'number' ? failed.code : 1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? failed.message };
  }
}

/** Throws with the command's output when it failed, so a test's failure shows why. */
export function succeeded(ran: Ran, what: string): Ran {
  if (ran.code !== 0) throw new Error(`${what} exited ${ran.code}\n--- stdout\n${ran.stdout.slice(-6000)}\n--- stderr\n${ran.stderr.slice(-6000)}`);
  return ran;
}

/**
 * Packs this repository as npm would publish it (dist/ must be built: `npm test` builds it first) into a
 * fresh folder outside the repository, and returns the tarball's path.
 */
export async function packTarball(): Promise<string> {
  const folder = await mkdtemp(join(tmpdir(), 'sqs-inbox-pack-'));
  const packed = succeeded(await run(REPOSITORY, 'npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', folder]), 'npm pack');
  const [{ filename }] = JSON.parse(packed.stdout) as [{ filename: string }];
  return join(folder, filename);
}

/**
 * Copies `examples/<name>` to a fresh folder outside the repository, points its `sqs-inbox` dependency at
 * the tarball, and installs it with npm as its user would. Nothing in it leads back to the repository.
 */
export async function installApp(name: string, tarball: string): Promise<string> {
  const app = await appFolder(name);
  await cp(join(REPOSITORY, 'examples', name), app, { recursive: true, filter: (source) => !/node_modules|cdk\.out/.test(source) });
  const manifestPath = join(app, 'package.json');
  const manifest = JSON.parse(await readFile(manifestPath, 'utf8')) as { dependencies: Record<string, string> };
  manifest.dependencies['sqs-inbox'] = `file:${tarball}`;
  await writeFile(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
  succeeded(await run(app, 'npm', ['install', '--no-audit', '--no-fund', '--prefer-offline']), `npm install in ${name}`);
  return app;
}

/** The CDK CLI this repository pins, whose `cdk init` templates a new app is made from. */
const CDK_CLI = join(REPOSITORY, 'node_modules/aws-cdk/bin/cdk');

/**
 * A new app exactly as `cdk init app --language typescript` lays it out (from the CLI this repository pins,
 * its files only: the install is ours), with the user's own files added (`files`: app path -> repository
 * path), the tarball as its `sqs-inbox` dependency, and `devDependencies` installed beside the template's.
 * Then `npm install-scripts approve` for `approve`, as the README tells users to.
 */
export async function cdkInitApp(
  name: string,
  tarball: string,
  files: Readonly<Record<string, string>>,
  devDependencies: readonly string[],
  approve: readonly string[],
): Promise<string> {
  const app = await appFolder(name);
  await mkdir(app);
  succeeded(await run(app, process.execPath, [CDK_CLI, 'init', 'app', '--language', 'typescript', '--generate-only']), 'cdk init');
  for (const [target, source] of Object.entries(files)) await cp(join(REPOSITORY, source), join(app, target), { recursive: true });
  const manifestPath = join(app, 'package.json');
  const manifest = JSON.parse(await readFile(manifestPath, 'utf8')) as { dependencies: Record<string, string> };
  manifest.dependencies['sqs-inbox'] = `file:${tarball}`;
  await writeFile(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
  const installed = await run(app, 'npm', ['install', '--save-dev', '--no-audit', '--no-fund', '--prefer-offline', ...devDependencies]);
  succeeded(installed, `npm install in ${name}`);
  if (approve.length > 0) succeeded(await run(app, 'npm', ['install-scripts', 'approve', ...approve]), `npm install-scripts approve in ${name}`);
  return app;
}

/**
 * A fresh folder for an app, readable by other users as a project folder is: as root, embedded PostgreSQL
 * runs as the `postgres` OS user, which must reach the app's node_modules (mkdtemp makes it 0700).
 */
export async function appFolder(name: string): Promise<string> {
  const folder = await mkdtemp(join(tmpdir(), `sqs-inbox-${name}-`));
  await chmod(folder, 0o755);
  return join(folder, name);
}

/** Removes an app's folder (the parent folder made for it). */
export async function removeApp(app: string | undefined): Promise<void> {
  if (app) await rm(dirname(app), { recursive: true, force: true });
}

/**
 * The type errors `tsc` reports for the app's own files and for sqs-inbox's declarations. Errors inside
 * other packages' declarations are not ours to fix: aws-cdk-lib's own .d.ts files do not compile under
 * `exactOptionalPropertyTypes` with `skipLibCheck: false`.
 */
export function ownTypeErrors(output: string): string[] {
  return output
    .split('\n')
    .filter((line) => /^\S.*\(\d+,\d+\): error TS/.test(line))
    .filter((line) => !line.startsWith('node_modules/') || line.startsWith('node_modules/sqs-inbox/'));
}

/** The resources of the stack the app synthesized into cdk.out. */
async function synthesizedResources<P>(app: string, stack: string): Promise<Array<{ Type: string; Properties?: P }>> {
  const template = JSON.parse(await readFile(join(app, 'cdk.out', `${stack}.template.json`), 'utf8')) as {
    Resources: Record<string, { Type: string; Properties?: P }>;
  };
  return Object.values(template.Resources);
}

/** The properties of the synthesized stack's `Custom::InboxMigration`: what the migration function gets at deploy. */
export async function migrationProperties(app: string, stack: string): Promise<{ Migrations: string; Sets?: unknown }> {
  const resources = await synthesizedResources<{ Migrations: string; Sets?: unknown }>(app, stack);
  const migration = resources.find((resource) => resource.Type === 'Custom::InboxMigration');
  if (migration?.Properties === undefined) throw new Error(`${stack}: no Custom::InboxMigration`);
  return migration.Properties;
}

/** The bundled code of the synthesized function whose `INBOX_CONSUMER` is `consumer`. */
export async function functionBundle(app: string, stack: string, consumer: string): Promise<string> {
  const resources = await synthesizedResources<{ Environment?: { Variables?: Record<string, unknown> }; Code?: { S3Key?: unknown } }>(app, stack);
  const fn = resources.find(
    (resource) => resource.Type === 'AWS::Lambda::Function' && resource.Properties?.Environment?.Variables?.INBOX_CONSUMER === consumer,
  );
  const key = fn?.Properties?.Code?.S3Key;
  if (typeof key !== 'string') throw new Error(`${stack}: no function with INBOX_CONSUMER=${consumer} and a file asset`);
  const asset = join(app, 'cdk.out', `asset.${key.replace(/\.zip$/, '')}`);
  const files = await readdir(asset);
  const entry = files.find((file) => file === 'index.mjs' || file === 'index.js');
  if (!entry) throw new Error(`${asset} holds no index.mjs: ${files.join(', ')}`);
  return join(asset, entry);
}

/** The versions this repository pins, so that an app installs what was measured and npm's cache holds. */
export const REPOSITORY_MANIFEST = JSON.parse(readFileSync(join(REPOSITORY, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  overrides: Record<string, unknown>;
};
/** The repository's devDependencies, by name. */
export const REPOSITORY_VERSIONS = REPOSITORY_MANIFEST.devDependencies;
/** The repository's dependencies, by name. */
export const REPOSITORY_DEPENDENCIES = REPOSITORY_MANIFEST.dependencies;
