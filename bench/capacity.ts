import { readdirSync, readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { CONCURRENCY, variants } from './consumers.js';
import type { Variant } from './consumers.js';
import { benchDatabase } from './database.js';
import type { BenchDatabase } from './database.js';
import { Invoker, median } from './measure.js';
import type { PurgeRun } from './purge.js';
import { freshRecords } from './records.js';
import { toText } from './report.js';
import type { Table } from './report.js';
import { startBenchServers } from './servers.js';
import type { BenchServers, RemoteDataApi } from './servers.js';

/**
 * Capacity: how many messages per second one PostgreSQL absorbs per mode when the database is the
 * bottleneck, and what it costs the database per message in CPU, so that a cluster can be sized per core
 * (DBOS's form for its Postgres benchmarks: throughput per core of the database). Beside it, where a
 * database-bound trial's time goes: PostgreSQL's backends sampled from pg_stat_activity (running, waiting
 * on a lock or an LWLock, idle inside an open transaction, idle), and the CPU of the three processes that
 * share this machine's cores (PostgreSQL, the local Data API server, the handlers with their SDK clients).
 *
 * Runs inside `npm run bench` (section 7) and alone: `npx tsx bench/capacity.ts [--seconds 2] [--rounds 3] [--lambdas 8] [--limit 4] [--variants bare,inbox-tx] [--servers open,limited]`.
 */

/** The modes measured, and the floor they are compared with. */
export const CAPACITY_VARIANTS = ['bare', 'inbox-stmt', 'inbox-batch-stmt', 'inbox-tx', 'inbox-tx-k3', 'inbox-batch-tx'] as const;

/** One variant on one server for one timed trial. */
export interface CapacityTrial {
  readonly round: number;
  readonly variant: string;
  readonly server: string;
  readonly messages: number;
  readonly seconds: number;
  /** Data API calls the server received. */
  readonly calls: number;
  /** CPU microseconds of PostgreSQL (the postmaster and its backends), of the Data API server process, and of the handlers' process. */
  readonly cpu: { readonly postgres: number; readonly server: number; readonly handlers: number };
  /** Share of the trial's wall time the Data API server's event loop was busy (0 to 1). */
  readonly serverEventLoop: number;
  /** Mean number of the database's client backends in each state over the trial (pg_stat_activity samples). */
  readonly backends: Readonly<Record<string, number>>;
}

/**
 * Snapshots the CPU time of a PostgreSQL's processes (the postmaster and its children) from
 * /proc/<pid>/schedstat, in nanoseconds; {@link cpuBetween} takes the difference per process. A backend
 * that exits during a trial takes the time it ran since the first snapshot with it (an undercount; the
 * pools keep their backends while a trial runs).
 */
export function postgresCpuSnapshot(postmasterPid: number, leaveOut: number): Map<number, number> {
  const snapshot = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const pid = Number(entry);
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // The command name (field 2) may hold spaces: the fields after it start past its closing parenthesis; ppid is the second.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if ((pid !== postmasterPid && ppid !== postmasterPid) || pid === leaveOut) continue;
      snapshot.set(pid, Number(readFileSync(`/proc/${entry}/schedstat`, 'utf8').split(' ')[0]));
    } catch {
      // exited between the listing and the read
    }
  }
  return snapshot;
}

/** Microseconds of CPU between two snapshots, summed over the processes of the second. */
export function cpuBetween(before: ReadonlyMap<number, number>, after: ReadonlyMap<number, number>): number {
  let nanoseconds = 0;
  for (const [pid, ran] of after) nanoseconds += ran - (before.get(pid) ?? 0);
  return nanoseconds / 1000;
}

/** The postmaster's process id, from the data directory's postmaster.pid (the server must be on this machine). */
export async function postmasterPid(client: pg.Client): Promise<number> {
  const { rows } = await client.query<{ setting: string }>("SELECT setting FROM pg_settings WHERE name = 'data_directory'");
  const pid = Number(readFileSync(join(rows[0]!.setting, 'postmaster.pid'), 'utf8').split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0) throw new Error(`capacity: no postmaster pid in ${rows[0]!.setting}/postmaster.pid`);
  return pid;
}

