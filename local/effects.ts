import { DataApiError } from '../lambda/inbox/index.js';
import type { DataApiSession } from '../lambda/inbox/data-api/session.js';
import type { Row } from '../lambda/inbox/data-api/results.js';

/** A message a scenario sent, as the verdict needs it. */
export interface SentMessage {
  /** The message's key. */
  readonly key: string;
  /** The FIFO group, if any. */
  readonly groupId: string | undefined;
  /** 1 for the group's first message, 2 for its second, ... in send order. */
  readonly position: number;
  /** The body was cut short on purpose (the `poison` fault). */
  readonly poison: boolean;
}

/** What the effects query said about one key. */
export interface KeyEffects {
  /** How many times its effect was applied. */
  readonly count: number;
  /** When it was first applied, if the query returned a `seq` column: a number or text that increases with time. */
  readonly seq: number | string | undefined;
}

/**
 * A message whose effect was applied more than once.
 *
 * @example
 * expect(result.doubleEffects).toEqual([]); // else e.g. [{ key: 'pay-17', count: 2 }]
 */
export interface DoubleEffect {
  /** The message's key (its idempotency key, and the `key` your effects query returns). */
  readonly key: string;
  /** Times applied, at least 2. */
  readonly count: number;
}

/**
 * A message first applied after a later message of its FIFO group.
 *
 * @example
 * expect(result.outOfOrder).toEqual([]); // else e.g. [{ key: 'pay-3', groupId: 'customer-3', after: 'pay-23' }]
 */
export interface OutOfOrderEffect {
  /** The message's key. */
  readonly key: string;
  /** Its FIFO message group. */
  readonly groupId: string;
  /** The later message of the group that was applied before it. */
  readonly after: string;
}

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

/**
 * Reads the effects query's rows: a `key` column, an optional `count` (a row without one counts 1; rows
 * with the same key add up) and an optional `seq`.
 */
export function readEffects(rows: readonly Row[]): Map<string, KeyEffects> {
  const effects = new Map<string, KeyEffects>();
  for (const row of rows) {
    if (!('key' in row)) {
      throw new Error(
        `runScenario: the effects query must return a "key" column, e.g. SELECT payment_id AS key, count(*) FROM public.payments GROUP BY 1; it returned the columns ${Object.keys(row).join(', ') || '(none)'}.`,
      );
    }
    const key = String(row.key);
    const count = 'count' in row ? Number(row.count) : 1;
    if (!Number.isFinite(count) || count < 0) {
      throw new Error(`runScenario: the effects query returned count ${String(row.count)} for key ${key}; it must be a whole number >= 0.`);
    }
    const seq = toSeq(row.seq);
    const before = effects.get(key);
    effects.set(key, {
      count: (before?.count ?? 0) + count,
      seq: before?.seq === undefined ? seq : seq === undefined ? before.seq : compareSeq(seq, before.seq) < 0 ? seq : before.seq,
    });
  }
  return effects;
}

/** Rows asked for in the first page of {@link selectByKey}: a few hundred KiB of the demo's effects rows. */
export const FIRST_PAGE_ROWS = 5000;

/**
 * Every row of `sql`, a query with a `key` column, read in pages ordered by that key (keyset pagination):
 * one ExecuteStatement answers at most 1 MiB, which the demo's effects pass at about 13,000 orders. A
 * page the Data API refuses as too large is asked again with half the rows, and later pages keep that
 * size. A page never ends inside a key, since rows with the same key add up in {@link readEffects}.
 *
 * @param pageRows - rows asked for in the first page. @default FIRST_PAGE_ROWS
 */
export async function selectByKey(session: DataApiSession, sql: string, pageRows = FIRST_PAGE_ROWS): Promise<Row[]> {
  const source = subquery(sql);
  // Keys as text in byte order, NULL as '': the same order in every page, whatever the key's type. The
  // server computes it (scenario_page_key) so the next page starts exactly where this one ended.
  const sortKey = `coalesce(scenario_page.key::text, '') COLLATE "C"`;
  const columns = `SELECT scenario_page.*, ${sortKey} AS scenario_page_key FROM ${source}`;
  const firstPage = `${columns} ORDER BY scenario_page_key LIMIT :limit`;
  const nextPage = `${columns} WHERE ${sortKey} > :after ORDER BY scenario_page_key LIMIT :limit`;
  const oneKey = `${columns} WHERE ${sortKey} = :key`;
  const rows: Row[] = [];
  const keep = (page: readonly Row[]) => {
    for (const { scenario_page_key: _, ...row } of page) rows.push(row);
  };
  let limit = pageRows;
  let after: string | undefined;
  for (;;) {
    let page: Row[];
    try {
      page = (await session.execute(after === undefined ? firstPage : nextPage, after === undefined ? { limit } : { after, limit })).rows;
    } catch (error) {
      if (limit > 1 && responseTooLarge(error)) {
        limit = Math.ceil(limit / 2);
        continue;
      }
      throw error;
    }
    if (page.length < limit) {
      keep(page);
      return rows;
    }
    // The last key of a full page may have more rows in the next one: leave it to that page whole.
    const last = String(page.at(-1)!.scenario_page_key);
    const whole = page.filter((row) => String(row.scenario_page_key) !== last);
    if (whole.length > 0) {
      keep(whole);
      after = String(whole.at(-1)!.scenario_page_key);
    } else {
      // One key fills the page: its rows alone, in one answer.
      keep((await session.execute(oneKey, { key: last })).rows);
      after = last;
    }
  }
}

