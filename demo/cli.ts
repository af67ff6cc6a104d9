#!/usr/bin/env node
// The demo's CLI, what `npm start` runs (`node dist/demo/cli.js demo`): the published CLI's commands and
// `demo`. The demo never ships (package.json "files" leaves dist/demo/ out), so neither does this command.
// First: before any command makes an SDK client.
import '../local/quiet-sdk.js';
import { COMMANDS, command } from '../bin/cli/commands.js';
import { UsageError, atLeast, namesFrom } from '../bin/cli/flags.js';
import { exit, failed, runCli } from '../bin/cli/main.js';
import { USAGE } from '../bin/cli/usage.js';
import { FAULTS } from '../local/scenario/fault-schedule.js';
import { STREAM_FAULTS } from '../local/scenario/stream-faults.js';
import { HAND_OFF_FAULTS, PIPELINE_FAULTS } from './pipeline/faults.js';

/** What `sqs-inbox demo --faults` accepts. fault-schedule.ts imports nothing at run time, so this loads no package. */
export const FAULT_NAMES = FAULTS;

/** What `sqs-inbox demo --pipeline --faults` accepts; pipeline/faults.ts loads no package either. */
export const PIPELINE_FAULT_NAMES = PIPELINE_FAULTS;

/** What `sqs-inbox demo --source <stream> --faults` accepts: FAULTS without visibility-expiry and poison; loads no package either. */
export const STREAM_FAULT_NAMES = STREAM_FAULTS;

/** What `sqs-inbox demo --source` accepts: sqs (the default demo) or a stream. */
export const DEMO_SOURCES = ['sqs', 'kinesis', 'dynamodb', 'kafka'] as const;

/** What `sqs-inbox demo --transport` accepts: local/scenario-transport.ts's SCENARIO_TRANSPORTS (test/local/cli.test.ts checks), without loading it. */
export const DEMO_TRANSPORTS = ['data-api', 'postgres', 'dsql'] as const;

export const DEMO_USAGE = `Usage: sqs-inbox demo [flags]

The same orders, faults and consumers, first through the inbox handler, then through the naive
check-apply-record consumer, on embedded PostgreSQL (or DATABASE_URL); a side-by-side table.
Each run works in a database of its own, dropped when it ends (failed or interrupted too).
Exits 1 if the inbox run shows a single double, lost or out-of-order effect.

With --pipeline, orders go through two stages chained by a queue: "ship" ships each order and hands an
"invoice" message on, "invoice" invoices it; the hand-off through the outbox (with its sweeper), then
sent inside the handler, then sent after the commit. Exits 1 if the outbox pipeline shows a double,
lost, out-of-order or phantom (invoiced while not shipped) effect at either stage.

With --source kinesis, dynamodb or kafka, the orders go through that local stream instead, keyed by
customer (4 shards or partitions), into kinesisInbox, dynamoDbInbox or kafkaInbox, then the naive
consumer; the worker crashes after its commits and before the checkpoint (offset commit).

With --transport postgres, the consumers reach PostgreSQL over its wire protocol (node-postgres, as
through RDS Proxy) instead of the local Data API: the same table and faults, injected by the testkit's
wire proxy; the calls per message are then round trips. --pipeline and --source run on the Data API.
With --transport dsql, they reach it through dsql() on the DSQL profile: PostgreSQL held to Aurora
DSQL's rules (repeatable read, its supported SQL, 3,000 rows a transaction), the inbox's tables in their
DSQL form, and 5% of COMMITs failing with DSQL's OCC conflict (40001, OC000), which the runtime runs
again (--conflict-rate sets the share); the table adds the conflicts injected and retried.

Flags:
  --messages N     orders to produce, at least 1                              (default: 2000)
  --seed N         the seed that decides the orders and the faults            (default: 417)
  --faults LIST    faults to inject, comma-separated, or none                 (default: all of them)
                   ${FAULT_NAMES.join(', ')}
                   with --pipeline also: ${HAND_OFF_FAULTS.join(', ')}
  --consumers N    consumers racing on the queue, at least 1                  (default: 3)
                   (with --pipeline: per stage)
  --pipeline       the two-stage demo: ship, then invoice, via the outbox     (default: off)
  --source NAME    where the orders go: ${DEMO_SOURCES.join(', ')}         (default: sqs)
                   (kinesis, dynamodb, kafka: no --pipeline; --consumers is one per shard;
                   --faults from ${STREAM_FAULT_NAMES.join(', ')})
  --transport NAME how the consumers reach PostgreSQL: ${DEMO_TRANSPORTS.join(', ')}   (default: data-api)
  --conflict-rate R with --transport dsql: the share of COMMITs, 0 to 1, failing with an OCC conflict (default: 0.05)
  -h, --help       this help
`;

