import type pg from 'pg';
import { INBOX_ENV } from '../../lambda/inbox/contract.js';
import { DataApiSession } from '../../lambda/inbox/transport/data-api/session.js';
import type { DatabaseTarget } from '../../lambda/inbox/transport/data-api/session.js';
import { dataApi as dataApiTransport } from '../../lambda/inbox/transport/data-api/transport.js';
import type { InboxTransport } from '../../lambda/inbox/transport/transport.js';
import type { InboxSession } from '../../lambda/inbox/transport/session.js';
import { postgres } from '../../lambda/inbox/transport/postgres/index.js';
import { PostgresSession } from '../../lambda/inbox/transport/postgres/postgres-session.js';
import { DSQL_INBOX_MIGRATIONS } from '../../lambda/inbox/transport/dsql/migrations.js';
import { migrateDsqlSession } from '../../lambda/inbox/transport/dsql/migrations.js';
import { DsqlSession } from '../../lambda/inbox/transport/dsql/session.js';
import type { DsqlConflict, DsqlTarget } from '../../lambda/inbox/transport/dsql/index.js';
import { migrate } from '../../lambda/inbox/sql/schema.js';
import { dsqlOnProfile, startDsqlProfile } from '../dsql/profile.js';
import type { ScenarioLogin } from './consumer-role.js';
import type { Faults } from '../data-api/faults.js';
import type { Stats } from '../data-api/stats.js';
import { loadPg } from '../peer-loaders.js';
import type { LocalStack } from '../stack.js';
import { startWireProxy } from '../wire/proxy.js';
import type { WireProxy } from '../wire/proxy.js';
import type { StatementFeed } from './outside-writes.js';
import { uniform } from './fault-schedule.js';

/**
 * How a scenario's handlers reach the run's database: `'data-api'` through the local Data API server (as
 * `inbox()` does on Aurora without a VPC), `'postgres'` over the PostgreSQL wire protocol with a
 * node-postgres pool (as through RDS Proxy, or to any PostgreSQL), through the testkit's wire proxy, which
 * injects the same faults, or `'dsql'`: `dsql({ ... })` on the DSQL profile (local/dsql/profile.ts:
 * PostgreSQL held to Aurora DSQL's rules, optimistic-concurrency conflicts injected at COMMIT).
 */
export type ScenarioTransport = 'data-api' | 'postgres' | 'dsql';

/** Every {@link ScenarioTransport}, for the demo's flag and the options' check. */
export const SCENARIO_TRANSPORTS: readonly ScenarioTransport[] = ['data-api', 'postgres', 'dsql'];

/** The share of COMMITs the DSQL profile fails with DSQL's OC000 conflict when a run names none: 5%. */
export const DEFAULT_DSQL_CONFLICT_RATE = 0.05;

/** The variables that point node-postgres (`new pg.Pool()` with no settings) at a server. */
export const PG_VARIABLES = ['PGHOST', 'PGPORT', 'PGDATABASE', 'PGUSER', 'PGPASSWORD', 'PGOPTIONS'] as const;

/**
 * A transaction left idle this long is ended by PostgreSQL, as the scenario's own stack's Data API ends
 * one (its `transactionIdleTimeoutMs`): a crashed worker's transaction must not hold its claim for long.
 */
const IDLE_IN_TRANSACTION_MS = 2000;
const SERVER_OPTIONS = `-c idle_in_transaction_session_timeout=${IDLE_IN_TRANSACTION_MS}`;

const FOLLOW_THE_TRANSPORT =
  "Build the handler from the factory's database (({ database }) => inbox({ database, ... })), or give a module-level handler " +
  'database: postgres(new pg.Pool()) when PGHOST is set: the run sets the PG* variables to the wire proxy, and no INBOX_* Data API ones.';

/** The Data API variables by which `inbox()` finds its database when given none. */
const DATA_API_VARIABLES = ['INBOX_DATA_API_ENDPOINT', 'INBOX_RESOURCE_ARN', 'INBOX_SECRET_ARN'] as const;

