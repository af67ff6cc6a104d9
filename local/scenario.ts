import { randomBytes } from 'node:crypto';
import type { DataApiSession } from '../lambda/inbox/data-api/session.js';
import type { InboxSession } from '../lambda/inbox/transport/session.js';
import { notesOf, problemsOf } from './effects.js';
import type { DoubleEffect, OutOfOrderEffect } from './effects.js';
import type { SqsEventSource, SqsEventHandler } from './event-source.js';
import { FAULTS, FaultSchedule } from './fault-schedule.js';
import type { CommitPoint, FaultLikelihood, FaultName } from './fault-schedule.js';
import {
  buildMessages,
  createQueueWithDlq,
  deadLetteredKeys,
  driveUntilDrained,
  exclusively,
  faultedSource,
  handedOnMessages,
  inOwnDatabase,
  localSqsClient,
  onStack,
  openDatabase,
  produce,
  readVerdict,
  runEnvironment,
  runSetup,
  runVerify,
  sqsDrained,
  sweeperTransport,
  waiting,
} from './scenario-steps.js';
import { startSweeper, unsentRows } from './outbox-sweeper.js';
import type { PeriodicSweeper } from './outbox-sweeper.js';
import { DEFAULT_DSQL_CONFLICT_RATE, openHandlerTransport, SCENARIO_TRANSPORTS } from './scenario-transport.js';
import type { HandlerTransport, ScenarioDatabase, ScenarioTransport } from './scenario-transport.js';
import type { LocalStack } from './stack.js';
import { INBOX_ENV } from '../lambda/inbox/contract.js';

export { FAULTS, FAULT_RATES } from './fault-schedule.js';
export type { CommitPoint, FaultLikelihood, FaultName, FaultUnit } from './fault-schedule.js';
export { SCENARIO_TRANSPORTS } from './scenario-transport.js';
export type { PostgresDatabase, ScenarioDatabase, ScenarioTransport } from './scenario-transport.js';

/**
 * One message of a scenario, as {@link ScenarioConsumer.message} builds it.
 *
 * @example
 * const message = (i: number): ScenarioMessage => ({ key: `pay-${i}`, body: { paymentId: `pay-${i}` }, groupId: `customer-${i % 20}` });
 */
export interface ScenarioMessage {
  /**
   * The message's business id: what your effects query returns as `key`. Sent as the message's
   * idempotency key (the `idempotency-key` attribute and, on FIFO, the deduplication id), so 1 to 128
   * letters, digits or punctuation, and unique per message.
   */
  readonly key: string;
  /** The body; an object is sent as its JSON. */
  readonly body: string | object;
  /** The FIFO MessageGroupId. @default `group-${index % groups}` on a FIFO queue */
  readonly groupId?: string | undefined;
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
   * this handler's own through the wire proxy. For a session of your own on either, see `session`.
   */
  readonly database: ScenarioDatabase;
  /**
   * A session on the run's database over the run's transport, for handlers that talk to it directly:
   * a `DataApiSession` (callTimeoutMs 10 s, resumeDelaysMs [250, 500, 1000, 2000]) on `'data-api'`, a
   * `PostgresSession` (callTimeoutMs 10 s) on `'postgres'`. It meets the same faults as the handler.
   */
  readonly session: InboxSession;
  /** Which event source mapping the handler serves, from 0. */
  readonly instance: number;
  /** The local stack the run uses. */
  readonly local: LocalStack;
}

/**
 * Makes the handler under test once the run's environment is set. Return your handler, or a promise of
 * it: `() => import('../src/worker.js').then((m) => m.handler)` loads a module that reads `INBOX_*` at
 * load time; `({ database }) => inbox({ database, apply })` builds one from the run's database.
 *
 * @example
 * const handler: ScenarioHandlerFactory = () => import('../src/payments-worker.js').then((m) => m.handler);
 */
