import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { INBOX_MIGRATIONS, inboxTables } from '../lambda/inbox/sql/schema.js';
import { claimSql } from '../lambda/inbox/sql/claim.js';
import { createDatabase, startPostgres } from '../local/postgres.js';
import { median } from './measure.js';

/**
 * `npm run bench:isolation`: what scoping a consumer's claims to its own name (row-level security, inbox
 * migration 5) costs per claim, side by side in one run. Two databases on one embedded PostgreSQL, the same
 * inbox tables and the same neighbours' claims in each; one has migration 5 and the consumer's role listed in
 * role_scope, the other stops at migration 4. The same role claims in both, new keys and duplicates, in
 * interleaved rounds (the order flips every round), one statement at a time on its own connection, with the
 * claim statement `inbox()` sends. What is timed is the database's share of a claim only: on AWS each claim is
 * also a Data API round trip of several milliseconds, which this overhead is to be read against.
 */
const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '7' },
    claims: { type: 'string', default: '2000' },
    neighbours: { type: 'string', default: '20' },
    'neighbour-rows': { type: 'string', default: '200000' },
  },
});
const ROUNDS = Number(values.rounds);
const CLAIMS = Number(values.claims);
const NEIGHBOURS = Number(values.neighbours);
const NEIGHBOUR_ROWS = Number(values['neighbour-rows']);
const CONSUMER = 'bench-consumer';
const ROLE = `bench_claimer_${randomBytes(3).toString('hex')}`;
const PASSWORD = randomBytes(12).toString('hex');

type Variant = 'scoped' | 'unscoped';

async function prepare(serverUrl: string, variant: Variant): Promise<string> {
  const url = await createDatabase(serverUrl, `bench_iso_${variant}_${randomBytes(3).toString('hex')}`);
  const owner = new pg.Client({ connectionString: url });
  await owner.connect();
  try {
    const tables = inboxTables();
    await owner.query('CREATE SCHEMA inbox');
    const migrations = INBOX_MIGRATIONS.migrations.filter((migration) => variant === 'scoped' || migration.version < 5);
    for (const migration of migrations) {
      const statements = typeof migration.statements === 'function' ? migration.statements(tables) : migration.statements;
      for (const statement of statements) await owner.query(statement);
    }
    // The neighbours: other consumers' claims in the same table, and their roles in role_scope.
    await owner.query(
      `INSERT INTO inbox.consumed_message (consumer_name, message_id, payload_sha256)
       SELECT 'neighbour-' || (g % $2), md5(g::text), decode(md5(g::text) || md5(g::text), 'hex') FROM generate_series(1, $1::int) g`,
      [NEIGHBOUR_ROWS, NEIGHBOURS],
    );
    if (variant === 'scoped') {
      await owner.query(
        `INSERT INTO inbox.role_scope (role_name, consumer_name) SELECT 'neighbour_role_' || g, 'neighbour-' || g FROM generate_series(0, $1::int - 1) g`,
        [NEIGHBOURS],
      );
      await owner.query('INSERT INTO inbox.role_scope (role_name, consumer_name) VALUES ($1, $2)', [ROLE, CONSUMER]);
    }
    // What provisionRole grants a consumer on the claims.
    await owner.query(`GRANT USAGE ON SCHEMA inbox TO ${ROLE}`);
    await owner.query(`GRANT SELECT, INSERT ON inbox.consumed_message TO ${ROLE}`);
    await owner.query('VACUUM ANALYZE inbox.consumed_message');
  } finally {
    await owner.end();
  }
  const asRole = new URL(url);
  asRole.username = ROLE;
  asRole.password = PASSWORD;
  return asRole.toString();
}

/** `:name` parameters as `$n`, in order of first appearance. */
function positional(sql: string): { text: string; names: string[] } {
  const names: string[] = [];
  const text = sql.replace(/(?<!:):([a-z_][a-z0-9_]*)/g, (_, name: string) => {
    if (!names.includes(name)) names.push(name);
    return `$${names.indexOf(name) + 1}`;
  });
  return { text, names };
}

