import type { SqsEventHandler } from '../event-source.js';
import type { LocalStack } from '../stack.js';
import type { CommitPoint } from './fault-schedule.js';
import type { ScenarioMessage } from './source.js';
import type { ScenarioTransport } from './transport.js';
import type { InboxTransport } from '../../lambda/inbox/transport/transport.js';

/**
 * A session on the run's database, as `setup`, `verify` and a handler factory get it: statements with
 * `:name` parameters (values as `execute` of `sqs-inbox` binds them, `uuid()` and the other hints
 * included), in autocommit or in a transaction of your own. The run's sessions (the Data API's, the
 * wire's) are this and more; the rest is the inbox's own business.
 *
 * @example
 * verify: async (session) => {
 *   const { rows } = await session.execute('SELECT count(*)::int AS n FROM public.payments WHERE amount_cents < :min', { min: 0 });
 *   if (rows[0]?.n !== 0) return `${rows[0]?.n} negative payments`;
 * }
 */
export interface ScenarioSession {
  /**
   * Its transport's name (`data-api`, `postgres`, `dsql`). With it the session is also a transport the operations
   * of `sqs-inbox/operations` take: `setup: async (session) => { await migrate(session, [yours]); }`.
   */
  readonly name: string;
  /**
   * Runs one statement, in autocommit or inside `transactionId` (from {@link ScenarioSession.begin}):
   * its rows (a SELECT's, or `RETURNING`'s), keyed by column name, and how many rows it changed.
   */
  execute(
    sql: string,
    params?: Readonly<Record<string, unknown>>,
    transactionId?: string,
  ): Promise<{ readonly rows: Record<string, unknown>[]; readonly updated: number }>;
  /** Opens a transaction of your own and returns its id, for `execute`, `commit` and `rollback`. */
  begin(): Promise<string>;
  /** Commits the transaction. */
  commit(transactionId: string): Promise<void>;
  /** Rolls the transaction back. */
  rollback(transactionId: string): Promise<void>;
}

/**
 * What a handler factory gets: called once per event source mapping, after the run's database and
 * environment are ready.
 *
 * @example
 * const handler = ({ database }: ScenarioEnvironment) => inbox({ consumer: 'payments', database, apply });
 */
export interface ScenarioEnvironment {
  /**
   * The variables the run set in `process.env` (the `INBOX_*` ones, on the wire the `PG*` ones, and
   * {@link ScenarioRunOptions.env}); restored when the run ends.
   */
  readonly env: Readonly<Record<string, string>>;
  /** The transport the run's handlers use ({@link ScenarioRunOptions.transport}). */
  readonly transport: ScenarioTransport;
  /**
   * The run's database on the run's transport, for `inbox({ database })`: Data API settings (a client
   * with `maxAttempts: 1`) on `'data-api'`; on `'postgres'`, `postgres(pool)` with a node-postgres pool of
   * this handler's own through the wire proxy; `dsql({ ... })` on the DSQL profile on `'dsql'`. For a
   * session of your own on either, see `session`.
   */
  readonly database: InboxTransport;
  /**
   * A session on the run's database over the run's transport, for handlers that talk to it directly:
   * the Data API's (a 10 s call timeout, auto-pause resumed after 250, 500, 1000 and 2000 ms) on
   * `'data-api'`, the wire's (a 10 s call timeout) on `'postgres'` and `'dsql'`. It meets the same faults
   * as the handler.
   */
  readonly session: ScenarioSession;
  /** Which event source mapping the handler serves, from 0. */
  readonly instance: number;
  /** The local stack the run uses. */
  readonly local: LocalStack;
}

/**
 * The consumer a scenario drives: your handler, its tables, the messages it gets, and how to count its effects.
 *
 * @example
 * const payments: ScenarioConsumer = {
 *   handler: () => import('../src/payments-worker.js').then((m) => m.handler),
 *   setup: 'CREATE TABLE public.payments (id bigserial PRIMARY KEY, payment_id text NOT NULL, amount_cents int NOT NULL)',
 *   message: (i) => ({ key: `pay-${i}`, body: { paymentId: `pay-${i}`, amountCents: 100 + i } }),
 *   effects: 'SELECT payment_id AS key, count(*), min(id) AS seq FROM public.payments GROUP BY 1',
 * };
 */
