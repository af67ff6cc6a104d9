import { INBOX_ENV } from '../../lambda/inbox/contract.js';
import type { SqsEventHandler } from '../event-source.js';
import type { LocalStack } from '../stack.js';
import { makeHandler } from './consumer.js';
import type { HandedOn, ScenarioConsumer } from './consumer.js';
import { inOwnDatabase, runTag } from './database.js';
import { drive } from './driver.js';
import { judgeRun } from './judge.js';
import { FAULTS } from './fault-schedule.js';
import type { FAULT_RATES, FaultName } from './fault-schedule.js';
import { checkConsumer, checkFaults, refuse, wholeNumber } from './options.js';
import { exclusively, onStack } from './ownership.js';
import type { SetEnv } from './ownership.js';
import { SqsScenarioSource } from './sqs.js';
import type { RunQueue } from './sqs.js';
import { DEFAULT_DSQL_CONFLICT_RATE, SCENARIO_TRANSPORTS } from './transport.js';
import type { ScenarioTransport } from './transport.js';

/**
 * Options of `runScenario` about the run: where, how many messages, which faults.
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
   * Run the handlers as the consumer's own database role, not as the master user: a role made after your
   * `setup` by the code that makes the deployed consumer's role (the inbox's claims plus these grants), on
   * transport `'data-api'` (a secret of its own) or `'postgres'` (`PGUSER`, `PGPASSWORD` and the pools). Pass
   * the construct's own, `worker.databaseGrants`, so a missing grant, or an UPDATE without the SELECT its
   * WHERE needs, fails here, named first in `problems` with its fix; a grant on a table your setup does not
   * create fails the run at once. `setup`, `effects` and `verify` still run as the master user.
   * @example [{ table: 'public.reservations', privileges: ['INSERT'] }, { table: 'public.stock', privileges: ['SELECT', 'UPDATE'] }]
   * @default none: the handlers connect as the master user, who may do anything
   */
  readonly databaseGrants?: readonly { readonly table: string; readonly privileges: readonly string[] }[] | undefined;
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
 * Options of `runScenario`: your consumer (`handler`, `message`, `effects`) and the run's settings.
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
  /**
   * Those messages, with how many times each was applied.
   * @example expect(result.doubleEffects).toEqual([]); // else e.g. [{ key: 'pay-17', count: 2 }]
   */
  readonly doubleEffects: readonly {
    /** The message's key (its idempotency key, and the `key` your effects query returns). */
    readonly key: string;
    /** Times applied, at least 2. */
    readonly count: number;
  }[];
  /** Effects beyond the first, summed over messages. */
  readonly extraEffects: number;
  /** Messages with no effect that are neither parked nor in the dead-letter queue. */
  readonly lost: number;
  /** Their keys. */
  readonly lostKeys: readonly string[];
  /**
   * Well-formed messages with no effect, in the dead-letter queue or the parked table: their effect is
   * lost, a problem but for those {@link ScenarioConsumer.expectedFailures} names and those a dead-lettered
   * poison message of their FIFO group took along.
   */
  readonly wellFormedInDlqOrParked: number;
  /** Messages in the inbox's parked-message table. */
  readonly parked: number;
  /** Messages in the dead-letter queue. */
  readonly deadLettered: number;
  /** False when order could not be judged: a standard queue, or an effects query without `seq`. */
  readonly orderChecked: boolean;
  /** Messages whose first effect came after a later message of the same FIFO group, none of them dead-lettered (see outOfOrderPastDeadLetter). */
  readonly orderViolations: number;
  /**
   * Those messages, each with the later one applied before it.
   * @example expect(result.outOfOrder).toEqual([]); // else e.g. [{ key: 'pay-3', groupId: 'customer-3', after: 'pay-23' }]
   */
  readonly outOfOrder: readonly {
    /** The message's key. */
    readonly key: string;
    /** Its FIFO message group. */
    readonly groupId: string;
    /** The later message of the group that was applied before it. */
    readonly after: string;
  }[];
  /**
   * Messages first applied after a later message of their group once a copy of them had reached the
   * dead-letter queue: not a problem, since their group moved on without them and FIFO order ends there
   * (docs/fifo.md, "Where the FIFO guarantee ends"). Its effect came from a later duplicate send of the
   * key, or landed late from a consumer that ran past its timeout on the message's last receive.
   */
  readonly outOfOrderPastDeadLetter: ScenarioResult['outOfOrder'];
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
  readonly faultLikelihood: readonly {
    /** The fault. */
    readonly fault: FaultName;
    /** The share of `per` it strikes. */
    readonly rate: number;
    /** What the rate counts, as {@link FAULT_RATES} says. */
    readonly per: (typeof FAULT_RATES)[FaultName]['per'];
    /** Times it was injected in this run. */
    readonly injected: number;
    /**
     * Messages that make at least one injection 99% likely: the n with 1 - (1 - rate)^n >= 0.99, n counted
     * in messages (a delivery fault meets every message at least once; a commit-point fault, this run's
     * commit-point calls per message, so undefined when the run made none).
     */
    readonly messagesFor99: number | undefined;
  }[];
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
   * asked for that never struck, with how many messages make it likely, a write the handler made outside
   * the inbox's transaction while a record was applied, well-formed messages lost to the dead-letter queue
   * or the parked table, and what `verify` found), for
   * `expect(result.problems).toEqual([])`.
   */
  readonly problems: readonly string[];
  /** One readable line per thing seen that is not a problem: {@link ScenarioResult.outOfOrderPastDeadLetter}. */
  readonly notes: readonly string[];
}

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
  return exclusively('runScenario', (setEnv) =>
    onStack('runScenario', options.local, (local) => {
      const tag = runTag(settings.consumer.label ?? 'handler', settings.seed);
      const body = (database: string) => run(local, database, tag, settings, setEnv);
      return settings.database ? body(settings.database) : inOwnDatabase(local, `scenario_${tag}`, body);
    }),
  );
}

