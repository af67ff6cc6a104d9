// The commands that work on a deployed database through the Data API: migrate and purge (parked, in
// parked-commands.ts, shares their session). Each checks its flags first and imports the library (and
// with it the AWS SDK) only then.
import { UsageError, atLeast, databaseTarget, namesFrom } from './flags.js';
import type { FlagsTarget, DatabaseValues } from './flags.js';
import { printableJson } from './printable.js';
import { MIGRATION_SET_NAMES } from './usage.js';
import { INBOX_ENV } from '../../lambda/inbox/contract.js';

/** A Data API session for a person or a pipeline: long call timeouts, and waits out an auto-paused cluster. */
export async function session(target: FlagsTarget) {
  const [{ DataApiSession }, { resolveTarget }] = await Promise.all([
    import('../../lambda/inbox/transport/data-api/session.js'),
    import('../../lambda/inbox/transport/data-api/transport.js'),
  ]);
  const { endpoint, ...database } = target;
  const env = { ...process.env, [INBOX_ENV.DATA_API_ENDPOINT]: endpoint };
  // A person at a terminal, or a deploy pipeline, waits out an auto-paused Aurora resuming (about 15 s).
  return new DataApiSession(resolveTarget(database, env, 'flags'), { callTimeoutMs: 60_000, resumeDelaysMs: [1000, 2000, 4000, 8000, 10_000, 10_000] });
}

export async function migrateCommand(values: DatabaseValues & { sets: string; dir: string | undefined }): Promise<number> {
  const names = namesFrom(values.sets, '--sets', MIGRATION_SET_NAMES);
  if (names.length === 0) throw new UsageError(`--sets names no migration set, e.g. --sets ${MIGRATION_SET_NAMES.join(',')}`);
  const own = values.dir === undefined ? [] : [await ownMigrationSet(values.dir)];
  const target = databaseTarget(values, process.env);
  const [{ applyMigrations }, { migrationSets }] = await Promise.all([
    import('../../lambda/inbox/sql/schema.js'),
    import('../../lambda/functions/migration/migrate.js'),
  ]);
  // After the built-in sets, as InboxDatabase applies an app's own sets at deploy.
  const sets = migrationSets([...names, ...own.map((set) => set.name)].join(','), own);
  const report = await applyMigrations(await session(target), sets, values.schema);
  process.stdout.write(`${printableJson(report)}\n`);
  return 0;
}

/**
 * The folder `--dir` names, read and checked as InboxDatabase reads and checks `MigrationSet.fromDirectory`
 * at synth (the same code): a misnamed file, a set named like a built-in one or a statement that cannot
 * run in a migration's transaction is misuse, said before anything connects.
 */
async function ownMigrationSet(dir: string) {
  const { readMigrationDirectory, setProblems } = await import('../../lib/database/migration-directory.js');
  const label = `--dir ${dir}`;
  let set: Awaited<ReturnType<typeof readMigrationDirectory>>;
  try {
    set = readMigrationDirectory(dir, {}, label);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const [problem] = setProblems(set, `${label}: the set '${set.name}' (the folder's name)`);
  if (problem !== undefined) throw new UsageError(`${problem.problem} Fix: ${problem.fix}`);
  return set;
}

/**
 * The shortest retention `purge` takes without --allow-short-retention. The CDK constructs know the queues
 * and refuse a retention that does not exceed their redelivery window; the CLI does not know them, so it
 * asks for a day at least (an SQS queue keeps a message 4 days by default, up to 14).
 */
export const SAFE_RETENTION_SECONDS = 24 * 3600;

export async function purgeCommand(
  values: DatabaseValues & { 'retention-seconds': string | undefined; 'batch-size': string | undefined; 'allow-short-retention': boolean },
): Promise<number> {
  if (values['retention-seconds'] === undefined) {
    throw new UsageError('--retention-seconds is required: rows younger than this are kept, e.g. --retention-seconds 1209600 (14 days)');
  }
  const retentionSeconds = atLeast(values['retention-seconds'], '--retention-seconds', 1, '1209600 (14 days)');
  if (retentionSeconds < SAFE_RETENTION_SECONDS && !values['allow-short-retention']) {
    throw new UsageError(
      `--retention-seconds ${retentionSeconds} is under one day (${SAFE_RETENTION_SECONDS}): a claim purged before the last redelivery of its message ` +
        "lets that redelivery apply the effect twice. Keep claims longer than the queue's retention plus the dead-letter redrive window " +
        '(e.g. --retention-seconds 1209600, 14 days), or add --allow-short-retention if you know that window is shorter',
    );
  }
  const batchSize = values['batch-size'] === undefined ? undefined : atLeast(values['batch-size'], '--batch-size', 1, '5000');
  const target = databaseTarget(values, process.env);
  const { purge } = await import('../../lambda/inbox/operations.js');
  const report = await purge(await session(target), { retentionSeconds, batchSize, schema: values.schema });
  process.stdout.write(`${printableJson(report)}\n`);
  return 0;
}
