import type { DataApiSession } from '../../lambda/inbox/transport/data-api/session.js';
import type { ScenarioResult } from './run-scenario.js';
import { compareSeq, firstRow, readEffects, selectByKey } from './effects.js';
import type { KeyEffects } from './effects.js';
import type { ScenarioConsumer } from './consumer.js';
import type { FaultSchedule } from './fault-schedule.js';
import type { ScenarioTransport } from './transport.js';

// The judge: what was sent against what the database and the queues hold at the end. Every scenario's
// verdict comes from here, read from the user's effects query, never from the handler's own account.

/** A message a scenario sent, as the verdict needs it. */
export interface JudgedMessage {
  /** The message's key. */
  readonly key: string;
  /** The FIFO group, if any. */
  readonly groupId: string | undefined;
  /** 1 for the group's first message, 2 for its second, ... in send order. */
  readonly position: number;
  /** The body was cut short on purpose (the `poison` fault). */
  readonly poison: boolean;
}

// Named for the package's own code; ScenarioResult spells them out, so a user needs no more names.
/** A message whose effect was applied more than once. */
export type DoubleEffect = ScenarioResult['doubleEffects'][number];
/** A message first applied after a later message of its FIFO group. */
export type OutOfOrderEffect = ScenarioResult['outOfOrder'][number];

/** The judgement of one run's effects against what was sent, parked and dead-lettered. */
export interface Verdict {
  /** Messages applied at least once. */
  readonly applied: number;
  readonly doubleEffects: readonly DoubleEffect[];
  /** Effects beyond the first, summed over messages. */
  readonly extraEffects: number;
  /** Not applied, not parked, not in the dead-letter queue. */
  readonly lostKeys: readonly string[];
  /** Well-formed messages not applied, accounted for in the dead-letter queue or the parked table. */
  readonly wellFormedInDlqOrParked: readonly string[];
  /** Well-formed messages in the dead-letter queue or the parked table, applied or not (an effect the query cannot see may be lost). */
  readonly wellFormedFailed: readonly string[];
  /** Messages (sent keys) in the parked table. */
  readonly parked: number;
  /** Messages (sent keys) in the dead-letter queue. */
  readonly deadLettered: number;
  /** False when order could not be judged: a standard queue, or no `seq` column. */
  readonly orderChecked: boolean;
  /** Messages first applied after a later message of their group, with no copy in the dead-letter queue: order broken. */
  readonly outOfOrder: readonly OutOfOrderEffect[];
  /**
   * Messages first applied after a later message of their group that reached the dead-letter queue: their
   * group moved on without them, and FIFO order ends there (docs/fifo.md, "Where the FIFO guarantee ends").
   */
  readonly outOfOrderPastDeadLetter: readonly OutOfOrderEffect[];
  /** Keys the effects query returned that no message carried. */
  readonly unexpectedKeys: readonly string[];
}

/** Judges the effects of the messages sent: doubles, lost, out-of-order within FIFO groups. */
export function judge(
  sent: readonly JudgedMessage[],
  effects: ReadonlyMap<string, KeyEffects>,
  parkedKeys: ReadonlySet<string>,
  deadLetteredKeys: ReadonlySet<string>,
): Verdict {
  const sentKeys = new Set(sent.map((message) => message.key));
  const countOf = (key: string) => effects.get(key)?.count ?? 0;
  const doubleEffects = sent.filter((m) => countOf(m.key) > 1).map((m) => ({ key: m.key, count: countOf(m.key) }));
  const notApplied = sent.filter((m) => countOf(m.key) === 0);
  const accounted = (m: JudgedMessage) => parkedKeys.has(m.key) || deadLetteredKeys.has(m.key);
  const applied = sent.filter((m) => countOf(m.key) > 0);
  const orderChecked = sent.every((m) => m.groupId !== undefined) && applied.every((m) => effects.get(m.key)?.seq !== undefined);
  const disordered = orderChecked ? outOfOrder(applied, effects) : [];
  return {
    applied: applied.length,
    doubleEffects,
    extraEffects: doubleEffects.reduce((sum, d) => sum + d.count - 1, 0),
    lostKeys: notApplied.filter((m) => !accounted(m)).map((m) => m.key),
    wellFormedInDlqOrParked: notApplied.filter((m) => accounted(m) && !m.poison).map((m) => m.key),
    wellFormedFailed: sent.filter((m) => accounted(m) && !m.poison).map((m) => m.key),
    parked: sent.filter((m) => parkedKeys.has(m.key)).length,
    deadLettered: sent.filter((m) => deadLetteredKeys.has(m.key)).length,
    orderChecked,
    outOfOrder: disordered.filter((effect) => !deadLetteredKeys.has(effect.key)),
    outOfOrderPastDeadLetter: disordered.filter((effect) => deadLetteredKeys.has(effect.key)),
    unexpectedKeys: [...effects.keys()].filter((key) => !sentKeys.has(key) && effects.get(key)!.count > 0),
  };
}