/** The handlers' side of a run, on its transport. */
export interface HandlerTransport {
  /** Where the handlers' calls are faulted and counted: the Data API server, or the wire proxy. */
  readonly calls: { readonly faults: Faults; readonly stats: Stats };
  /** Every statement the handlers send, for the watch on writes outside the inbox's transaction. */
  readonly statements: StatementFeed;
  /** A `database` for one handler; on the wire each call makes a pool of its own, as each Lambda instance has one. */
  database(): InboxTransport;
  /** A session on the handlers' transport, faulted like their calls. */
  readonly session: InboxSession;
  /**
   * The outbox sweeper's session (the scheduled function's, on the handlers' transport) and the session
   * that watches for unsent outbox rows: their calls count with the handlers', on both transports.
   */
  readonly sweeper: InboxSession;
  readonly outboxWatch: InboxSession;
  /**
   * The environment that points a handler at the transport: on the wire the `PG*` variables (to the wire
   * proxy) and no Data API ones; on the Data API no `PG*` ones. `undefined` unsets a variable for the run.
   */
  readonly env: Readonly<Record<string, string | undefined>>;
  /**
   * What the run's call counts say about the transport: on the wire, handlers that made no call over it,
   * or made Data API calls (they ignored the transport). `calls` were counted on {@link calls}, `dataApiCalls`
   * on the local Data API server, both while the consumers ran.
   */
  problems(calls: number, dataApiCalls: number): string[];
  /**
   * Migrates the inbox's tables before the consumer's setup: INBOX_MIGRATIONS through the Data API, or
   * on DSQL their DSQL form through the profile (one DDL per transaction, async indexes), conflicts off.
   */
  migrate(): Promise<void>;
  /** After the consumer's setup: on DSQL the row limit on every table, then conflicts on. */
  ready(): Promise<void>;
  /** On DSQL: the conflicts the profile injected and the transactions the handlers ran again after one. */
  conflicts(): { readonly injected: number; readonly retried: number } | undefined;
  /**
   * From now on the handlers connect as `login` (the run's consumer role, local/scenario/consumer-role.ts):
   * `database()`, `session` and `env` name it; the sweeper and the run's own sessions stay the master user's.
   * Not on DSQL, whose profile connects as admin.
   */
  runAs?(login: ScenarioLogin): void;
  /** Ends the pools and the proxy. */
  close(): Promise<void>;
}

/**
 * Opens the handlers' side of a run on `transport`, for the run's database `database` on the stack's
 * server. On the Data API it is the run's own target and session; on the wire, a wire proxy in front of
 * the database, a pool per handler, and the `PG*` variables (`PGOPTIONS` with a 2 s
 * `idle_in_transaction_session_timeout`) for a handler that makes its own pool.
 */
export async function openHandlerTransport(
  local: LocalStack,
  database: string,
  transport: ScenarioTransport,
  dataApi: { target: DatabaseTarget; session: DataApiSession },
  conflictRate = DEFAULT_DSQL_CONFLICT_RATE,
  seed = 0,
): Promise<HandlerTransport> {
  const migrateOverDataApi = async () => {
    await migrate(dataApi.session);
  };
  const nothing = async () => {};
  if (transport === 'dsql') return openDsqlTransport(local, database, conflictRate, seed);
  if (transport === 'data-api') {
    let target = dataApi.target;
    let session: InboxSession = dataApi.session;
    return {
      calls: local.dataApi,
      statements: { watch: (listener) => local.dataApi.faults.watch(listener) },
      database: () => dataApiTransport(target),
      get session() {
        return session;
      },
      // Without resume retries: a sweep refused by a paused Aurora is tried again at the next.
      sweeper: new DataApiSession(dataApi.target, { callTimeoutMs: 10_000, resumeDelaysMs: [] }),
      outboxWatch: dataApi.session,
      problems: () => [],
      get env() {
        return {
          ...Object.fromEntries(PG_VARIABLES.map((name) => [name, undefined])),
          ...(target === dataApi.target ? {} : { [INBOX_ENV.SECRET_ARN]: target.secretArn }),
        };
      },
      runAs: (login) => {
        target = { ...dataApi.target, secretArn: login.secretArn };
        session = new DataApiSession(target, { callTimeoutMs: 10_000, resumeDelaysMs: [250, 500, 1000, 2000] });
      },
      migrate: migrateOverDataApi,
      ready: nothing,
      conflicts: () => undefined,
      close: nothing,
    };
  }
  const url = new URL(local.postgres.url);
  url.pathname = `/${database}`;
  const pgModule = await loadPg();
  const proxy = await startWireProxy(url.toString());
  const pools: pg.Pool[] = [];
  // The handlers' login: the proxy's (the master user) until runAs.
  let handlersUrl = proxy.url;
  const pool = (connectionString = handlersUrl) => {
    const made = new pgModule.Pool({ connectionString, options: SERVER_OPTIONS, max: 10 });
    // An idle connection that a fault (a lost answer, a failover) closed: the next checkout replaces it.
    made.on('error', () => {});
    pools.push(made);
    return made;
  };
  const ownSession = new PostgresSession({ pool: pool() }, { callTimeoutMs: 10_000 });
  let session = ownSession;
  return {
    calls: proxy,
    statements: wireStatements(proxy),
    database: () => postgres(pool()),
    get session() {
      return session;
    },
    sweeper: ownSession,
    outboxWatch: ownSession,
    problems: (calls, dataApiCalls) => ignoredTransport('postgres', calls, dataApiCalls),
    get env() {
      return wireEnvironment(handlersUrl, database);
    },
    runAs: (login) => {
      const url = new URL(proxy.url);
      url.username = encodeURIComponent(login.username);
      url.password = encodeURIComponent(login.password);
      handlersUrl = url.toString();
      session = new PostgresSession({ pool: pool() }, { callTimeoutMs: 10_000 });
    },
    migrate: migrateOverDataApi,
    ready: nothing,
    conflicts: () => undefined,
    close: async () => {
      await Promise.all(pools.map((made) => made.end().catch(() => {})));
      await proxy.close();
    },
  };
}