/** The first row of `sql` (none if it returns none), to see its columns before paging by one of them. */
export async function firstRow(session: DataApiSession, sql: string): Promise<Row[]> {
  return (await session.execute(`SELECT * FROM ${subquery(sql)} LIMIT 1`)).rows;
}

/** `sql` as a subquery named scenario_page. A newline before the parenthesis: the query may end in a -- comment. */
function subquery(sql: string): string {
  return `(\n${sql.trim().replace(/;$/, '')}\n) AS scenario_page`;
}

/**
 * The Data API's refusal of an answer over 1 MiB. It is a BadRequestException like many others; only its
 * message tells it apart: "Database response exceeded size limit" (older: "...allowed response size
 * limit"), shared/reference/data-api.md §3.4.
 */
function responseTooLarge(error: unknown): boolean {
  const cause = error instanceof DataApiError ? error.cause : error;
  return (
    (cause as { name?: unknown } | null)?.name === 'BadRequestException' &&
    /response size limit|response exceeded size limit/i.test(String((cause as Error).message))
  );
}

/** Judges the effects of the messages sent: doubles, lost, out-of-order within FIFO groups. */
export function judge(
  sent: readonly SentMessage[],
  effects: ReadonlyMap<string, KeyEffects>,
  parkedKeys: ReadonlySet<string>,
  deadLetteredKeys: ReadonlySet<string>,
): Verdict {
  const sentKeys = new Set(sent.map((message) => message.key));
  const countOf = (key: string) => effects.get(key)?.count ?? 0;
  const doubleEffects = sent.filter((m) => countOf(m.key) > 1).map((m) => ({ key: m.key, count: countOf(m.key) }));
  const notApplied = sent.filter((m) => countOf(m.key) === 0);
  const accounted = (m: SentMessage) => parkedKeys.has(m.key) || deadLetteredKeys.has(m.key);
  const applied = sent.filter((m) => countOf(m.key) > 0);
  const orderChecked = sent.every((m) => m.groupId !== undefined) && applied.every((m) => effects.get(m.key)?.seq !== undefined);
  const disordered = orderChecked ? outOfOrder(applied, effects) : [];
  return {
    applied: applied.length,
    doubleEffects,
    extraEffects: doubleEffects.reduce((sum, d) => sum + d.count - 1, 0),
    lostKeys: notApplied.filter((m) => !accounted(m)).map((m) => m.key),
    wellFormedInDlqOrParked: notApplied.filter((m) => accounted(m) && !m.poison).map((m) => m.key),
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

function outOfOrder(applied: readonly SentMessage[], effects: ReadonlyMap<string, KeyEffects>): OutOfOrderEffect[] {
  const groups = new Map<string, SentMessage[]>();
  for (const message of applied) groups.set(message.groupId!, [...(groups.get(message.groupId!) ?? []), message]);
  const found: OutOfOrderEffect[] = [];
  for (const [groupId, messages] of groups) {
    // Judged on each message's first effect; equal seqs get the benefit of the doubt.
    const byFirstEffect = [...messages].sort((a, b) => compareSeq(effects.get(a.key)!.seq!, effects.get(b.key)!.seq!) || a.position - b.position);
    let latest: SentMessage | undefined;
    for (const message of byFirstEffect) {
      if (latest && message.position < latest.position) found.push({ key: message.key, groupId, after: latest.key });
      else latest = message;
    }
  }
  return found;
}

function toSeq(value: unknown): number | string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint') return Number(value);
  if (value instanceof Date) return value.getTime();
  return String(value);
}

function compareSeq(a: number | string, b: number | string): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0;
}