/** The options of one run, validated, with the defaults filled in. */
interface Settings
  extends Required<
    Pick<
      ScenarioRunOptions,
      | 'messages'
      | 'seed'
      | 'faults'
      | 'fifo'
      | 'consumers'
      | 'groups'
      | 'visibilityTimeoutSeconds'
      | 'timeoutMs'
      | 'transport'
      | 'conflictRate'
      | 'destinations'
    >
  > {
  readonly consumer: ScenarioConsumer;
  readonly database: string | undefined;
  readonly env: ScenarioRunOptions['env'];
  readonly databaseGrants: ScenarioRunOptions['databaseGrants'];
  readonly onProgress: ScenarioRunOptions['onProgress'];
}

/** Validates the options once, naming every problem, and fills in the defaults. */
function resolve(options: ScenarioOptions): Settings {
  const problems: string[] = [];
  checkConsumer(problems, options, {
    handler: "() => import('../src/worker.js').then((m) => m.handler)",
    effects: 'key and count per message, e.g. SELECT payment_id AS key, count(*) FROM public.payments GROUP BY 1',
  });
  const messages = options.messages ?? 300;
  const settings: Settings = {
    consumer: options,
    messages,
    seed: options.seed ?? 417,
    faults: options.faults ?? FAULTS,
    fifo: options.fifo ?? true,
    consumers: options.consumers ?? 3,
    groups: options.groups ?? Math.max(4, Math.floor(messages / 10)),
    visibilityTimeoutSeconds: options.visibilityTimeoutSeconds ?? 2,
    timeoutMs: options.timeoutMs ?? Math.max(120_000, messages * 40),
    transport: options.transport ?? 'data-api',
    conflictRate: options.conflictRate ?? DEFAULT_DSQL_CONFLICT_RATE,
    destinations: options.destinations ?? [],
    database: options.database,
    databaseGrants: options.databaseGrants,
    env: options.env,
    onProgress: options.onProgress,
  };
  wholeNumber(problems, 'messages', messages, 1);
  wholeNumber(problems, 'seed', settings.seed, 0);
  wholeNumber(problems, 'consumers', settings.consumers, 1);
  wholeNumber(problems, 'groups', settings.groups, 1);
  wholeNumber(problems, 'visibilityTimeoutSeconds', settings.visibilityTimeoutSeconds, 1);
  wholeNumber(problems, 'timeoutMs', settings.timeoutMs, 1);
  const { destinations, transport, conflictRate } = settings;
  if (!Array.isArray(destinations) || destinations.some((name) => typeof name !== 'string' || !/^[A-Za-z0-9_-]{1,40}$/.test(name))) {
    problems.push(`destinations must be names of 1 to 40 letters, digits, - or _, as tx.send({ to }) gives them; got ${JSON.stringify(destinations)}.`);
  }
  if (!(SCENARIO_TRANSPORTS as readonly unknown[]).includes(transport)) {
    problems.push(`transport must be ${SCENARIO_TRANSPORTS.map((name) => `'${name}'`).join(' or ')}; got ${JSON.stringify(transport)}.`);
  }
  if (options.conflictRate !== undefined && transport !== 'dsql') {
    problems.push(`conflictRate is the DSQL profile's: give it with transport: 'dsql', or leave it out; got transport ${JSON.stringify(transport)}.`);
  }
  if (typeof conflictRate !== 'number' || !(conflictRate >= 0 && conflictRate <= 1)) {
    problems.push(`conflictRate must be a share of COMMITs from 0 to 1, e.g. 0.05; got ${JSON.stringify(conflictRate)}.`);
  }
  checkFaults(problems, settings.faults, FAULTS, 'unknown');
  refuse('runScenario', problems);
  return settings;
}