export async function demoCommand(values: {
  messages: string;
  seed: string;
  faults: string | undefined;
  consumers: string;
  pipeline: boolean;
  source: string;
  transport: string;
  'conflict-rate': string | undefined;
}): Promise<number> {
  const source = values.source;
  if (!(DEMO_SOURCES as readonly string[]).includes(source)) throw new UsageError(`--source "${source}" is not one of: ${DEMO_SOURCES.join(', ')}`);
  if (source !== 'sqs' && values.pipeline) throw new UsageError('--source and --pipeline do not go together: the pipeline demo runs on SQS; give one of them');
  const stream = source !== 'sqs';
  const transport = values.transport;
  if (!(DEMO_TRANSPORTS as readonly string[]).includes(transport))
    throw new UsageError(`--transport "${transport}" is not one of: ${DEMO_TRANSPORTS.join(', ')}`);
  if (transport !== 'data-api' && (stream || values.pipeline)) {
    throw new UsageError(`--transport ${transport} runs the SQS demo; --${stream ? 'source' : 'pipeline'} runs on the Data API: give one of them`);
  }
  const messages = atLeast(values.messages, '--messages', 1, '200');
  const seed = atLeast(values.seed, '--seed', 0, '1');
  const consumers = atLeast(values.consumers, '--consumers', 1, '3');
  const known = values.pipeline ? PIPELINE_FAULT_NAMES : stream ? STREAM_FAULT_NAMES : FAULT_NAMES;
  const given = values.faults ?? known.join(',');
  const faults = given.trim() === 'none' ? [] : namesFrom(given, '--faults', known, '; or give --faults none');
  const { runDemo } = await import('./run.js');
  // Every value explicit: the defaults this CLI documents are the ones that run.
  const mode = values.pipeline ? ['--pipeline'] : stream ? ['--source', source] : [];
  return runDemo([
    '--messages',
    String(messages),
    '--seed',
    String(seed),
    '--faults',
    faults.join(',') || 'none',
    '--consumers',
    String(consumers),
    '--transport',
    transport,
    // runDemo checks it: a share from 0 to 1, and only with --transport dsql.
    ...(values['conflict-rate'] === undefined ? [] : ['--conflict-rate', values['conflict-rate']]),
    ...mode,
  ]);
}

/** The published commands, and `demo`. */
export const DEMO_COMMANDS = {
  demo: command(
    DEMO_USAGE,
    {
      messages: { type: 'string', example: '200', default: '2000' },
      seed: { type: 'string', example: '1', default: '417' },
      // No default: each mode defaults to all of its faults, and --pipeline has more (demoCommand).
      faults: { type: 'string', example: 'drop-commit,poison' },
      consumers: { type: 'string', example: '3', default: '3' },
      pipeline: { type: 'boolean' },
      source: { type: 'string', example: 'kafka', default: 'sqs' },
      transport: { type: 'string', example: 'postgres', default: 'data-api' },
      // No default: only --transport dsql takes it.
      'conflict-rate': { type: 'string', example: '0.05' },
    },
    demoCommand,
  ),
  ...COMMANDS,
};

/** The published CLI's help with the demo's line. */
export const DEMO_CLI_USAGE = USAGE.replace(
  'Commands:\n',
  'Commands:\n  demo        the fault-injection demo (what `npm start` runs): the inbox pattern against the naive one\n',
);

runCli(DEMO_COMMANDS, DEMO_CLI_USAGE, process.argv.slice(2)).then(exit, (error: unknown) => exit(failed(undefined, error)));
