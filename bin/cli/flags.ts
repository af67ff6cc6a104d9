// Reading and checking the command line. Every mistake is a UsageError that names the fix; the entry
// prints it, with where the command's help is, and exits 2, before any command has loaded a package.
import { parseArgs } from 'node:util';
import type { ParseArgsConfig } from 'node:util';
import type { InboxConfigError } from '../../lambda/inbox/errors.js';
import { INBOX_ENV } from '../../lambda/inbox/contract.js';

/** A string flag carries an example value for the "e.g." of its misuse messages. */
export type FlagSpec = { readonly type: 'string'; readonly example: string; readonly default?: string } | { readonly type: 'boolean' };
export type FlagSpecs = Readonly<Record<string, FlagSpec>>;
export type Values<F extends FlagSpecs> = {
  readonly [K in keyof F]: F[K] extends { type: 'boolean' } ? boolean : F[K] extends { default: string } ? string : string | undefined;
};

/** The command line is wrong: the CLI names what and how to fix it, points at --help and exits 2. */
export class UsageError extends Error {}

export const DATABASE_FLAGS = {
  'resource-arn': { type: 'string', example: 'arn:aws:rds:us-east-1:123456789012:cluster:orders' },
  'secret-arn': { type: 'string', example: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:orders' },
  database: { type: 'string', example: 'orders' },
  endpoint: { type: 'string', example: 'http://127.0.0.1:8080' },
  schema: { type: 'string', example: 'inbox', default: 'inbox' },
} as const satisfies FlagSpecs;

export type DatabaseValues = Values<typeof DATABASE_FLAGS>;

/** The flag behind each option path that the library's InboxConfigError can name. */
const OPTION_FLAGS: Readonly<Record<string, string>> = {
  'flags.resourceArn': '--resource-arn (or INBOX_RESOURCE_ARN)',
  'flags.secretArn': '--secret-arn (or INBOX_SECRET_ARN)',
  schema: '--schema',
  Migrations: '--sets',
  retentionSeconds: '--retention-seconds',
  batchSize: '--batch-size',
  from: '--from',
  keyColumn: '--key-column',
  keyTemplate: '--key-template',
  deadLetterQueueUrl: '--dlq',
  destinationQueueUrl: '--to',
};

/** Reads the flags of one command; `help` is true when -h or --help is among them, whatever else is wrong. */
export function parseFlags<F extends FlagSpecs>(specs: F, args: string[]): Values<F> & { readonly help: boolean } {
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
    if (!spec)
      throw new UsageError(
        `unknown flag ${token.rawName}: the flags are ${Object.keys(specs)
          .map((flag) => `--${flag}`)
          .join(', ')}`,
      );
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

export function wholeNumber(text: string, flag: string, min: number, max: number, example: string): number {
  const value = /^-?\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `of at least ${min}` : `from ${min} to ${max}`;
    throw new UsageError(`${flag} "${text}" must be a whole number ${range}, e.g. ${flag} ${example}`);
  }
  return value;
}

export function atLeast(text: string, flag: string, min: number, example: string): number {
  return wholeNumber(text, flag, min, Number.MAX_SAFE_INTEGER, example);
}

/**
 * The flags of a command that takes one subcommand (`dlq redrive`, `claims import`), and whether that
 * subcommand was given: its flags come after it, and --help works with or without it.
 */
export function subcommandFlags<F extends FlagSpecs>(
  args: string[],
  specs: F,
  command: string,
  subcommand: string,
  example: string,
): { values: Values<F> & { readonly help: boolean }; run: boolean } {
  const [first, ...rest] = args;
  const named = first !== undefined && !first.startsWith('-');
  const values = parseFlags(specs, named ? rest : args);
  if (values.help) return { values, run: false };
  if (first !== subcommand) {
    throw new UsageError(
      named ? `"${first}" is not a subcommand of ${command}: the one there is is ${subcommand}` : `give a subcommand: ${subcommand}, e.g. ${example}`,
    );
  }
  return { values, run: true };
}

/** Checks a queue URL flag, if given. */
export function queueUrlFlag(value: string | undefined, flag: string, example: string): void {
  if (value !== undefined && !/^https?:\/\/[^/]+\/\d+\/[^/]+$/.test(value)) {
    throw new UsageError(`${flag} "${value}" is not a queue URL: give https://sqs.<region>.amazonaws.com/<account>/<name>, e.g. ${flag} ${example}`);
  }
}

/** Checks the --sqs-endpoint flag, if given. */
export function endpointFlag(value: string | undefined, example: string): void {
  if (value !== undefined && !/^https?:\/\/[^/]+\/?$/.test(value)) {
    throw new UsageError(`--sqs-endpoint "${value}" is not an endpoint URL, e.g. --sqs-endpoint ${example}`);
  }
}

/** Splits a comma-separated list, naming the first entry that is not one of `known`. */
export function namesFrom(text: string, flag: string, known: readonly string[], orElse = ''): string[] {
  const names = text
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean);
  const unknown = names.find((name) => !known.includes(name));
  if (unknown !== undefined) throw new UsageError(`${flag} names "${unknown}", which is not one of: ${known.join(', ')}${orElse}`);
  return names;
}

/** The database flags, each falling back to its INBOX_* variable; the required ones checked before anything loads. */
export function databaseTarget(values: DatabaseValues, env: NodeJS.ProcessEnv) {
  const resourceArn = values['resource-arn'] || env[INBOX_ENV.RESOURCE_ARN];
  const secretArn = values['secret-arn'] || env[INBOX_ENV.SECRET_ARN];
  if (!resourceArn)
    throw new UsageError(
      `--resource-arn (or INBOX_RESOURCE_ARN) is required: the Aurora cluster ARN, e.g. --resource-arn ${DATABASE_FLAGS['resource-arn'].example}`,
    );
  if (!secretArn)
    throw new UsageError(`--secret-arn (or INBOX_SECRET_ARN) is required: the database secret ARN, e.g. --secret-arn ${DATABASE_FLAGS['secret-arn'].example}`);
  const database = values.database || env[INBOX_ENV.DATABASE];
  const endpoint = values.endpoint || env[INBOX_ENV.DATA_API_ENDPOINT];
  return { resourceArn, secretArn, ...(database ? { database } : {}), ...(endpoint ? { endpoint } : {}) };
}

/** The database the flags name, with the local endpoint if any: not the runtime's `DatabaseTarget`, which resolveTarget makes of it. */
export type FlagsTarget = ReturnType<typeof databaseTarget>;

/** A library option error, said in flags: `inbox option "batchSize": ...` becomes `--batch-size ...`. */
export function inFlags(error: InboxConfigError): string {
  const prefix = `inbox option "${error.option}": `;
  const detail = error.message.startsWith(prefix) ? error.message.slice(prefix.length) : error.message;
  return `${OPTION_FLAGS[error.option] ?? error.option} ${detail}`;
}