/** The run in its database: the queues, the consumers' handlers, one per mapping, then the verdict. */
async function run(local: LocalStack, database: string, tag: string, settings: Settings, setEnv: SetEnv): Promise<ScenarioResult> {
  const { consumer, transport } = settings;
  const source = await SqsScenarioSource.open(local, `scenario-${tag}`, settings);
  const destinations = settings.destinations.map((name): [string, RunQueue] => [name, source.queue(`scenario-${tag}-${name}`)]);
  const urls = Object.fromEntries(destinations.map(([name, { queue }]) => [name, queue.url]));
  let swept = 0;
  return drive({
    runner: 'runScenario',
    local,
    database,
    transport,
    conflictRate: settings.conflictRate,
    source,
    seed: settings.seed,
    faults: settings.faults,
    commitPoint: consumer.commitPoint ?? 'commit',
    // An outbox row carries its destination's URL, new every run: the schedule knows it by its name.
    runOwn: Object.fromEntries(destinations.map(([name, { queue }]) => [queue.url, `<queue ${name}>`])),
    messages: settings.messages,
    message: consumer.message,
    setup: consumer.setup,
    databaseGrants: settings.databaseGrants,
    timeoutMs: settings.timeoutMs,
    setEnv,
    // Named as the InboxConsumer construct names them.
    env: { ...(destinations.length > 0 ? { [INBOX_ENV.DESTINATIONS]: JSON.stringify(urls) } : {}), ...settings.env },
    connect: async ({ env, schedule, transport: handlers }) => {
      for (let instance = 0; instance < settings.consumers; instance++) {
        const environment = { env, transport, database: handlers.database(), session: handlers.session, instance, local };
        const handler = await makeHandler<SqsEventHandler, typeof environment>('runScenario', consumer.handler, environment, database, FACTORY_EXAMPLE);
        source.consume(source.input, handler, schedule, { functionName: `scenario-consumer-${instance}` });
      }
      if (destinations.length > 0)
        source.sweep(
          handlers.sweeper,
          source.outboxTransport((sent) => (swept += sent)),
          handlers.outboxWatch,
        );
    },
    onProgress: () => {
      const { settled, total } = source.progress();
      settings.onProgress?.(Math.max(0, settled), total);
    },
    judge: async (drained) => {
      const { production, schedule, session, completed, dataApiCalls } = drained;
      const handedOn: HandedOn = Object.fromEntries(destinations.map(([name, queue]) => [name, source.handedOn(queue)]));
      const { verdict, notes, judged } = await judgeRun({
        session,
        effects: consumer.effects,
        sent: production.sent,
        deadLettered: source.deadLettered(source.input),
        completed,
        timeoutMs: settings.timeoutMs,
        left: source.left(),
        schedule,
        messages: settings.messages,
        found: [...drained.transportProblems, ...drained.outsideWrites],
        refused: drained.roleProblems,
        verify: consumer.verify && ((verifying) => consumer.verify!(verifying, handedOn)),
        expectedFailures: consumer.expectedFailures,
        firstError: drained.firstError,
        failedByHandler: source.keysOf(drained.failedIds),
        transport,
      });
      return {
        ...judged,
        pattern: consumer.label ?? 'handler',
        seed: settings.seed,
        transport,
        messages: settings.messages,
        sends: production.writes,
        duplicateSends: production.duplicateSends,
        poison: production.sent.filter((message) => message.poison).length,
        invocations: source.total((stats) => stats.invocations),
        recordsDelivered: source.total((stats) => stats.recordsDelivered),
        timeouts: source.total((stats) => stats.timeouts),
        wellFormedInDlqOrParked: verdict.wellFormedInDlqOrParked.length,
        deadLettered: verdict.deadLettered,
        orderChecked: verdict.orderChecked,
        outOfOrderPastDeadLetter: verdict.outOfOrderPastDeadLetter,
        unexpectedKeys: verdict.unexpectedKeys,
        dataApiCalls,
        callsPerMessage: dataApiCalls / production.writes,
        conflicts: drained.transport.conflicts(),
        destinations: handedOn,
        outboxSwept: swept,
        elapsedMs: Date.now() - drained.started,
        completed,
        notes,
      };
    },
  });
}

const FACTORY_EXAMPLE = "() => myHandler or () => import('../src/worker.js').then((m) => m.handler)";