/** Samples the database's client backends every `everyMs` until stopped; returns the mean count per state. */
function sampleBackends(client: pg.Client, database: string, everyMs: number): { stop(): Promise<Record<string, number>> } {
  const totals = new Map<string, number>();
  let samples = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      const { rows } = await client.query<{ state: string | null; wait_event_type: string | null; wait_event: string | null }>(
        `SELECT state, wait_event_type, wait_event FROM pg_stat_activity
          WHERE datname = $1 AND backend_type = 'client backend' AND pid <> pg_backend_pid()`,
        [database],
      );
      samples++;
      for (const row of rows) {
        const key =
          row.state === 'active'
            ? row.wait_event_type
              ? `active, waiting on ${row.wait_event_type}:${row.wait_event}`
              : 'active, running'
            : (row.state ?? 'unknown');
        totals.set(key, (totals.get(key) ?? 0) + 1);
      }
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return Object.fromEntries([...totals].map(([key, count]) => [key, count / Math.max(1, samples)]));
    },
  };
}

/** Settings of the section. */
export interface CapacitySettings {
  /** Lambdas consuming side by side, each `CONCURRENCY` records in flight. */
  readonly lambdas: number;
  /** Length of each timed trial. */
  readonly seconds: number;
  /** Rounds: every variant on every server once per round, the order reversed every other round. */
  readonly rounds: number;
  readonly batchSize: number;
  /** Calls the "limited" server runs at once. */
  readonly limit: number;
  /** The variants to run, a subset of {@link CAPACITY_VARIANTS} that holds bare. @default all of them */
  readonly only?: readonly string[] | undefined;
  readonly progress: (message: string) => void;
}

/**
 * Runs each variant for `seconds` on each server (nothing else of the bench meanwhile), `lambdas` Lambdas
 * side by side, in interleaved rounds, and measures messages, calls, the CPU of the three processes, the
 * server's event loop and PostgreSQL's backend states.
 */
export async function measureCapacity(
  servers: BenchServers,
  database: BenchDatabase,
  invoker: Invoker,
  all: readonly Variant[],
  targets: readonly RemoteDataApi[],
  settings: CapacitySettings,
): Promise<CapacityTrial[]> {
  const client = new pg.Client({ connectionString: withDatabase(servers.postgresUrl, database.name) });
  await client.connect();
  try {
    const postmaster = await postmasterPid(client);
    // The sampler's own backend is the bench's, not the workload's.
    const sampler = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    const chosen = (settings.only ?? CAPACITY_VARIANTS).map((id) => {
      const variant = all.find((candidate) => candidate.id === id);
      if (!variant || !(CAPACITY_VARIANTS as readonly string[]).includes(id))
        throw new Error(`capacity: "${id}" is not one of ${CAPACITY_VARIANTS.join(', ')}`);
      return variant;
    });
    for (const server of targets) for (const variant of chosen) await invoker.invoke(variant, freshRecords(settings.batchSize), server, 'capacity warm-up');
    const trials: CapacityTrial[] = [];
    for (let round = 0; round < settings.rounds; round++) {
      for (const server of targets) {
        for (const variant of round % 2 === 0 ? chosen : [...chosen].reverse()) {
          settings.progress(`7 capacity: round ${round + 1}/${settings.rounds}, ${variant.id} on "${server.name}"`);
          await server.resetStats();
          const sampling = sampleBackends(client, database.name, 5);
          const before = {
            postgres: postgresCpuSnapshot(postmaster, sampler),
            server: await servers.cpuMicros(),
            handlers: process.cpuUsage(),
            loop: await servers.eventLoop(),
          };
          const started = performance.now();
          const deadline = started + settings.seconds * 1000;
          let messages = 0;
          await Promise.all(
            Array.from({ length: settings.lambdas }, async () => {
              while (performance.now() < deadline) {
                await invoker.invoke(variant, freshRecords(settings.batchSize), server, `capacity on ${server.name}`);
                messages += settings.batchSize;
              }
            }),
          );
          const seconds = (performance.now() - started) / 1000;
          const handlers = process.cpuUsage(before.handlers);
          const loop = await servers.eventLoop();
          const cpu = {
            postgres: cpuBetween(before.postgres, postgresCpuSnapshot(postmaster, sampler)),
            server: (await servers.cpuMicros()) - before.server,
            handlers: handlers.user + handlers.system,
          };
          const backends = await sampling.stop();
          const calls = Object.values(await server.stats()).reduce((sum, count) => sum + count, 0);
          const busy = loop.active - before.loop.active;
          const serverEventLoop = busy / (busy + loop.idle - before.loop.idle);
          trials.push({ round, variant: variant.id, server: server.name, messages, seconds, calls, cpu, serverEventLoop, backends });
        }
      }
    }
    return trials;
  } finally {
    await client.end();
  }
}