export type ScenarioHandlerFactory = (environment: ScenarioEnvironment) => SqsEventHandler | Promise<SqsEventHandler>;

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
   * `environment.database` in the factory to run several scenarios in one file.
   */
  readonly handler: ScenarioHandlerFactory;
  /**
   * Creates your tables in the run's fresh database, after the inbox migrations: one SQL statement per
   * string, or a function of a session on it.
   * @default nothing
   */
  readonly setup?: string | readonly string[] | ((session: DataApiSession) => Promise<void>) | undefined;
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
  readonly verify?: ((session: DataApiSession, handedOn: HandedOn) => ScenarioCheck | Promise<ScenarioCheck>) | undefined;
}

/** The messages in each outbox destination's queue at the end of a run (see {@link ScenarioRunOptions.destinations}), in the order they arrived. */
export type HandedOn = Readonly<Record<string, readonly HandedOnMessage[]>>;

/** One message your handler handed on to a destination. */
export interface HandedOnMessage {
  /** Its body, as sent. */
  readonly body: string;
  /** Its `idempotency-key` attribute: the outbox's stable key. */
  readonly key: string | undefined;
  /** Its FIFO MessageGroupId. */
  readonly groupId: string | undefined;
}

/** What a {@link ScenarioConsumer.verify} check returns: nothing (all is well), or the problems it found. */
export type ScenarioCheck = string | readonly string[] | void | undefined;

/**
 * Options of {@link runScenario} about the run: where, how many messages, which faults.
 *
 * @example
 * const run: ScenarioRunOptions = { local, messages: 500, seed: 7, faults: ['crash-after-commit', 'drop-commit'], consumers: 4 };
 */
export interface ScenarioRunOptions {
  /** The stack to run on; it is left running. @default a new `startLocal()` (honouring DATABASE_URL, with a 2 s transaction idle timeout), closed at the end */
  readonly local?: LocalStack | undefined;
  /** An existing, empty database on the stack's server to run in, when the role may not CREATE DATABASE. @default a fresh database per run */
  readonly database?: string | undefined;
  /** Messages produced (logical ones; duplicate sends come on top). @default 300 */
  readonly messages?: number | undefined;
  /** Same seed, same fault decisions. @default 417 (the demo's) */
  readonly seed?: number | undefined;
  /** The faults to inject, each at its own rate; `[]` runs without faults. @default every fault in {@link FAULTS} */
  readonly faults?: readonly FaultName[] | undefined;
  /** A FIFO queue (with a FIFO dead-letter queue), or a standard one. @default true */
  readonly fifo?: boolean | undefined;
  /**
   * How the handlers reach the database. `'data-api'`: through the local Data API server, as on Aurora
   * without a VPC. `'postgres'`: over the PostgreSQL wire protocol, as through RDS Proxy or to any
   * PostgreSQL: the factory's `database` is then `postgres(pool)` on a node-postgres pool through the
   * testkit's wire proxy, which injects the same faults (a lost COMMIT answer is a connection dropped after
   * the server committed; auto-pause holds statements as RDS Proxy does while Aurora resumes), and the run
   * sets `PGHOST`, `PGPORT`, `PGDATABASE`, `PGUSER`, `PGPASSWORD` and `PGOPTIONS` to it instead of the
   * Data API's `INBOX_*` variables, so that `new pg.Pool()` in a module connects there. The run's `setup`,
   * `effects` and `verify` use the Data API on the same database either way. A run on `'postgres'`
   * whose handlers made no call over the wire reports it in `problems`. `'dsql'`: the factory's `database`
   * is `dsql({ ... })` on the DSQL profile (local/dsql/profile.ts; docs/dsql.md), the inbox's tables in
   * their DSQL form, the same faults, every statement checked against DSQL's supported SQL (a refused one
   * is in `problems`), at most 3,000 modified rows a transaction, and COMMITs failing with DSQL's OC000
   * conflict at `conflictRate`.
   * @default 'data-api'
   */
  readonly transport?: ScenarioTransport | undefined;
  /**
   * With `transport: 'dsql'`: the share of COMMITs (and autocommit writes) that fail with DSQL's
   * optimistic-concurrency conflict (SQLSTATE 40001, OC000), 0 to 1; the runtime runs such a transaction
   * again. Counted in the result's `conflicts`. Only for `'dsql'`.
   * @default 0.05
   */
  readonly conflictRate?: number | undefined;
  /** Event source mappings polling the queue at once, each with its own handler from the factory. @default 3 */
  readonly consumers?: number | undefined;
  /** FIFO message groups for messages that name none. @default max(4, messages / 10) */
  readonly groups?: number | undefined;
  /** Visibility timeout and function timeout, in seconds; maxReceiveCount is 5. @default 2 */
  readonly visibilityTimeoutSeconds?: number | undefined;
  /** Give up waiting for the queue to drain after this long. @default 120 s, or 40 ms per message when that is longer */
  readonly timeoutMs?: number | undefined;
  /**
   * More environment for the run, set with `INBOX_*` before the factory is called and restored after;
   * it may override `INBOX_CONSUMER`. Powertools reads its switches when a Logger or Metrics is created:
   * `{ POWERTOOLS_METRICS_DISABLED: 'true', POWERTOOLS_LOG_LEVEL: 'SILENT' }` silences an `inbox()`
   * handler's EMF line per invocation and its logs, if its module is first loaded by the factory.
   * @default `INBOX_CONSUMER: 'local-consumer'` and nothing more
   */
  readonly env?: Readonly<Record<string, string>> | undefined;
  /**
   * The outbox destinations your handler sends to by name (`tx.send({ to: 'receipts', ... })` with
   * `sqsOutbox({ client: new SQSClient({}) })`): each gets a queue of the run (FIFO when `fifo`), named in
   * `INBOX_DESTINATIONS` as the InboxConsumer construct does; a sweeper sends every half second what the
   * handlers' relays left (rows older than the function timeout), and the run waits until no outbox row
   * is unsent. What reached each queue is in the result's `destinations` and `verify`'s second argument.
   * @default none
   */
  readonly destinations?: readonly string[] | undefined;
  /** Told of progress: records settled (deleted or dead-lettered) out of those sent. */
  readonly onProgress?: ((settled: number, sent: number) => void) | undefined;
}

