import type pg from 'pg';
import type { DataApiSession } from '../lambda/inbox/data-api/session.js';
import type { DatabaseTarget } from '../lambda/inbox/data-api/session.js';
import type { InboxSession } from '../lambda/inbox/transport/session.js';
import { postgres, PostgresSession } from '../lambda/inbox/transport/postgres/index.js';
import type { Faults } from './data-api/faults.js';
import type { Stats } from './data-api/stats.js';
import { loadPg } from './peer-loaders.js';
import { sweeperSession } from './scenario-steps.js';
import type { LocalStack } from './stack.js';
import { startWireProxy } from './wire/proxy.js';

/**
 * How a scenario's handlers reach the run's database: `'data-api'` through the local Data API server (as
 * `inbox()` does on Aurora without a VPC), or `'postgres'` over the PostgreSQL wire protocol with a
 * node-postgres pool (as through RDS Proxy, or to any PostgreSQL), through the testkit's wire proxy, which
 * injects the same faults.
 */
export const SCENARIO_TRANSPORTS = ['data-api', 'postgres'] as const;

/** One of {@link SCENARIO_TRANSPORTS}. */
export type ScenarioTransport = (typeof SCENARIO_TRANSPORTS)[number];

/** What `postgres(pool)` from `sqs-inbox/postgres` gives: the `database` of `inbox()` on the wire. */
export type PostgresDatabase = ReturnType<typeof postgres>;

/**
 * The `database` a handler factory gets: Data API settings (`'data-api'`), or `postgres(pool)` on a pool of
 * the handler's own (`'postgres'`). Either goes straight into `inbox({ database })`.
 */
export type ScenarioDatabase = DatabaseTarget | PostgresDatabase;

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
  /** A `database` for one handler; on the wire each call makes a pool of its own, as each Lambda instance has one. */
  database(): ScenarioDatabase;
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
): Promise<HandlerTransport> {
  if (transport === 'data-api') {
    return {
      calls: local.dataApi,
      database: () => dataApi.target,
      session: dataApi.session,
      sweeper: sweeperSession(dataApi.target),
      outboxWatch: dataApi.session,
      problems: () => [],
      env: Object.fromEntries(PG_VARIABLES.map((name) => [name, undefined])),
      close: async () => {},
    };
  }
  const url = new URL(local.postgres.url);
  url.pathname = `/${database}`;
  const pgModule = await loadPg();
  const proxy = await startWireProxy(url.toString());
  const pools: pg.Pool[] = [];
  const pool = () => {
    const made = new pgModule.Pool({ connectionString: proxy.url, options: SERVER_OPTIONS, max: 10 });
    // An idle connection that a fault (a lost answer, a failover) closed: the next checkout replaces it.
    made.on('error', () => {});
    pools.push(made);
    return made;
  };
  const through = new URL(proxy.url);
  const session = new PostgresSession({ pool: pool() }, { callTimeoutMs: 10_000 });
  return {
    calls: proxy,
    database: () => postgres(pool()),
    session,
    sweeper: session,
    outboxWatch: session,
    problems: (calls, dataApiCalls) =>
      [
        ...(calls === 0 ? ["transport 'postgres', but the handlers made no call over the wire"] : []),
        ...(dataApiCalls > 0 ? [`transport 'postgres', but the handlers made ${dataApiCalls} call(s) to the local Data API`] : []),
      ].map((problem) => `${problem}: they ignored the transport. ${FOLLOW_THE_TRANSPORT}`),
    env: {
      PGHOST: through.hostname,
      PGPORT: through.port,
      PGDATABASE: database,
      PGUSER: decodeURIComponent(through.username),
      PGPASSWORD: decodeURIComponent(through.password),
      PGOPTIONS: SERVER_OPTIONS,
      ...Object.fromEntries(DATA_API_VARIABLES.map((name) => [name, undefined])),
    },
    close: async () => {
      await Promise.all(pools.map((made) => made.end().catch(() => {})));
      await proxy.close();
    },
  };
}
