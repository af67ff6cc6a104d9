import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { DataApiSession } from '../../lambda/inbox/transport/data-api/session.js';
import type { DatabaseCallError } from '../../lambda/inbox/errors.js';
import { RECORD_FAILED_CHANNEL } from '../../lambda/inbox/telemetry/failure-channel.js';
import type { RecordFailure } from '../../lambda/inbox/telemetry/failure-channel.js';
import type { LocalStack } from '../stack.js';
import { openDatabase, runSetup } from './database.js';
import { dsqlSetup } from './dsql-setup.js';
import type { Setup } from './database.js';
import { FaultSchedule } from './fault-schedule.js';
import type { CommitPoint, FaultName } from './fault-schedule.js';
import { LOCAL_CONSUMER, runEnvironment } from './ownership.js';
import { INBOX_ENV } from '../../lambda/inbox/contract.js';
import type { SetEnv } from './ownership.js';
import type { Production, ScenarioMessage, ScenarioSource } from './source.js';
import { OutsideWrites } from './outside-writes.js';
import type { StatementFeed } from './outside-writes.js';
import { openConsumerRole, RoleRefusals } from './consumer-role.js';
import type { ConsumerRole, ScenarioGrant } from './consumer-role.js';
import { openHandlerTransport } from './transport.js';
import type { HandlerTransport, ScenarioTransport } from './transport.js';

/**
 * One scenario, as the driver runs it: where, on which source, with which faults, and the runner's own
 * parts, `connect` (its handlers) and `judge` (its result). runScenario, runStreamScenario and the
 * pipeline demo are each such a plan.
 */
export interface Plan<Source extends ScenarioSource, Result> {
  /** The runner's name: its errors start with it. */
  readonly runner: string;
  readonly local: LocalStack;
  /** The run's database on the stack's server. */
  readonly database: string;
  /** How the handlers reach it. @default 'data-api' */
  readonly transport?: ScenarioTransport | undefined;
  readonly conflictRate?: number | undefined;
  readonly source: Source;
  readonly seed: number;
  readonly faults: readonly FaultName[];
  readonly commitPoint: CommitPoint;
  /** Strings new every run that statements may carry (queue URLs), by stable names, for the schedule. */
  readonly runOwn?: Readonly<Record<string, string>> | undefined;
  readonly messages: number;
  readonly message: (index: number) => ScenarioMessage;
  /** The consumer's tables, made after the inbox's. */
  readonly setup: Setup | undefined;
  /** Run the handlers as a consumer role with these grants (made after `setup`), not as the master user. */
  readonly databaseGrants?: readonly ScenarioGrant[] | undefined;
  readonly timeoutMs: number;
  /** Sets the handlers' environment in `process.env`: a run that owns the process gives it. */
  readonly setEnv?: SetEnv | undefined;
  /** More environment for the handlers, after the run's own, which it may override. */
  readonly env?: Readonly<Record<string, string | undefined>> | undefined;
  /** Subscribes the handlers to the source, once the messages are in and the environment is set. */
  connect(run: Run<Source>): Promise<void> | void;
  /** Told of progress at every look at the source. */
  readonly onProgress?: ((source: Source) => void) | undefined;
  /** The runner's result, from the drained run. */
  judge(run: DrainedRun<Source>): Promise<Result>;
}

/** A run as the driver hands it to the runner's `connect`. */
export interface Run<Source extends ScenarioSource> {
  readonly local: LocalStack;
  readonly database: string;
  readonly source: Source;
  readonly schedule: FaultSchedule;
  /** The handlers' side of the database: their transport, its faults and counts. */
  readonly transport: HandlerTransport;
  /** The run's own Data API session on its database, never faulted: setup, effects, verify. */
  readonly session: DataApiSession;
  readonly production: Production;
  /** The variables the run set for the handlers, those it unset left out. */
  readonly env: Readonly<Record<string, string>>;
  /** When the run started (Date.now()). */
  readonly started: number;
}

/** A run once its source drained, or its time ran out. */
export interface DrainedRun<Source extends ScenarioSource> extends Run<Source> {
  readonly completed: boolean;
  /** The handlers' database calls while the mappings ran: Data API calls, or round trips through the wire proxy. */
  readonly dataApiCalls: number;
  /** What the call counts say about the transport: a handler that ignored it. */
  readonly transportProblems: readonly string[];
  /** Writes the handlers made outside the inbox's transaction while a record was applied, one line per statement. */
  readonly outsideWrites: readonly string[];
  /** What the run's consumer role was refused (with `databaseGrants`): the first refusal, named with its fix. */
  readonly roleProblems: readonly string[];
  /** The first error an `inbox()` handler failed or parked a record with while the mappings ran, if any. */
  readonly firstError: Error | undefined;
  /** The ids (an SQS messageId, ...) of the records an `inbox()` handler failed or parked with an error of its own. */
  readonly failedIds: ReadonlySet<string>;
}

/**
 * The one scenario driver: the run's database with the inbox's tables and the consumer's, the producer's
 * messages through the source, the handlers subscribed, the mappings run under the fault schedule until
 * the source drained (or the deadline), then the runner's judge. It leaves the stack as it found it: its
 * faults cleared, the source's queues and the handlers' pools gone.
 */