/**
 * Options of {@link runScenario}: your consumer (`handler`, `message`, `effects`) and the run's settings.
 *
 * @example
 * const options: ScenarioOptions = { ...payments, messages: 300, env: { POWERTOOLS_METRICS_DISABLED: 'true' } };
 */
export type ScenarioOptions = ScenarioRunOptions & ScenarioConsumer;

/**
 * What a scenario saw, from the database and the queues at the end.
 *
 * @example
 * const result = await runScenario(options);
 * expect(result.problems).toEqual([]); // fails with e.g. "2 message(s) applied more than once: pay-17 (2 times), ..."
 */
export interface ScenarioResult {
  /** The consumer's {@link ScenarioConsumer.label} (default 'handler'). */
  readonly pattern: string;
  /** The seed the faults were decided by. */
  readonly seed: number;
  /** The transport the handlers ran on ({@link ScenarioRunOptions.transport}). */
  readonly transport: ScenarioTransport;
  /** Logical messages produced. */
  readonly messages: number;
  /** Messages sent, duplicate sends included. */
  readonly sends: number;
  /** Messages sent a second time with the same idempotency key. */
  readonly duplicateSends: number;
  /** Messages sent with their body cut short. */
  readonly poison: number;
  /** Handler invocations, over every event source. */
  readonly invocations: number;
  /** Records handed to handlers, redeliveries included. */
  readonly recordsDelivered: number;
  /** Invocations that ran past the function timeout: nothing of their batch was deleted. */
  readonly timeouts: number;
  /** Messages whose effect was applied at least once. */
  readonly applied: number;
  /** Messages whose effect was applied more than once. */
  readonly doubled: number;
  /** Those messages, with how many times each was applied. */
  readonly doubleEffects: readonly DoubleEffect[];
  /** Effects beyond the first, summed over messages. */
  readonly extraEffects: number;
  /** Messages with no effect that are neither parked nor in the dead-letter queue. */
  readonly lost: number;
  /** Their keys. */
  readonly lostKeys: readonly string[];
  /** Well-formed messages with no effect, accounted for in the dead-letter queue or the parked table. */
  readonly wellFormedInDlqOrParked: number;
  /** Messages in the inbox's parked-message table. */
  readonly parked: number;
  /** Messages in the dead-letter queue. */
  readonly deadLettered: number;
  /** False when order could not be judged: a standard queue, or an effects query without `seq`. */
  readonly orderChecked: boolean;
  /** Messages whose first effect came after a later message of the same FIFO group, none of them dead-lettered (see outOfOrderPastDeadLetter). */
  readonly orderViolations: number;
  /** Those messages, each with the later one applied before it. */
  readonly outOfOrder: readonly OutOfOrderEffect[];
  /**
   * Messages first applied after a later message of their group once a copy of them had reached the
   * dead-letter queue: not a problem, since their group moved on without them and FIFO order ends there
   * (docs/fifo.md, "Where the FIFO guarantee ends"). Its effect came from a later duplicate send of the
   * key, or landed late from a consumer that ran past its timeout on the message's last receive.
   */
  readonly outOfOrderPastDeadLetter: readonly OutOfOrderEffect[];
  /** Keys the effects query returned that no message carried (a sign the query is wrong). */
  readonly unexpectedKeys: readonly string[];
  /**
   * Database calls the consumers made while they ran: calls the local Data API received, or on the wire
   * (`transport: 'postgres'` or `'dsql'`) statements through the wire proxy, each a round trip.
   */
  readonly dataApiCalls: number;
  /** `dataApiCalls` per message sent. */
  readonly callsPerMessage: number;
  /** How many times each fault was injected, by fault name. */
  readonly faultsInjected: Readonly<Record<string, number>>;
  /**
   * On `transport: 'dsql'`: the optimistic-concurrency conflicts the DSQL profile injected at COMMIT (or
   * on an autocommit write), and the transactions the handlers ran again after one; `undefined` on the
   * other transports.
   */
  readonly conflicts: { readonly injected: number; readonly retried: number } | undefined;
  /**
   * Each fault asked for: its rate, what the rate counts, how often it struck, and how many messages
   * make it 99% likely to strike at least once. A fault that never struck is also named in `problems`.
   */
  readonly faultLikelihood: readonly FaultLikelihood[];
  /** What reached each outbox destination (see {@link ScenarioRunOptions.destinations}). */
  readonly destinations: HandedOn;
  /** Outbox rows the run's sweeper sent: those the handlers' relays did not (a crash, a lost commit answer, a failed send). */
  readonly outboxSwept: number;
  /** Wall time of the whole run, in milliseconds. */
  readonly elapsedMs: number;
  /** False when the queue (and, with destinations, the outbox) did not drain before the timeout. */
  readonly completed: boolean;
  /** True when the run drained and every message was applied once or accounted for, in order: `problems` is empty. */
  readonly exactlyOnce: boolean;
  /**
   * One readable line per problem (doubles, lost, out-of-order, unknown keys, not drained, a commit point
   * that never matched, so `drop-commit` and `crash-in-transaction` were never injected, any other fault
   * asked for that never struck, with how many messages make it likely, and what `verify` found), for
   * `expect(result.problems).toEqual([])`.
   */
  readonly problems: readonly string[];
  /** One readable line per thing seen that is not a problem: {@link ScenarioResult.outOfOrderPastDeadLetter}. */
  readonly notes: readonly string[];
}