/** A wire run's problems when its handlers made no call over the wire, or called the local Data API. */
function ignoredTransport(transport: ScenarioTransport, calls: number, dataApiCalls: number): string[] {
  return [
    ...(calls === 0 ? [`transport '${transport}', but the handlers made no call over the wire`] : []),
    ...(dataApiCalls > 0 ? [`transport '${transport}', but the handlers made ${dataApiCalls} call(s) to the local Data API`] : []),
  ].map((problem) => `${problem}: they ignored the transport. ${FOLLOW_THE_TRANSPORT}`);
}

/** The statements through a wire proxy: its calls, and each Bind's values, its connection standing for its transaction. */
function wireStatements(proxy: WireProxy): StatementFeed {
  return {
    watch: (listener) => proxy.faults.watch(listener),
    watchParameters: (listener) => {
      proxy.watchParameters((connection, values) => listener(`wire-${connection}`, values));
    },
  };
}

/** The `PG*` variables pointing at the wire proxy at `proxyUrl`, and no Data API ones. */
function wireEnvironment(proxyUrl: string, database: string): Record<string, string | undefined> {
  const through = new URL(proxyUrl);
  return {
    PGHOST: through.hostname,
    PGPORT: through.port,
    PGDATABASE: database,
    PGUSER: decodeURIComponent(through.username),
    PGPASSWORD: decodeURIComponent(through.password),
    PGOPTIONS: SERVER_OPTIONS,
    ...Object.fromEntries(DATA_API_VARIABLES.map((name) => [name, undefined])),
  };
}

/**
 * The handlers on the DSQL profile: `dsql({ endpoint, port, ssl: false, password })` through the profile's
 * proxy, a pool per handler as each Lambda instance has one, DSQL's migrations, its row limit, and
 * conflicts at `conflictRate` of COMMITs, on the run's seed, once the tables are ready. A transaction left
 * idle ends after 2 s
 * (a database setting), as on the other transports: a crashed worker's claim must not hold its row lock.
 */
async function openDsqlTransport(local: LocalStack, database: string, conflictRate: number, seed: number): Promise<HandlerTransport> {
  const url = new URL(local.postgres.url);
  url.pathname = `/${database}`;
  const pgModule = await loadPg();
  const admin = new pgModule.Client({ connectionString: url.toString() });
  await admin.connect();
  try {
    await admin.query(`ALTER DATABASE "${database.replace(/"/g, '""')}" SET idle_in_transaction_session_timeout = ${IDLE_IN_TRANSACTION_MS}`);
  } finally {
    await admin.end();
  }
  // The n-th COMMIT's dice from the run's seed: which commits conflict still follows the order they come in.
  let commits = 0;
  const profile = await startDsqlProfile(url.toString(), { conflictRate: 0, random: () => uniform(seed, 'dsql-conflict', commits++) });
  // The transactions the handlers (and the run's own sessions) ran again after a conflict, as dsql() reports them.
  let retried = 0;
  const onConflict = (conflict: DsqlConflict) => {
    if (conflict.retried) retried++;
  };
  const targets: DsqlTarget[] = [];
  const target = () => {
    const made = dsqlOnProfile(profile, { database, password: decodeURIComponent(url.password), onConflict });
    targets.push(made);
    return made;
  };
  const session = new DsqlSession(target().pool, { callTimeoutMs: 10_000, resumeDelaysMs: [] }, { onConflict });
  return {
    calls: profile.proxy,
    statements: wireStatements(profile.proxy),
    database: target,
    session,
    sweeper: session,
    outboxWatch: session,
    problems: (calls, dataApiCalls) => [
      ...ignoredTransport('dsql', calls, dataApiCalls),
      ...profile.violations.map(
        (violation) => `the DSQL profile refused a statement DSQL does not support (${violation.rule.id}): ${violation.statement.slice(0, 120)}`,
      ),
    ],
    env: wireEnvironment(profile.proxy.url, database),
    migrate: async () => {
      await migrateDsqlSession(session, [DSQL_INBOX_MIGRATIONS]);
    },
    ready: async () => {
      await profile.enforceRowLimit();
      profile.proxy.conflicts.rate = conflictRate;
    },
    conflicts: () => ({ injected: profile.proxy.conflicts.injected, retried }),
    close: async () => {
      await Promise.all(targets.map((made) => made.pool.end().catch(() => {})));
      await profile.close();
    },
  };
}
