import { randomBytes } from 'node:crypto';
import { RDSDataClient } from '@aws-sdk/client-rds-data';
import { DataApiSession } from '../../lambda/inbox/transport/data-api/session.js';
import type { DatabaseTarget } from '../../lambda/inbox/transport/data-api/session.js';
import { loadPg } from '../peer-loaders.js';
import { createDatabase } from '../postgres.js';
import type { LocalStack } from '../stack.js';

// A run's database: its own, made for it and dropped after it, so runs never see each other's rows; and
// the Data API session the run's setup, effects query and verify use on it, which no fault reaches.

/** The Data API client, target and session a run's setup and judge use, on the run's database. */
export function openDatabase(local: LocalStack, database: string): { client: RDSDataClient; target: DatabaseTarget; session: DataApiSession } {
  const client = new RDSDataClient({
    endpoint: local.dataApi.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
  const target: DatabaseTarget = { client, resourceArn: local.dataApi.resourceArn, secretArn: local.dataApi.secretArn, database };
  const session = new DataApiSession(target, { callTimeoutMs: 10_000, resumeDelaysMs: [250, 500, 1000, 2000] });
  return { client, target, session };
}

/** A run's name in its database and queues: its label, its seed, and a random part so that runs never meet. */
export function runTag(label: string, seed: number): string {
  const safe = label
    .toLowerCase()
    .replace(/[^a-z0-9_]/g, '_')
    .slice(0, 20);
  return `${safe}_${seed}_${randomBytes(3).toString('hex')}`;
}

/**
 * Runs `body` in a new database `name` on the stack's server; drops it at the end, passed or failed, or
 * a DATABASE_URL server would keep two databases per demo run.
 */
export async function inOwnDatabase<T>(local: LocalStack, name: string, body: (database: string) => Promise<T>): Promise<T> {
  await createDatabase(local.postgres.url, name);
  // Embedded PostgreSQL goes away with its data directory; a server of the user's keeps what is not dropped.
  const interrupted = local.postgres.external ? dropOnSignal(local.postgres.url, name) : undefined;
  let result: T;
  try {
    result = await body(name);
  } catch (error) {
    // Interrupted, the run fails as its database goes: the signal's drop ends the process, not this error,
    // which would let the caller exit first with a failure of its own and leave the database behind.
    const dropping = interrupted?.dropping();
    if (dropping) await dropping;
    // The run's own error says more than a failed drop would.
    await dropDatabase(local.postgres.url, name).catch(() => {});
    throw error;
  } finally {
    interrupted?.remove();
  }
  await dropDatabase(local.postgres.url, name);
  return result;
}

/**
 * Drops the run's database on SIGINT or SIGTERM (Ctrl-C on `npm start`), which would otherwise end the
 * process without the run's cleanup, then lets the signal end the process as it would have. `dropping`
 * is that drop, once a signal came: it never settles, since the process ends with it.
 */
function dropOnSignal(serverUrl: string, name: string): { remove(): void; dropping(): Promise<never> | undefined } {
  let dropping: Promise<never> | undefined;
  const remove = () => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
  const onSignal = (signal: NodeJS.Signals) => {
    remove();
    dropping = dropDatabase(serverUrl, name)
      .catch(() => {})
      .then(() => {
        process.kill(process.pid, signal);
        return new Promise<never>(() => {});
      });
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  return { remove, dropping: () => dropping };
}

/** Drops a database a run created, with the connections the local Data API still holds to it. */
async function dropDatabase(serverUrl: string, name: string): Promise<void> {
  const pg = await loadPg();
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    // FORCE (PostgreSQL 13+): the Data API's pools keep idle connections, and a crashed worker's
    // transaction may still be open until it expires.
    await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  } catch (error) {
    throw new Error(
      `runScenario: could not drop its database ${name} (${error instanceof Error ? error.message : String(error)}); drop it by hand: DROP DATABASE "${name}"`,
      { cause: error },
    );
  } finally {
    await client.end();
  }
}

/** The tables a run's consumer needs: one SQL statement per string, or a function of a session on the run's database. */
export type Setup = string | readonly string[] | ((session: DataApiSession) => Promise<void>);

/** Creates a run's own tables in its fresh database, after the inbox's. `runner` names the failure. */
export async function runSetup(runner: string, session: DataApiSession, setup: Setup | undefined): Promise<void> {
  if (setup === undefined) return;
  if (typeof setup === 'function') {
    await setup(session);
    return;
  }
  for (const sql of typeof setup === 'string' ? [setup] : setup) {
    try {
      await session.execute(sql);
    } catch (error) {
      throw new Error(`${runner}: setup statement failed (${sql.slice(0, 80)}): ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
  }
}