/** A handler a factory returned, and the database of the run it was built for. */
const builtFor = new WeakMap<object, string>();

/**
 * Drives a consumer through the local SQS queue, Lambda's event source mapping and the demo's seeded
 * fault schedule (duplicate sends, crashes before and after the commit, lost commit responses,
 * auto-pause, visibility expiry, 5xx, poison bodies), then checks exactly-once on your own tables with
 * your effects query: doubles, lost messages, FIFO order, plus counts, for your consumer (`handler`,
 * `setup`, `message`, `effects`).
 *
 * Each run gets a fresh database on the stack's server, with the inbox schema migrated, and sets
 * `INBOX_DATA_API_ENDPOINT`, `INBOX_RESOURCE_ARN`, `INBOX_SECRET_ARN`, `INBOX_DATABASE` and
 * `INBOX_CONSUMER` in `process.env` for as long as it lasts. One run at a time per process: it owns
 * `process.env` and the stack's Data API faults and call counts while it runs.
 *
 * @example
 * const result = await runScenario({
 *   handler: () => import('../src/payments-worker.js').then((m) => m.handler),
 *   setup: 'CREATE TABLE public.payments (payment_id text NOT NULL, amount_cents int NOT NULL)',
 *   message: (i) => ({ key: `pay-${i}`, body: { paymentId: `pay-${i}`, amountCents: 100 + i } }),
 *   effects: 'SELECT payment_id AS key, count(*) FROM public.payments GROUP BY 1',
 * });
 * expect(result.problems).toEqual([]);
 */