/**
 * One readable line per thing the run saw that is not a problem: effects past a dead-lettered message,
 * whose order the FIFO guarantee does not cover.
 */
export function notesOf(verdict: Pick<Verdict, 'outOfOrderPastDeadLetter'>): string[] {
  const past = verdict.outOfOrderPastDeadLetter;
  if (past.length === 0) return [];
  return [
    `${past.length} message(s) applied after a later message of their FIFO group once a copy of them had reached the dead-letter queue, ` +
      `where FIFO order ends (docs/fifo.md, "Where the FIFO guarantee ends"): ${listed(past.map(describeOrder))}. ` +
      'Their group moved on without them: the effect came from a later duplicate send of the same key, or landed late from a consumer still running past its timeout on its last receive.',
  ];
}

/** One readable line per kind of problem; empty when every message was applied exactly once, in order. */
export function problemsOf(verdict: Verdict, completed: boolean, timeoutMs: number, left: number): string[] {
  const problems: string[] = [];
  if (!completed) problems.push(`the queue did not drain within ${timeoutMs} ms: ${left} message(s) still queued or in flight`);
  if (verdict.doubleEffects.length > 0) {
    problems.push(
      `${verdict.doubleEffects.length} message(s) applied more than once: ${listed(verdict.doubleEffects.map((d) => `${d.key} (${d.count} times)`))}`,
    );
  }
  if (verdict.lostKeys.length > 0) {
    const hint = verdict.applied === 0 ? '; nothing was applied at all: does the effects query return the keys that message() gives?' : '';
    problems.push(`${verdict.lostKeys.length} message(s) lost (not applied, not parked, not in the dead-letter queue): ${listed(verdict.lostKeys)}${hint}`);
  }
  if (verdict.outOfOrder.length > 0) {
    problems.push(
      `${verdict.outOfOrder.length} message(s) applied after a later message of their FIFO group: ${listed(verdict.outOfOrder.map(describeOrder))}`,
    );
  }
  if (verdict.unexpectedKeys.length > 0) {
    problems.push(
      `the effects query returned ${verdict.unexpectedKeys.length} key(s) no message carried: ${listed(verdict.unexpectedKeys)}; it must return each message's key as message() gives it`,
    );
  }
  return problems;
}

/** The first ten of a list, and how many more. */
function listed(items: readonly string[]): string {
  return `${items.slice(0, 10).join(', ')}${items.length > 10 ? `, ... (${items.length - 10} more)` : ''}`;
}

function describeOrder(effect: OutOfOrderEffect): string {
  return `${effect.key} after ${effect.after} (group ${effect.groupId})`;
}

function outOfOrder(applied: readonly JudgedMessage[], effects: ReadonlyMap<string, KeyEffects>): OutOfOrderEffect[] {
  const groups = new Map<string, JudgedMessage[]>();
  for (const message of applied) groups.set(message.groupId!, [...(groups.get(message.groupId!) ?? []), message]);
  const found: OutOfOrderEffect[] = [];
  for (const [groupId, messages] of groups) {
    // Judged on each message's first effect; equal seqs get the benefit of the doubt.
    const byFirstEffect = [...messages].sort((a, b) => compareSeq(effects.get(a.key)!.seq!, effects.get(b.key)!.seq!) || a.position - b.position);
    let latest: JudgedMessage | undefined;
    for (const message of byFirstEffect) {
      if (latest && message.position < latest.position) found.push({ key: message.key, groupId, after: latest.key });
      else latest = message;
    }
  }
  return found;
}

/**
 * Judges what was sent against the effects query (read in pages), the keys `parkedSql` returns (a `key`
 * column) and the dead-lettered keys; a dead-lettered message applied out of order is no violation.
 */
