// `sqs-inbox claims import`: seeds a consumer's claims from a hand-rolled dedup table, for the cut-over to the
// inbox (docs/cut-over.md). Flags are checked before the library and the database are loaded.
import { session } from './database-commands.js';
import { DATABASE_FLAGS, UsageError, databaseTarget, subcommandFlags, wholeNumber } from './flags.js';
import type { FlagSpecs } from './flags.js';
import { printable, printableJson } from './printable.js';
import { CLAIMS_USAGE } from './usage.js';

export const CLAIMS_FLAGS = {
  from: { type: 'string', example: 'public.processed_messages' },
  consumer: { type: 'string', example: 'order-worker' },
  'key-column': { type: 'string', example: 'message_id' },
  'key-template': { type: 'string', example: 'order:{key}' },
  where: { type: 'string', example: 'consumer=order-worker' },
  'batch-size': { type: 'string', example: '1000' },
  'dry-run': { type: 'boolean' },
  json: { type: 'boolean' },
  ...DATABASE_FLAGS,
} as const satisfies FlagSpecs;

export async function claimsCommand(args: string[]): Promise<number> {
  const { values, run } = subcommandFlags(
    args,
    CLAIMS_FLAGS,
    'claims',
    'import',
    'sqs-inbox claims import --from public.processed_messages --key-column message_id --consumer order-worker',
  );
  if (!run) {
    process.stdout.write(CLAIMS_USAGE);
    return 0;
  }
  for (const flag of ['from', 'consumer', 'key-column'] as const) {
    if (!values[flag]) throw new UsageError(`--${flag} is required, e.g. --${flag} ${CLAIMS_FLAGS[flag].example}`);
  }
  const batchSize = values['batch-size'] === undefined ? undefined : wholeNumber(values['batch-size'], '--batch-size', 1, 10_000, '1000');
  const where = values.where === undefined ? undefined : whereFlag(values.where);
  const target = databaseTarget(values, process.env);
  const { importClaims } = await import('../../lambda/inbox/operations.js');
  const report = await importClaims({
    session: await session(target),
    from: values.from!,
    consumer: values.consumer!,
    keyColumn: values['key-column']!,
    keyTemplate: values['key-template'],
    where,
    schema: values.schema,
    batchSize,
    dryRun: values['dry-run'],
  });
  if (values.json) {
    process.stdout.write(`${printableJson(report)}\n`);
    return 0;
  }
  const verb = values['dry-run'] ? 'Dry run, nothing inserted: would import' : 'Imported';
  const refusals = report.refusals.map((refusal) => `  not imported: "${printable(refusal.key)}": ${printable(refusal.reason)}\n`).join('');
  process.stdout.write(
    `${refusals}Read ${report.read} rows of ${printable(values.from!)}. ${verb} ${report.imported} claims for consumer "${printable(values.consumer!)}"; ` +
      `${report.alreadyClaimed} were claimed already; ${report.refused} keys no consumer could claim under.\n`,
  );
  return 0;
}

/** `--where COLUMN=TEXT`: the rows of one consumer in a table several share. */
function whereFlag(value: string): { column: string; equals: string } {
  const at = value.indexOf('=');
  if (at < 1) throw new UsageError(`--where takes COLUMN=TEXT, e.g. --where ${CLAIMS_FLAGS.where.example}; got "${printable(value)}"`);
  return { column: value.slice(0, at), equals: value.slice(at + 1) };
}