export function runScenario(options: ScenarioOptions): Promise<ScenarioResult>;
/**
 * The same, on a stack you started (it is left running).
 *
 * @example
 * const local = await startLocal({ dataApi: { transactionIdleTimeoutMs: 2000 } });
 * const result = await runScenario(local, { ...payments, messages: 2000, seed: 417 });
 */
export function runScenario(local: LocalStack, options: ScenarioOptions): Promise<ScenarioResult>;
export async function runScenario(first: LocalStack | ScenarioOptions, second?: ScenarioOptions): Promise<ScenarioResult> {
  const options: ScenarioOptions = second ? { ...second, local: first as LocalStack } : (first as ScenarioOptions);
  const settings = resolve(options);
  return exclusively('runScenario', (setEnv) => onStack(options.local, (local) => run(local, settings, setEnv)));
}

/** The options of one run, validated, with the defaults filled in. */
interface Settings {
  readonly consumer: ScenarioConsumer;
  readonly messages: number;
  readonly seed: number;
  readonly faults: readonly FaultName[];
  readonly fifo: boolean;
  readonly consumers: number;
  readonly groups: number;
  readonly visibilityTimeoutSeconds: number;
  readonly timeoutMs: number;
  readonly database: string | undefined;
  readonly transport: ScenarioTransport;
  readonly conflictRate: number;
  readonly env: Readonly<Record<string, string>> | undefined;
  readonly destinations: readonly string[];
  readonly onProgress: ((settled: number, sent: number) => void) | undefined;
}