export interface ScenarioConsumer {
  /**
   * A factory of the handler under test: any SQS handler, `inbox()` or not. It is called once per event
   * source mapping, after the run's database exists and `INBOX_*` is set. A module is loaded once per
   * process (vitest: per test file), so a module-level handler serves one run: build the handler from
   * `environment.database` in the factory to run several scenarios in one file. Return your handler, or a
   * promise of it: `() => import('../src/worker.js').then((m) => m.handler)` loads a module that reads
   * `INBOX_*` at load time; `({ database }) => inbox({ database, apply })` builds one from the run's database.
   */
  readonly handler: (environment: ScenarioEnvironment) => SqsEventHandler | Promise<SqsEventHandler>;
  /**
   * Creates your tables in the run's fresh database, after the inbox migrations: one SQL statement per
   * string, or a function of a session on it.
   * @default nothing
   */
  readonly setup?: string | readonly string[] | ((session: ScenarioSession) => Promise<void>) | undefined;
  /** Builds message `index` (0 to messages - 1): its key, body and FIFO group. */
  readonly message: (index: number) => ScenarioMessage;
  /**
   * SQL that returns, per message key, how many times its effect was applied: a `key` column, a
   * `count` column (a row without one counts 1; rows with the same key add up), and optionally `seq`,
   * a number or text that grows with time (e.g. `min(id)` of a bigserial), to judge FIFO order.
   * @example 'SELECT payment_id AS key, count(*), min(id) AS seq FROM public.payments GROUP BY 1'
   */
  readonly effects: string;
  /**
   * Where the handler's effect becomes durable, which `drop-commit` and `crash-in-transaction` aim at. For
   * `inbox()` in single-statement mode, match its statement with `includes`: it starts with the claim,
   * `WITH claimed AS (...)`. See {@link CommitPoint}.
   * @example { statement: (sql) => sql.includes('INSERT INTO public.payments') }
   * @default 'commit' (the effect is applied in a transaction)
   */
  readonly commitPoint?: CommitPoint | undefined;
  /**
   * Well-formed messages your handler refuses for good on purpose, which may end in the dead-letter queue
   * or the parked table: a predicate on the message's key, or how many at most. Any other well-formed
   * message there that an `inbox()` handler failed with an error of its own is a problem, its effect lost
   * (the poison fault's messages, the messages of a FIFO group behind a dead-lettered poison message, and
   * messages whose receives the run's faults used up are not counted against you).
   * @example (key) => key === 'res-13'
   * @default none
   */
  readonly expectedFailures?: ((key: string) => boolean) | number | undefined;
  /** The run's name in its result and in tables. @default 'handler' */
  readonly label?: string | undefined;
  /**
   * Checks more than the effects query can count, once the queue has drained, on a session on the run's
   * database (kept until it returns): an account's balance, a total, a row your handler must have
   * written. Return a problem line, or several, to report them; throw (e.g. a failed `expect`) to report
   * the error's message; return nothing when all is well. Each goes into `problems`, prefixed `verify: `.
   * @example async (session) => { const { rows } = await session.execute('SELECT sum(amount_cents)::int AS total FROM public.payments'); if (rows[0]?.total !== 47_850) return `total ${rows[0]?.total}, expected 47850`; }
   * @default nothing more than the effects query
   */
  readonly verify?:
    | ((session: ScenarioSession, handedOn: HandedOn) => string | readonly string[] | void | Promise<string | readonly string[] | void>)
    | undefined;
}

/** The messages in each outbox destination's queue at the end of a run (see {@link ScenarioRunOptions.destinations}), in the order they arrived. */
export type HandedOn = Readonly<
  Record<
    string,
    readonly {
      /** Its body, as sent. */
      readonly body: string;
      /** Its `idempotency-key` attribute: the outbox's stable key. */
      readonly key: string | undefined;
      /** Its FIFO MessageGroupId. */
      readonly groupId: string | undefined;
    }[]
  >
>;

/** A handler a factory returned, and the database of the run it was built for. */
const builtFor = new WeakMap<object, string>();

/**
 * Calls the factory of a run's handler, and checks what it gave. A factory that fails is often the
 * handler itself, given where its factory belongs: an `inbox()` handler refuses the environment as an
 * event that is not its source's. A handler built for an earlier run's database (a module-level handler
 * whose module was loaded once per process) would apply this run's messages elsewhere. `example` shows
 * the runner's factory.
 */
export async function makeHandler<Handler, Environment extends { readonly env: Readonly<Record<string, string>> }>(
  runner: string,
  factory: (environment: Environment) => Handler | Promise<Handler>,
  environment: Environment,
  database: string,
  example: string,
): Promise<Handler> {
  const factoryOf = `handler must be a factory that returns your handler, e.g. handler: ${example}`;
  let handler: unknown;
  try {
    handler = await factory(environment);
  } catch (error) {
    throw new Error(
      `${runner}: the handler factory failed: ${(error instanceof Error ? error.message : String(error)).replace(/\.?$/, '.')} If you gave the handler itself: ${factoryOf}.`,
      {
        cause: error,
      },
    );
  }
  if (typeof handler !== 'function') {
    throw new TypeError(`${runner}: ${factoryOf}; the factory returned ${handler === null ? 'null' : typeof handler}.`);
  }
  const earlier = builtFor.get(handler);
  if (earlier !== undefined && earlier !== database) {
    throw new Error(
      `${runner}: the factory returned the handler an earlier run built for its own database (${earlier}); modules load once per process, so a module-level handler serves one run. Build the handler in the factory from its argument (({ database }) => inbox({ database, ... })), or run one scenario per test file.`,
    );
  }
  builtFor.set(handler, database);
  return handler as Handler;
}
