import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runDemo } from '../../demo/run.js';
import { runScenario, startLocal } from '../../local/index.js';
import type { LocalStack, ScenarioConsumer } from '../../local/index.js';
import { freshDatabase } from '../support/database.js';
import { textSink } from '../support/text-sink.js';
import { seededRandom } from '../support/seed.js';

// The demo and runScenario on a server given by URL (DATABASE_URL), as a user's own PostgreSQL: every
// database a run creates there is dropped when the run ends, passed or failed. Other test files create
// databases on the same server at the same time, so each test looks only for the names its runs made.

const previousDatabaseUrl = process.env.DATABASE_URL;
let url: string;
let server: pg.Client;
beforeAll(async () => {
  url = await freshDatabase('demo_cleanup');
  process.env.DATABASE_URL = url;
  server = new pg.Client({ connectionString: url });
  await server.connect();
});
afterAll(async () => {
  await server?.end();
  if (previousDatabaseUrl === undefined) delete process.env.DATABASE_URL;
  else process.env.DATABASE_URL = previousDatabaseUrl;
});

/** A demo seed of six digits from the run's seed: it is in each run's database name, which the test looks for. */
const demoDice = seededRandom('cleanup demo seeds');
const demoSeed = () => 100_000 + Math.floor(demoDice() * 900_000);

/** The databases on the server whose name matches the LIKE pattern. */
async function databases(like: string): Promise<string[]> {
  const { rows } = await server.query<{ datname: string }>('SELECT datname FROM pg_database WHERE datname LIKE $1 ORDER BY 1', [like]);
  return rows.map((row) => row.datname);
}

/** True while a database of this exact name is on the server. */
async function exists(name: string): Promise<boolean> {
  return (await server.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount === 1;
}

describe('the demo on a DATABASE_URL server', () => {
  it('prints its table and leaves none of the databases its three runs created', async () => {
    // The seed is in each run's database name: scenario_<label>_<seed>_<random>.
    const seed = demoSeed();
    const pattern = `scenario\\_%\\_${seed}\\_%`;
    const seen = new Set<string>();
    let watching = true;
    const watch = (async () => {
      while (watching) {
        for (const name of await databases(pattern)) seen.add(name);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    })();
    const out = textSink();
    let code: number;
    try {
      code = await runDemo(['--messages', '30', '--seed', String(seed), '--faults', 'none', '--consumers', '1'], out.stream);
    } finally {
      watching = false;
      await watch;
    }
    expect(code).toBe(0);
    expect(out.text()).toMatch(/orders produced\s+30\s+30\s+30/);
    // All three runs (inbox, inbox batch, naive) did make their database on this server (so the check below can fail)...
    expect([...seen].map((name) => name.split(`_${seed}_`)[0])).toEqual(['scenario_inbox', 'scenario_inbox_batch', 'scenario_naive']);
    // ...and dropped it.
    expect(await databases(pattern)).toEqual([]);
  }, 120_000);

  it('drops the database of the run it was in when Ctrl-C (SIGINT) ends the demo (npm start)', async () => {
    // The installed bin, as cli.test.ts runs it (npm test builds dist/ first).
    const bin = 'dist/demo/cli.js';
    if (!existsSync(bin)) throw new Error(`${bin} is missing: run \`node scripts/build.mjs --js-only\` (npm test does).`);
    const seed = demoSeed();
    const pattern = `scenario\\_inbox\\_${seed}\\_%`;
    const child = spawn(process.execPath, [bin, 'demo', '--messages', '5000', '--seed', String(seed)], { env: { ...process.env, DATABASE_URL: url } });
    const exited = new Promise<NodeJS.Signals | number | null>((resolve) => child.once('exit', (code, signal) => resolve(signal ?? code)));
    try {
      const deadline = Date.now() + 30_000;
      while ((await databases(pattern)).length === 0) {
        if (Date.now() > deadline) throw new Error(`the demo made no database ${pattern} in 30 s`);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      // Into the run: past creating its database, into migrating or consuming.
      await new Promise((resolve) => setTimeout(resolve, 500));
      child.kill('SIGINT');
      expect(await exited).toBe('SIGINT');
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
    expect(await databases(pattern)).toEqual([]);
  }, 60_000);
});

describe('runScenario on a DATABASE_URL server', () => {
  let local: LocalStack;
  beforeAll(async () => {
    local = await startLocal({ dataApi: { transactionIdleTimeoutMs: 2000 } });
  });
  afterAll(async () => local?.close());

  /** A handler that inserts each record's payment, and tells which database the run made for it. */
  const inserting =
    (seen: (database: string | undefined) => void): ScenarioConsumer['handler'] =>
    ({ session, env }) => {
      seen(env.INBOX_DATABASE);
      return async (event) => {
        for (const record of event.Records) {
          await session.execute('INSERT INTO public.payments (payment_id) VALUES (:id)', { id: JSON.parse(record.body).paymentId });
        }
        return { batchItemFailures: [] };
      };
    };

  const consumer: Omit<ScenarioConsumer, 'handler'> = {
    setup: 'CREATE TABLE public.payments (payment_id text NOT NULL)',
    message: (i) => ({ key: `pay-${i}`, body: { paymentId: `pay-${i}` } }),
    effects: 'SELECT payment_id AS key, count(*) FROM public.payments GROUP BY 1',
  };

  it("drops the run's database when the handler factory throws", async () => {
    let database: string | undefined;
    await expect(
      runScenario(local, {
        ...consumer,
        handler: (environment) => {
          database = environment.env.INBOX_DATABASE;
          throw new Error('the handler module failed to load');
        },
        messages: 5,
        faults: [],
      }),
    ).rejects.toThrow('the handler module failed to load');
    expect(database).toMatch(/^scenario_/);
    expect(await exists(database!)).toBe(false);
  }, 60_000);

  it("drops the run's database when the final check fails after the consumers ran", async () => {
    let database: string | undefined;
    await expect(
      runScenario(local, {
        ...consumer,
        handler: inserting((name) => (database = name)),
        effects: 'SELECT payment_id AS key, count(*) FROM public.no_such_table GROUP BY 1',
        messages: 5,
        faults: [],
      }),
    ).rejects.toThrow('runScenario: the effects query failed');
    expect(database).toMatch(/^scenario_/);
    expect(await exists(database!)).toBe(false);
  }, 60_000);

  it("drops the run's database after a run that passed, and leaves a database it was given", async () => {
    let created: string | undefined;
    const result = await runScenario(local, {
      ...consumer,
      handler: inserting((name) => (created = name)),
      messages: 5,
      faults: [],
    });
    expect(result.problems).toEqual([]);
    expect(await exists(created!)).toBe(false);

    const given = new URL(await freshDatabase('demo_cleanup_given')).pathname.slice(1);
    const inGiven = await runScenario(local, {
      ...consumer,
      database: given,
      handler: inserting(() => {}),
      messages: 5,
      faults: [],
    });
    expect(inGiven.problems).toEqual([]);
    expect(await exists(given)).toBe(true);
  }, 60_000);
});
