// The command table: each command's usage, its flags and what runs them. The implementations import
// their heavy modules when they run, so loading this table loads no package.
import { dataApiCommand, localCommand } from './local-commands.js';
import { migrateCommand, purgeCommand } from './database-commands.js';
import { parkedCommand } from './parked-commands.js';
import { dlqCommand } from './dlq-commands.js';
import { claimsCommand } from './claims-commands.js';
import { DATABASE_FLAGS, parseFlags } from './flags.js';
import type { FlagSpecs, Values } from './flags.js';
import { CLAIMS_USAGE, DATA_API_USAGE, DLQ_USAGE, LOCAL_USAGE, MIGRATE_USAGE, PARKED_USAGE, PURGE_USAGE } from './usage.js';

export interface Command {
  readonly usage: string;
  /** Validates the arguments, then loads what the command needs and runs it to an exit code. */
  readonly run: (args: string[]) => Promise<number>;
}

/** Ties a command's flag specs to its implementation, so `run` sees typed values. */
export function command<F extends FlagSpecs>(usage: string, specs: F, run: (values: Values<F>) => Promise<number>): Command {
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

export const COMMANDS: Readonly<Record<string, Command>> = {
  local: command(LOCAL_USAGE, { json: { type: 'boolean' } }, localCommand),
  'data-api': command(
    DATA_API_USAGE,
    {
      port: { type: 'string', example: '8080' },
      'database-url': { type: 'string', example: 'postgres://postgres:postgres@127.0.0.1:5432/postgres' },
      json: { type: 'boolean' },
    },
    dataApiCommand,
  ),
  migrate: command(
    MIGRATE_USAGE,
    { ...DATABASE_FLAGS, sets: { type: 'string', example: 'inbox', default: 'inbox' }, dir: { type: 'string', example: 'migrations/payments' } },
    migrateCommand,
  ),
  purge: command(
    PURGE_USAGE,
    {
      ...DATABASE_FLAGS,
      'retention-seconds': { type: 'string', example: '1209600' },
      'batch-size': { type: 'string', example: '5000' },
      'allow-short-retention': { type: 'boolean' },
    },
    purgeCommand,
  ),
  // Its subcommand and IDs are positionals, which command() refuses: it reads its own arguments.
  parked: { usage: PARKED_USAGE, run: parkedCommand },
  dlq: { usage: DLQ_USAGE, run: dlqCommand },
  claims: { usage: CLAIMS_USAGE, run: claimsCommand },
};
