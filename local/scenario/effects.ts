import { DataApiError } from '../../lambda/inbox/index.js';
import type { DataApiSession } from '../../lambda/inbox/transport/data-api/session.js';
import type { Row } from '../../lambda/inbox/transport/results.js';

// Reads the user's effects query: every row, in pages, summed per key.

/** What the effects query said about one key. */
export interface KeyEffects {
  /** How many times its effect was applied. */
  readonly count: number;
  /** When it was first applied, if the query returned a `seq` column: a number or text that increases with time. */
  readonly seq: number | string | undefined;
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

function toSeq(value: unknown): number | string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint') return Number(value);
  if (value instanceof Date) return value.getTime();
  return String(value);
}

/** Orders two `seq` values: numbers as numbers, anything else as text. */
export function compareSeq(a: number | string, b: number | string): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0;
}