const fixed = (value: number, digits = 0) => value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

/** The trials of one variant on one server, summed over the rounds. */
interface Totals {
  readonly variant: string;
  readonly server: string;
  readonly messages: number;
  readonly seconds: number;
  readonly calls: number;
  readonly cpu: { postgres: number; server: number; handlers: number };
  readonly serverEventLoop: number;
  readonly backends: Record<string, number>;
  /** messages/s over bare's in the same round and server, one per round. */
  readonly vsBare: number[];
}

function totalled(trials: readonly CapacityTrial[]): Totals[] {
  const groups = new Map<string, CapacityTrial[]>();
  for (const trial of trials) {
    const key = `${trial.server}\u0000${trial.variant}`;
    groups.set(key, [...(groups.get(key) ?? []), trial]);
  }
  const rate = (trial: CapacityTrial) => trial.messages / trial.seconds;
  return [...groups.values()].map((group) => {
    const first = group[0]!;
    const seconds = group.reduce((sum, trial) => sum + trial.seconds, 0);
    const backends: Record<string, number> = {};
    for (const trial of group)
      for (const [state, mean] of Object.entries(trial.backends)) backends[state] = (backends[state] ?? 0) + (mean * trial.seconds) / seconds;
    return {
      variant: first.variant,
      server: first.server,
      messages: group.reduce((sum, trial) => sum + trial.messages, 0),
      seconds,
      calls: group.reduce((sum, trial) => sum + trial.calls, 0),
      cpu: {
        postgres: group.reduce((sum, trial) => sum + trial.cpu.postgres, 0),
        server: group.reduce((sum, trial) => sum + trial.cpu.server, 0),
        handlers: group.reduce((sum, trial) => sum + trial.cpu.handlers, 0),
      },
      serverEventLoop: group.reduce((sum, trial) => sum + trial.serverEventLoop * trial.seconds, 0) / seconds,
      backends,
      vsBare: group.map((trial) => {
        const bare = trials.find((other) => other.variant === 'bare' && other.server === trial.server && other.round === trial.round)!;
        return rate(trial) / rate(bare);
      }),
    };
  });
}