/** Validates the options once, naming every problem, and fills in the defaults. */
function resolve(options: ScenarioOptions): Settings {
  const problems: string[] = [];
  const given = options as Partial<ScenarioConsumer>;
  let consumer: ScenarioConsumer | undefined;
  if (typeof given.handler !== 'function')
    problems.push("handler must be a factory of your handler, e.g. () => import('../src/worker.js').then((m) => m.handler).");
  if (typeof given.message !== 'function') problems.push('message must be a function (index) => ({ key, body, groupId? }).');
  if (typeof given.effects !== 'string' || given.effects.trim() === '') {
    problems.push('effects must be SQL returning key and count per message, e.g. SELECT payment_id AS key, count(*) FROM public.payments GROUP BY 1.');
  }
  if (given.commitPoint !== undefined && given.commitPoint !== 'commit' && typeof given.commitPoint?.statement !== 'function') {
    problems.push("commitPoint must be 'commit' or { statement: (sql) => boolean }.");
  }
  if (given.verify !== undefined && typeof given.verify !== 'function')
    problems.push('verify must be a function (session) => problems, e.g. async (session) => { ... }.');
  if (problems.length === 0) consumer = given as ScenarioConsumer;
  const messages = options.messages ?? 300;
  const wholeNumber = (name: string, value: number, min: number) => {
    if (!Number.isInteger(value) || value < min) problems.push(`${name} must be a whole number of at least ${min}; got ${value}.`);
  };
  wholeNumber('messages', messages, 1);
  const seed = options.seed ?? 417;
  wholeNumber('seed', seed, 0);
  const consumers = options.consumers ?? 3;
  wholeNumber('consumers', consumers, 1);
  const groups = options.groups ?? Math.max(4, Math.floor(messages / 10));
  wholeNumber('groups', groups, 1);
  const visibilityTimeoutSeconds = options.visibilityTimeoutSeconds ?? 2;
  wholeNumber('visibilityTimeoutSeconds', visibilityTimeoutSeconds, 1);
  const timeoutMs = options.timeoutMs ?? Math.max(120_000, messages * 40);
  wholeNumber('timeoutMs', timeoutMs, 1);
  const destinations = options.destinations ?? [];
  if (!Array.isArray(destinations) || destinations.some((name) => typeof name !== 'string' || !/^[A-Za-z0-9_-]{1,40}$/.test(name))) {
    problems.push(`destinations must be names of 1 to 40 letters, digits, - or _, as tx.send({ to }) gives them; got ${JSON.stringify(destinations)}.`);
  }
  const transport = options.transport ?? 'data-api';
  if (!(SCENARIO_TRANSPORTS as readonly unknown[]).includes(transport)) {
    problems.push(`transport must be ${SCENARIO_TRANSPORTS.map((name) => `'${name}'`).join(' or ')}; got ${JSON.stringify(transport)}.`);
  }
  const conflictRate = options.conflictRate ?? DEFAULT_DSQL_CONFLICT_RATE;
  if (options.conflictRate !== undefined && transport !== 'dsql') {
    problems.push(`conflictRate is the DSQL profile's: give it with transport: 'dsql', or leave it out; got transport ${JSON.stringify(transport)}.`);
  }
  if (typeof conflictRate !== 'number' || !(conflictRate >= 0 && conflictRate <= 1)) {
    problems.push(`conflictRate must be a share of COMMITs from 0 to 1, e.g. 0.05; got ${JSON.stringify(conflictRate)}.`);
  }
  const faults = options.faults ?? FAULTS;
  const unknown = faults.filter((fault) => !(FAULTS as readonly string[]).includes(fault));
  if (unknown.length > 0) problems.push(`faults: unknown ${unknown.map((f) => JSON.stringify(f)).join(', ')}; choose from ${FAULTS.join(', ')}.`);
  if (problems.length > 0 || !consumer) throw new RangeError(`runScenario: ${problems.join(' ')}`);
  return {
    consumer,
    messages,
    seed,
    faults,
    fifo: options.fifo ?? true,
    consumers,
    groups,
    visibilityTimeoutSeconds,
    timeoutMs,
    database: options.database,
    transport,
    conflictRate,
    env: options.env,
    destinations: options.destinations ?? [],
    onProgress: options.onProgress,
  };
}

type SetEnv = (env: Readonly<Record<string, string | undefined>>) => void;

async function run(local: LocalStack, settings: Settings, setEnv: SetEnv): Promise<ScenarioResult> {
  const started = Date.now();
  const { consumer } = settings;
  const label = consumer.label ?? 'handler';
  const tag = `${label
    .toLowerCase()
    .replace(/[^a-z0-9_]/g, '_')
    .slice(0, 20)}_${settings.seed}_${randomBytes(3).toString('hex')}`;
  local.dataApi.faults.clear();

  if (settings.database) return runIn(local, settings, setEnv, { started, tag, database: settings.database });
  return inOwnDatabase(local, `scenario_${tag}`, (database) => runIn(local, settings, setEnv, { started, tag, database }));
}

/** What {@link run} prepared for {@link runIn}. */
interface Prepared {
  readonly started: number;
  readonly tag: string;
  readonly database: string;
}