export async function drive<Source extends ScenarioSource, Result>(plan: Plan<Source, Result>): Promise<Result> {
  const started = Date.now();
  const { local, database, source } = plan;
  local.dataApi.faults.clear();
  local.sqs.faults.clear();
  const { client, target, session } = openDatabase(local, database);
  let transport: HandlerTransport | undefined;
  let role: ConsumerRole | undefined;
  let refusals: RoleRefusals | undefined;
  try {
    transport = await openHandlerTransport(local, database, plan.transport ?? 'data-api', { target, session }, plan.conflictRate, plan.seed);
    await transport.migrate();
    await runSetup(plan.runner, session, plan.transport === 'dsql' ? dsqlSetup(plan.runner, plan.setup) : plan.setup);
    await transport.ready();
    if (plan.databaseGrants !== undefined) {
      if (transport.runAs === undefined) {
        throw new RangeError(
          `${plan.runner}: databaseGrants runs the handlers as the consumer's role on transport 'data-api' or 'postgres'; ` +
            "the DSQL profile connects as admin (DSQL's roles are IAM-mapped). Leave databaseGrants out with transport 'dsql'.",
        );
      }
      const consumer = plan.env?.[INBOX_ENV.CONSUMER] ?? LOCAL_CONSUMER;
      role = await openConsumerRole(plan.runner, local, session, database, plan.databaseGrants, consumer);
      transport.runAs(role);
      refusals = new RoleRefusals(role.username, consumer);
    }
    const schedule = new FaultSchedule(plan.seed, plan.faults, transport.calls, plan.commitPoint, plan.runOwn);
    const production = await source.produce(schedule, plan.messages, plan.message);

    const assigned = runEnvironment(local, database, { ...transport.env, ...plan.env });
    plan.setEnv?.(assigned);
    const env = Object.fromEntries(Object.entries(assigned).filter((entry): entry is [string, string] => entry[1] !== undefined));
    const run: Run<Source> = { local, database, source, schedule, transport, session, production, env, started };
    await plan.connect(run);

    // On the wire, any call the local Data API gets while the mappings run is a handler that ignored the transport.
    local.dataApi.stats.reset();
    const outside = new OutsideWrites(new Set(production.sent.map((message) => message.key)));
    let firstError: Error | undefined;
    const failedIds = new Set<string>();
    // The handler's real error, which its log (often silenced in tests) is otherwise the only place of.
    const failed = (failure: unknown) => {
      const { id, error } = failure as RecordFailure;
      firstError ??= error;
      refusals?.see(error);
      if (id !== undefined && !byTheRun(error)) failedIds.add(id);
    };
    subscribe(RECORD_FAILED_CHANNEL, failed);
    let drained: { completed: boolean; dataApiCalls: number };
    try {
      drained = await untilDrained(plan, schedule, transport, started, refusals ? [outside, refusals] : [outside]);
    } finally {
      unsubscribe(RECORD_FAILED_CHANNEL, failed);
    }
    const { completed, dataApiCalls } = drained;
    const transportProblems = transport.problems(dataApiCalls, local.dataApi.stats.total());
    return await plan.judge({
      ...run,
      completed,
      dataApiCalls,
      transportProblems,
      outsideWrites: outside.problems(),
      roleProblems: refusals?.problems() ?? [],
      firstError,
      failedIds,
    });
  } finally {
    await source.stop();
    local.dataApi.faults.clear();
    local.sqs.faults.clear();
    transport?.calls.faults.clear();
    try {
      await transport?.close();
    } finally {
      await role?.drop();
    }
    source.close();
    client.destroy();
  }
}

/**
 * Whether a record's error is one the run's faults and load cause (a database unavailable, resuming or
 * timing out, a lost connection or answer, a conflict or a cancelled statement), not the handler's own.
 */
function byTheRun(error: Error): boolean {
  // By its fields, not instanceof: a handler may load the package's other module format (CommonJS under jest).
  const { failure, sqlState } = error as Partial<DatabaseCallError>;
  if (typeof failure !== 'string') return false;
  return (failure !== 'statement' && failure !== 'rejected') || RUN_STATES.has(sqlState ?? '');
}

/** SQLSTATEs of a statement the run's faults fail: a serialization conflict, a deadlock, a cancelled statement, too many connections. */
const RUN_STATES = new Set(['40001', '40P01', '57014', '53300']);

/**
 * The schedule over the run: the handlers' faults and counts cleared, their statements watched, the commit-point faults armed,
 * Aurora paused, the mappings started; Aurora paused again half-way; then, once drained (or at the
 * deadline), the mappings stopped and the faults cleared. Returns whether it drained, and the database
 * calls the handlers made.
 */
async function untilDrained<Source extends ScenarioSource>(
  plan: Plan<Source, unknown>,
  schedule: FaultSchedule,
  transport: HandlerTransport,
  started: number,
  watchers: readonly { watch(feed: StatementFeed): void }[],
): Promise<{ completed: boolean; dataApiCalls: number }> {
  const { source } = plan;
  const { calls } = transport;
  calls.stats.reset();
  calls.faults.clear();
  for (const watcher of watchers) watcher.watch(transport.statements);
  schedule.armCommitPoint();
  schedule.pause();
  source.start();
  const deadline = started + plan.timeoutMs;
  let pausedAgain = false;
  let completed = false;
  for (;;) {
    const { settled, total } = source.progress();
    plan.onProgress?.(source);
    if (!pausedAgain && settled >= total / 2) {
      pausedAgain = true;
      schedule.pause();
    }
    if (await source.drained()) {
      completed = true;
      break;
    }
    if (Date.now() > deadline) break;
  }
  await source.stop();
  calls.faults.clear();
  plan.local.sqs.faults.clear();
  return { completed, dataApiCalls: calls.stats.total() };
}