/** The section's tables: capacity per mode, then where the time of the trials goes. */
export function capacityTables(
  trials: readonly CapacityTrial[],
  settings: Pick<CapacitySettings, 'lambdas' | 'seconds' | 'rounds' | 'limit'>,
  machine = machineLabel(),
): Table[] {
  const rows = totalled(trials);
  const perMessage = (micros: number, row: Totals) => micros / row.messages;
  const capacity: Table = {
    title: `7. Capacity: messages per second one PostgreSQL absorbs, and per core of the database (${machine})`,
    headers: [
      'variant',
      'server',
      'messages/s',
      'vs bare (median, min - max)',
      'calls/message',
      'PostgreSQL CPU/message',
      'messages/s per PostgreSQL core',
      'Data API server CPU/message',
      'handler CPU/message',
    ],
    rows: rows.map((row) => [
      row.variant,
      row.server,
      fixed(row.messages / row.seconds),
      `${median(row.vsBare).toFixed(2)}x (${Math.min(...row.vsBare).toFixed(2)} - ${Math.max(...row.vsBare).toFixed(2)})`,
      (row.calls / row.messages).toFixed(2),
      `${fixed(perMessage(row.cpu.postgres, row))} µs`,
      fixed(1_000_000 / perMessage(row.cpu.postgres, row)),
      `${fixed(perMessage(row.cpu.server, row))} µs`,
      `${fixed(perMessage(row.cpu.handlers, row))} µs`,
    ]),
    notes: [
      `${settings.lambdas} Lambdas side by side (${CONCURRENCY} records in flight each), each invoking batches of new records one after another for ` +
        `${settings.seconds} s per trial, one variant at a time, ${settings.rounds} rounds (the order reversed every other round), no added latency. ` +
        `"open": the local Data API server with no call limit; "limited": the database-bound shape of section 2 (the server runs ${settings.limit} calls at once and queues the rest).`,
      'Per core: one second of CPU over the CPU PostgreSQL (the postmaster, its background processes and backends, /proc/<pid>/schedstat; not the backend that samples pg_stat_activity) spent per message: what one core of ' +
        'the database absorbs when its CPU is the limit. The embedded PostgreSQL runs with fsync, synchronous_commit and full_page_writes off, so a ' +
        'commit waits for no disk: on Aurora a commit also waits for its quorum write, which costs latency, not database CPU.',
      'Data API server: the local server standing in for the Data API fleet, which AWS runs beside the cluster, not on its cores; handler: the ' +
        'handlers with their AWS SDK clients, which run in the Lambdas. On this machine all three share the same cores (and other work shares them too).',
    ],
  };
  const states = [...new Set(rows.flatMap((row) => Object.keys(row.backends)))].sort();
  const where: Table = {
    title:
      "7b. Where the trials' time goes: PostgreSQL's backends by state (mean count, pg_stat_activity every 5 ms), the local server's event loop, a call's time at the server",
    headers: [
      'variant',
      'server',
      ...states,
      'server event loop busy',
      'PostgreSQL active / call',
      'call place held / call (limited)',
      'CPU/message, all three',
      'CPU-s per s (cores busy)',
    ],
    rows: rows.map((row) => {
      const active = Object.entries(row.backends)
        .filter(([state]) => state.startsWith('active'))
        .reduce((sum, [, mean]) => sum + mean, 0);
      return [
        row.variant,
        row.server,
        ...states.map((state) => (row.backends[state] ?? 0).toFixed(2)),
        `${(row.serverEventLoop * 100).toFixed(0)}%`,
        `${((active * row.seconds * 1000) / row.calls).toFixed(2)} ms`,
        row.server === 'limited' ? `${((settings.limit * row.seconds * 1000) / row.calls).toFixed(2)} ms` : '',
        `${fixed(perMessage(row.cpu.postgres + row.cpu.server + row.cpu.handlers, row))} µs`,
        ((row.cpu.postgres + row.cpu.server + row.cpu.handlers) / 1_000_000 / row.seconds).toFixed(2),
      ];
    }),
    notes: [
      '"idle in transaction": a transaction open between two of its calls, waiting for the next one; "active, running": executing (or runnable); ' +
        '"active, waiting on ...": a lock (Lock:) or internal lock (LWLock:) wait. Counts are of client backends connected to the bench database.',
      'PostgreSQL active per call: the mean number of active backends times the trial time, over the calls. Call place held per call: the limited ' +
        "server's places times the trial time, over the calls (the places are all taken throughout: 80 records in flight queue for them). The difference " +
        "is a call's time inside the local Data API server (HTTP, JSON, its pg client) while it holds its place, including the time its event loop waits for a core.",
      "CPU-s per s: the CPU the three processes used per second of the trial, out of the machine's cores; below the core count, the rest went to other work on the machine.",
    ],
  };
  return [capacity, where];
}

/** Section 7 of `npm run bench`: {@link measureCapacity} on the open and the limited server, 2 rounds of 2 s, then its tables. */
export async function capacitySection(
  servers: BenchServers,
  database: BenchDatabase,
  invoker: Invoker,
  all: readonly Variant[],
  targets: readonly RemoteDataApi[],
  settings: Omit<CapacitySettings, 'seconds' | 'rounds'> & { readonly seconds?: number; readonly rounds?: number },
): Promise<Table[]> {
  const full: CapacitySettings = { seconds: 2, rounds: 2, ...settings };
  return capacityTables(await measureCapacity(servers, database, invoker, all, targets, full), full);
}

/**
 * The purge against a steady claim load (section 4's windows): rows purged per second while the claims run,
 * the claims per second with and without a purge, and the PostgreSQL CPU the purge adds per row, so that
 * its share of a database's cores can be sized beside the claims'.
 */