/** The run in its database: queues, producer, consumers, then the verdict. */
async function runIn(local: LocalStack, settings: Settings, setEnv: SetEnv, prepared: Prepared): Promise<ScenarioResult> {
  const { started, tag, database } = prepared;
  const { consumer, fifo } = settings;
  const label = consumer.label ?? 'handler';
  const { client: dataApiClient, target, session } = openDatabase(local, database);
  // The handlers' transport, and where their calls meet the schedule's faults.
  let handlers: HandlerTransport | undefined;

  // The queues, through the model (queue attributes), and the producer through the SQS endpoint.
  const model = local.sqs.model;
  const { queue, dlq } = createQueueWithDlq(model, `scenario-${tag}`, fifo, settings.visibilityTimeoutSeconds);
  const sqsClient = await localSqsClient(local);
  const sources: SqsEventSource[] = [];
  const handOff = settings.destinations.map((name) => ({
    name,
    ...createQueueWithDlq(model, `scenario-${tag}-${name}`, fifo, settings.visibilityTimeoutSeconds),
  }));
  let sweeper: PeriodicSweeper | undefined;
  let swept = 0;
  try {
    const opened = await openHandlerTransport(local, database, settings.transport, { target, session }, settings.conflictRate);
    handlers = opened;
    await opened.migrate();
    await runSetup('runScenario', session, consumer.setup);
    await opened.ready();
    const { calls } = opened;
    const destinationUrls = Object.fromEntries(handOff.map(({ name, queue: q }) => [q.url, `<queue ${name}>`]));
    const schedule = new FaultSchedule(settings.seed, settings.faults, calls, consumer.commitPoint ?? 'commit', destinationUrls);

    // Produce: every message once through the producer (its key as the idempotency key), duplicates
    // with the same key but a fresh deduplication id, and a few poison bodies.
    const sent = buildMessages({ ...settings, message: consumer.message }, schedule);
    const duplicateSends = await produce(model, sqsClient, queue, sent, schedule);
    const sends = sent.length + duplicateSends;

    // The handlers, one per event source mapping, made once the environment is set.
    const named: Record<string, string> =
      handOff.length > 0 ? { [INBOX_ENV.DESTINATIONS]: JSON.stringify(Object.fromEntries(handOff.map(({ name, queue: q }) => [name, q.url]))) } : {};
    const assigned = runEnvironment(local, database, { ...opened.env, ...named, ...settings.env });
    setEnv(assigned);
    const env = definedOnly(assigned);
    for (let instance = 0; instance < settings.consumers; instance++) {
      const handler = await makeHandler(consumer.handler, {
        env,
        transport: settings.transport,
        database: opened.database(),
        session: opened.session,
        instance,
        local,
      });
      checkHandler(handler, database);
      sources.push(
        faultedSource({
          model,
          queue,
          handler,
          schedule,
          visibilityTimeoutSeconds: settings.visibilityTimeoutSeconds,
          functionName: `scenario-consumer-${instance}`,
        }),
      );
    }

    let left = sends;
    // On the wire, any call the local Data API gets while the consumers run is a handler that ignored the transport.
    local.dataApi.stats.reset();
    const { completed, dataApiCalls } = await driveUntilDrained({
      local,
      calls,
      schedule,
      started,
      timeoutMs: settings.timeoutMs,
      start: () => {
        for (const source of sources) source.start();
        if (handOff.length > 0)
          sweeper = startSweeper(
            opened.sweeper,
            sweeperTransport(sqsClient, (sent) => (swept += sent)),
            { everyMs: 500, minAgeMs: settings.visibilityTimeoutSeconds * 1000 },
          );
      },
      progress: () => {
        left = waiting(model, queue.url);
        return { settled: sends - left, total: sends };
      },
      onProgress: () => settings.onProgress?.(Math.max(0, sends - left), sends),
      drained: () => sqsDrained(model, [queue.url], sources, sweeper ? () => unsentRows(opened.outboxWatch) : undefined),
      stop: async () => {
        await sweeper?.stop();
        await Promise.all(sources.map((source) => source.stop()));
      },
    });
    left = waiting(model, queue.url);
    const transportProblems = opened.problems(dataApiCalls, local.dataApi.stats.total());

    // Count, from the user's effects query, the parked table and the dead-letter queue.
    const verdict = await readVerdict(session, consumer.effects, sent, 'SELECT message_key AS key FROM inbox.parked_message', deadLetteredKeys(model, dlq));
    const problems = problemsOf(verdict, completed, settings.timeoutMs, left);
    const unmatched = schedule.commitPointProblem();
    if (unmatched) problems.push(unmatched);
    problems.push(...schedule.unfiredProblems(settings.messages));
    problems.push(...transportProblems);
    const destinations: HandedOn = Object.fromEntries(handOff.map(({ name, queue: q }) => [name, handedOnMessages(model, q)]));
    problems.push(...(await runVerify(consumer.verify, session, destinations)));
    const total = (count: (source: SqsEventSource) => number) => sources.reduce((sum, source) => sum + count(source), 0);
    return {
      pattern: label,
      seed: settings.seed,
      transport: settings.transport,
      messages: settings.messages,
      sends,
      duplicateSends,
      poison: sent.filter((message) => message.poison).length,
      invocations: total((source) => source.stats.invocations),
      recordsDelivered: total((source) => source.stats.recordsDelivered),
      timeouts: total((source) => source.stats.timeouts),
      applied: verdict.applied,
      doubled: verdict.doubleEffects.length,
      doubleEffects: verdict.doubleEffects,
      extraEffects: verdict.extraEffects,
      lost: verdict.lostKeys.length,
      lostKeys: verdict.lostKeys,
      wellFormedInDlqOrParked: verdict.wellFormedInDlqOrParked.length,
      parked: verdict.parked,
      deadLettered: verdict.deadLettered,
      orderChecked: verdict.orderChecked,
      orderViolations: verdict.outOfOrder.length,
      outOfOrder: verdict.outOfOrder,
      outOfOrderPastDeadLetter: verdict.outOfOrderPastDeadLetter,
      unexpectedKeys: verdict.unexpectedKeys,
      dataApiCalls,
      callsPerMessage: dataApiCalls / sends,
      faultsInjected: schedule.injected,
      conflicts: opened.conflicts(),
      faultLikelihood: schedule.likelihood(settings.messages),
      destinations,
      outboxSwept: swept,
      elapsedMs: Date.now() - started,
      completed,
      exactlyOnce: problems.length === 0,
      problems,
      notes: notesOf(verdict),
    };
  } finally {
    await sweeper?.stop();
    await Promise.all(sources.map((source) => source.stop()));
    local.dataApi.faults.clear();
    handlers?.calls.faults.clear();
    await handlers?.close();
    sqsClient.destroy();
    dataApiClient.destroy();
    for (const q of [queue, dlq, ...handOff.flatMap((destination) => [destination.queue, destination.dlq])]) model.deleteQueue(q.url);
  }
}