export async function readVerdict(
  session: DataApiSession,
  effectsSql: string,
  sent: readonly JudgedMessage[],
  parkedSql: string,
  deadLettered: ReadonlySet<string>,
): Promise<Verdict> {
  const effectsFailed = (error: unknown): never => {
    throw new Error(`runScenario: the effects query failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  };
  // One row first, so a query without a key column is named as such, not as PostgreSQL's complaint about the pages' ORDER BY.
  readEffects(await firstRow(session, effectsSql).catch(effectsFailed));
  // In pages: past some 13,000 of the demo's orders one answer would pass the Data API's 1 MiB limit.
  const effects = readEffects(await selectByKey(session, effectsSql).catch(effectsFailed));
  const parkedRows = await selectByKey(session, parkedSql);
  const verdict = judge(sent, effects, new Set(parkedRows.map((row) => String(row.key))), deadLettered);
  // A message in the dead-letter queue that was applied anyway was applied from the producer's later
  // re-send (`duplicate-sends`), which FIFO rightly delivers after its group's later messages. (Poison
  // takes the messages behind it in its batches along; under load, function timeouts can use up a
  // message's 5 receives.)
  return { ...verdict, outOfOrder: verdict.outOfOrder.filter((effect) => !deadLettered.has(effect.key)) };
}

/** The parked messages' keys, for {@link readVerdict}. */
export const PARKED_KEYS = 'SELECT message_key AS key FROM inbox.parked_message';

/** What {@link judgeRun} judges a run by, besides the database. */
export interface RunToJudge {
  /** A session on the run's database, never faulted. */
  readonly session: DataApiSession;
  /** The user's effects query. */
  readonly effects: string;
  readonly sent: readonly JudgedMessage[];
  readonly deadLettered: ReadonlySet<string>;
  readonly completed: boolean;
  readonly timeoutMs: number;
  /** Records left queued, in flight or not checkpointed. */
  readonly left: number;
  /** The run's faults, which must have struck, or say so. */
  readonly schedule: FaultSchedule;
  readonly messages: number;
  /** Problems the run found itself (a handler that ignored its transport), after the schedule's. */
  readonly found: readonly string[];
  /** What the run's consumer role was refused: first, since every other problem may be its echo. */
  readonly refused?: readonly string[] | undefined;
  /** The user's own check, on the run's database. */
  readonly verify: ((session: DataApiSession) => unknown) | undefined;
  /** The first error the handler failed or parked a record with, named when (almost) nothing applied. */
  readonly firstError: Error | undefined;
  /** How the handlers reached the database: the commit they never made is named as that transport names it. */
  readonly transport: ScenarioTransport;
  /**
   * The keys the handler failed or parked with an error of its own at least once; `undefined` where
   * records cannot be told by key (a stream): then every well-formed message lost counts.
   */
  readonly failedByHandler: ReadonlySet<string> | undefined;
  /** Well-formed messages the handler refuses on purpose ({@link ScenarioConsumer.expectedFailures}). */
  readonly expectedFailures: ((key: string) => boolean) | number | undefined;
}

/** What every scenario's result says of its run, as the judge found it (a stream's result picks the same). */
export type Judged = Pick<
  ScenarioResult,
  | 'applied'
  | 'doubled'
  | 'doubleEffects'
  | 'extraEffects'
  | 'lost'
  | 'lostKeys'
  | 'parked'
  | 'orderViolations'
  | 'outOfOrder'
  | 'faultsInjected'
  | 'faultLikelihood'
  | 'exactlyOnce'
  | 'problems'
>;

/**
 * A run's verdict and every problem with it, one readable line each: doubles, lost, out of order and
 * unknown keys (the effects), a commit point that never matched and faults that never struck (a run
 * that proved nothing must not pass), what the run found, then what `verify` returned or threw.
 */
export async function judgeRun(run: RunToJudge): Promise<{ verdict: Verdict; notes: string[]; judged: Judged }> {
  const { schedule } = run;
  const verdict = await readVerdict(run.session, run.effects, run.sent, PARKED_KEYS, run.deadLettered);
  // Nothing applied: the handler's own error says why, and a commit point that never matched is only its echo.
  const unmatched = verdict.applied === 0 ? undefined : schedule.commitPointProblem(run.transport === 'data-api' ? 'CommitTransaction' : 'COMMIT');
  const problems = [
    ...(run.refused ?? []),
    ...hardlyApplied(verdict.applied, run.messages, run.firstError),
    ...problemsOf(verdict, run.completed, run.timeoutMs, run.left),
    ...failedForGood(verdict, run.sent, run.deadLettered, run.failedByHandler, run.expectedFailures),
    ...(unmatched ? [unmatched] : []),
    ...schedule.unfiredProblems(run.messages),
    ...run.found,
    ...(await runVerify(run.verify, run.session)),
  ];
  const judged: Judged = {
    applied: verdict.applied,
    doubled: verdict.doubleEffects.length,
    doubleEffects: verdict.doubleEffects,
    extraEffects: verdict.extraEffects,
    lost: verdict.lostKeys.length,
    lostKeys: verdict.lostKeys,
    parked: verdict.parked,
    orderViolations: verdict.outOfOrder.length,
    outOfOrder: verdict.outOfOrder,
    faultsInjected: { ...schedule.injected },
    faultLikelihood: schedule.likelihood(run.messages),
    exactlyOnce: problems.length === 0,
    problems,
  };
  return { verdict, notes: notesOf(verdict), judged };
}

/**
 * The first problem of a run where nothing or almost nothing (under a tenth of the messages) applied:
 * how many did, and the handler's first error, which its silenced log would otherwise keep to itself.
 */
export function hardlyApplied(applied: number, messages: number, firstError: Error | undefined): string[] {
  if (applied * 10 >= messages) return [];
  const error = firstError ? `; first error: ${firstError.name}: ${firstError.message}` : '';
  return [`${applied} of ${messages} applied${error}`];
}

/**
 * The well-formed messages that ended in the dead-letter queue or the parked table, their effect lost:
 * one problem line for those the handler failed with an error of its own, but those the scenario expects
 * and those a dead-lettered poison message of their FIFO group took along (SQS hands a group's later
 * messages back with it until it leaves: docs/fifo.md). A message the handler never failed got there by
 * the run's faults and load (its receives used up by function timeouts, or returned unprocessed behind a
 * failed record of its FIFO batch), not by the handler's doing.
 */
export function failedForGood(
  verdict: Pick<Verdict, 'wellFormedInDlqOrParked' | 'wellFormedFailed'>,
  sent: readonly JudgedMessage[],
  deadLettered: ReadonlySet<string>,
  failedByHandler: ReadonlySet<string> | undefined,
  expected: ((key: string) => boolean) | number | undefined,
): string[] {
  const poisonFrom = new Map<string, number>();
  for (const message of sent) {
    if (!message.poison || message.groupId === undefined || !deadLettered.has(message.key)) continue;
    poisonFrom.set(message.groupId, Math.min(poisonFrom.get(message.groupId) ?? Infinity, message.position));
  }
  const byKey = new Map(sent.map((message) => [message.key, message]));
  const behindPoison = (key: string) => {
    const message = byKey.get(key)!;
    return message.groupId !== undefined && message.position > (poisonFrom.get(message.groupId) ?? Infinity);
  };
  // Known by key, a message the handler failed is lost even when the effects query counts it: a part of its effect
  // written outside the transaction (a row) stays, while the rest (a stock count) never came.
  const candidates = failedByHandler ? verdict.wellFormedFailed.filter((key) => failedByHandler.has(key)) : verdict.wellFormedInDlqOrParked;
  const failed = candidates.filter((key) => !behindPoison(key) && !(typeof expected === 'function' && expected(key)));
  if (failed.length === 0 || (typeof expected === 'number' && failed.length <= expected)) return [];
  return [
    `${failed.length} well-formed message(s) ended in the dead-letter queue or the parked table, their effect lost: ${listed(failed)}. ` +
      "Find why the handler failed them (its log, or the parked table's error); if your handler refuses them on purpose, say so: expectedFailures: (key) => ...",
  ];
}

/** Runs the user's own check: its findings, and its failure, as `verify: ` problems. */
async function runVerify(verify: ((session: DataApiSession) => unknown) | undefined, session: DataApiSession): Promise<string[]> {
  if (!verify) return [];
  try {
    const found = (await verify(session)) as string | readonly string[] | undefined | null;
    if (found === undefined || found === null) return [];
    return (typeof found === 'string' ? [found] : [...found]).map((problem) => `verify: ${problem}`);
  } catch (error) {
    return [`verify: ${error instanceof Error ? error.message : String(error)}`];
  }
}