export function purgeCapacityTable(runs: readonly PurgeRun[], claimLanes: number, machine = machineLabel()): Table {
  return {
    title: `4b. Capacity: the purge against a steady claim load, per core of the database (${machine})`,
    headers: [
      'rows in the table',
      'purged rows/s (claims running)',
      'claims/s without a purge',
      'claims/s during the purge',
      'PostgreSQL CPU per claim',
      'PostgreSQL CPU the purge adds per row',
      'purged rows/s per PostgreSQL core',
    ],
    rows: runs.map((run) => {
      const { during, without } = run.windows;
      const claimsWithout = run.claims.without.length / without.seconds;
      const claimsDuring = run.claims.during.length / during.seconds;
      // What the claims would have cost in the purge's windows, at the rate they ran there, taken off: the rest is the purge's.
      const perClaim = without.postgresCpuMicros / Math.max(1, run.claims.without.length);
      const purgeCpu = during.postgresCpuMicros - perClaim * run.claims.during.length;
      const perRow = purgeCpu / Math.max(1, run.current.deleted);
      return [
        run.rows.toLocaleString('en-US'),
        Math.round(run.current.deleted / run.current.seconds).toLocaleString('en-US'),
        claimsWithout.toFixed(0),
        claimsDuring.toFixed(0),
        `${perClaim.toFixed(0)} µs`,
        `${perRow.toFixed(1)} µs`,
        Math.round(1_000_000 / perRow).toLocaleString('en-US'),
      ];
    }),
    notes: [
      `${claimLanes} claim lanes run throughout (one single-statement inbox() record after another, each one call through the local Data API), while purge() ` +
        'deletes the old rows in slices, each slice a window followed by a window of the same length without a purge (section 4).',
      "PostgreSQL CPU: the postmaster's processes (/proc/<pid>/schedstat) over each kind of window. The purge's own CPU is the purge windows' CPU less " +
        'what their claims cost at the per-claim CPU of the windows without a purge; per core is one second over that per row.',
    ],
  };
}

/** The machine the figures come from, for their labels. */
export function machineLabel(): string {
  return `${cpus().length} x ${cpus()[0]?.model.trim() ?? 'unknown CPU'}, load average ${loadavg()[0]!.toFixed(1)} at the end`;
}

function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

/** Alone: starts its own server process and database, runs the section, prints its tables. */
async function main(): Promise<void> {
  const argument = (name: string, fallback: number) => {
    const index = process.argv.indexOf(`--${name}`);
    const value = index >= 0 ? Number(process.argv[index + 1]) : fallback;
    if (!(value > 0)) throw new Error(`--${name} must be a number above 0, got "${process.argv[index + 1]}"`);
    return value;
  };
  const limit = argument('limit', 4);
  const listed = (name: string) => {
    const index = process.argv.indexOf(`--${name}`);
    return index >= 0 ? (process.argv[index + 1] ?? '').split(',') : undefined;
  };
  const only = listed('variants');
  if (only && !only.includes('bare')) throw new Error('--variants must hold bare, the baseline of every ratio');
  const serverNames = listed('servers') ?? ['open', 'limited'];
  const settings: CapacitySettings = {
    lambdas: argument('lambdas', 8),
    seconds: argument('seconds', 2),
    rounds: argument('rounds', 3),
    batchSize: 10,
    limit,
    only,
    progress: (message: string) => process.stderr.write(`[capacity] ${message}\n`),
  };
  const servers = await startBenchServers();
  let database: BenchDatabase | undefined;
  try {
    // As `npm run bench` starts them (bench/run.ts).
    const open = await servers.start('open');
    const limited = await servers.start('limited', {
      maxConcurrentCalls: limit,
      maxOpenTransactions: settings.lambdas * CONCURRENCY + 10,
      maxConnectionsPerDatabase: settings.lambdas * CONCURRENCY + 30,
    });
    database = await benchDatabase(servers.postgresUrl, open);
    const invoker = new Invoker(database);
    const targets = serverNames.map((name) => {
      const server = { open, limited }[name];
      if (!server) throw new Error(`--servers: "${name}" is not open or limited`);
      return server;
    });
    const trials = await measureCapacity(servers, database, invoker, variants(), targets, settings);
    process.stdout.write(`${capacityTables(trials, settings).map(toText).join('\n\n')}\n`);
    if (invoker.failures.length > 0) {
      process.stderr.write(`[capacity] failures:\n${invoker.failures.map((failure) => `  - ${failure}\n`).join('')}`);
      process.exitCode = 1;
    }
  } finally {
    database?.close();
    await servers.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