/** The variables a run sets, without those it unsets. */
function definedOnly(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined));
}

/**
 * Calls the factory. One that fails is often the handler itself, given where its factory belongs: an
 * `inbox()` handler refuses the environment as an event that is not SQS's.
 */
async function makeHandler(factory: ScenarioHandlerFactory, environment: ScenarioEnvironment): Promise<unknown> {
  try {
    return await factory(environment);
  } catch (error) {
    throw new Error(
      `runScenario: the handler factory failed: ${(error instanceof Error ? error.message : String(error)).replace(/\.?$/, '.')} If you gave the handler itself: handler must be a factory that returns your handler, e.g. handler: () => myHandler or () => import('../src/worker.js').then((m) => m.handler).`,
      { cause: error },
    );
  }
}

/**
 * A factory must give a handler, and a handler built for an earlier run's database (a module-level
 * handler whose module was loaded once per process) would apply this run's messages elsewhere.
 */
function checkHandler(handler: unknown, database: string): asserts handler is SqsEventHandler {
  if (typeof handler !== 'function') {
    throw new TypeError(
      `runScenario: handler must be a factory that returns your handler, e.g. handler: () => myHandler or () => import('../src/worker.js').then((m) => m.handler); the factory returned ${handler === null ? 'null' : typeof handler}.`,
    );
  }
  const earlier = builtFor.get(handler);
  if (earlier !== undefined && earlier !== database) {
    throw new Error(
      `runScenario: the factory returned the handler an earlier run built for its own database (${earlier}); modules load once per process, so a module-level handler serves one run. Build the handler in the factory from its argument (({ database }) => inbox({ database, ... })), or run one scenario per test file.`,
    );
  }
  builtFor.set(handler, database);
}