/** Per-claim latencies in microseconds of `keys` claimed one after another. */
async function claimAll(client: pg.Client, keys: readonly string[]): Promise<number[]> {
  const { text, names } = positional(claimSql(inboxTables()));
  const latencies: number[] = [];
  for (const key of keys) {
    const params: Record<string, unknown> = { inbox_consumer: CONSUMER, inbox_key: key, inbox_sha256: Buffer.alloc(32, 1) };
    const started = process.hrtime.bigint();
    const { rows } = await client.query({ name: 'claim', text, values: names.map((name) => params[name]) });
    latencies.push(Number(process.hrtime.bigint() - started) / 1000);
    if (rows.length !== 1) throw new Error('a claim returned no row');
  }
  return latencies;
}

async function main(): Promise<void> {
  const server = await startPostgres();
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  await admin.query(`CREATE ROLE ${ROLE} LOGIN PASSWORD '${PASSWORD}'`);
  const clients: Partial<Record<Variant, pg.Client>> = {};
  try {
    for (const variant of ['scoped', 'unscoped'] as const) {
      const client = new pg.Client({ connectionString: await prepare(server.url, variant) });
      await client.connect();
      clients[variant] = client;
    }
    const rows: { round: number; path: string; scoped: number; unscoped: number }[] = [];
    // A warm-up round, not counted: plans cached, pages in memory.
    for (const variant of ['scoped', 'unscoped'] as const) await claimAll(clients[variant]!, keysFor(-1, 200));
    for (let round = 0; round < ROUNDS; round++) {
      const order: Variant[] = round % 2 === 0 ? ['scoped', 'unscoped'] : ['unscoped', 'scoped'];
      const keys = keysFor(round, CLAIMS);
      const fresh: Partial<Record<Variant, number[]>> = {};
      const again: Partial<Record<Variant, number[]>> = {};
      for (const variant of order) fresh[variant] = await claimAll(clients[variant]!, keys);
      // The same keys again: duplicates, found by the claim's own read.
      for (const variant of order) again[variant] = await claimAll(clients[variant]!, keys);
      rows.push({ round, path: 'new', scoped: median(fresh.scoped!), unscoped: median(fresh.unscoped!) });
      rows.push({ round, path: 'duplicate', scoped: median(again.scoped!), unscoped: median(again.unscoped!) });
    }
    report(rows);
    // Check that the scoping held in the scoped database: the role sees none of its neighbours' claims.
    const seen = await clients.scoped!.query('SELECT count(*)::int AS n FROM inbox.consumed_message WHERE consumer_name <> $1', [CONSUMER]);
    if (seen.rows[0].n !== 0) throw new Error(`the scoped role saw ${seen.rows[0].n} claims of other consumers`);
  } finally {
    for (const client of Object.values(clients)) await client?.end();
    await admin.end();
    await server.close();
  }
}

function keysFor(round: number, count: number): string[] {
  const prefix = randomBytes(4).toString('hex');
  return Array.from({ length: count }, (_, index) => `r${round}-${prefix}-${index}`);
}

function report(rows: readonly { round: number; path: string; scoped: number; unscoped: number }[]): void {
  console.log(
    `Claim cost with the consumer's claims scoped by row-level security, against the same claim unscoped\n` +
      `(${ROUNDS} interleaved rounds of ${CLAIMS} claims each, ${NEIGHBOUR_ROWS.toLocaleString('en-US')} claims of ${NEIGHBOURS} ` +
      `other consumers in the table; medians of per-claim latency at the database, Node ${process.version})\n`,
  );
  console.log('| path | scoped, µs | unscoped, µs | ratio (median of rounds) | ratio range | overhead per claim, µs |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
  for (const path of ['new', 'duplicate']) {
    const of = rows.filter((row) => row.path === path);
    const ratios = of.map((row) => row.scoped / row.unscoped);
    const scoped = median(of.map((row) => row.scoped));
    const unscoped = median(of.map((row) => row.unscoped));
    console.log(
      `| ${path} | ${scoped.toFixed(0)} | ${unscoped.toFixed(0)} | ${median(ratios).toFixed(2)}x | ` +
        `${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)} | ${(scoped - unscoped).toFixed(0)} |`,
    );
  }
}

await main();
