import { scanSql, transactionControl } from '../../lambda/inbox/transport/sql-scanner.js';
import type { FaultCall } from '../data-api/faults.js';

// Writes a handler makes outside the inbox's transaction while a record is applied, in autocommit or in a
// transaction of its own that it commits (a second pool client, db.transaction(), a second BeginTransaction):
// the transports see every statement (the local Data API each call, the wire proxy each query with its connection's
// transaction state), so the judge needs no `verify` to find an effect that a rollback does not undo and
// a redelivery applies again.

/** What the statement watch is told: each call as the faults see it, and on the wire each Bind's values. */
export interface StatementFeed {
  /** Subscribes to every call until the transport's faults are cleared. */
  watch(listener: (call: FaultCall) => void): void;
  /** On the wire: the values bound to a statement, by connection (a connection's transaction is `wire-<n>`). */
  watchParameters?(listener: (transactionId: string, values: readonly (string | null)[]) => void): void;
}

/** Statement kinds that change rows. A WITH or COPY changes rows when it holds one (a data-modifying CTE, COPY ... FROM). */
const WRITES = new Set(['insert', 'update', 'delete', 'merge']);

/**
 * The inbox's own tables, as every statement of the inbox names them: quoted (lambda/inbox/sql/schema.ts,
 * inboxTables). A statement that names them is the inbox's (its claim, the single gated statement that
 * carries the claim, parking, the outbox relay and sweeper, the purge), never the handler's effect.
 */
const INBOX_SCHEMA = '"inbox".';
const CLAIMS = '"consumed_message"';

/**
 * A transaction with no statement for this long was abandoned (a crash, a lost connection): a run's
 * database ends a transaction idle for 2 s (local/scenario/transport.ts), and a record's apply is no longer in flight.
 */
const ABANDONED_MS = 5000;

/** True when `sql` may change rows: INSERT, UPDATE, DELETE, MERGE, a WITH holding one, COPY ... FROM, in any of its statements. */
export function isWrite(sql: string): boolean {
  return scanSql(sql).statements.some((statement) => isWriteStatement(statement.text));
}

/** True when one statement may change rows. */
function isWriteStatement(text: string): boolean {
  const scanned = scanSql(text);
  const leading = scanned.statements[0]?.parts[0]?.words[0]?.word;
  if (leading === undefined) return false;
  if (WRITES.has(leading)) return true;
  if (leading === 'with') return [...WRITES].some((word) => scanned.words.has(word));
  return leading === 'copy' && scanned.words.has('from');
}

/** One statement of a text, as the watch reads it: a write of the handler's, a transaction control, or neither. */
type Step = { readonly write: string } | { readonly control: 'BEGIN' | 'COMMIT' | 'ROLLBACK' } | undefined;

/**
 * A text read statement by statement (the simple query protocol runs them all): the handler's writes (not
 * the inbox's, which name its tables) and the BEGIN, COMMIT and ROLLBACK between them.
 */
export function stepsOf(sql: string): Step[] {
  return scanSql(sql).statements.map((statement): Step => {
    const control = transactionControl(statement.parts[0]?.words ?? []);
    if (control === 'BEGIN' || control === 'START TRANSACTION') return { control: 'BEGIN' };
    if (control === 'COMMIT' || control === 'END') return { control: 'COMMIT' };
    if (control === 'ROLLBACK' || control === 'ABORT') return { control: 'ROLLBACK' };
    if (control !== undefined || statement.text.includes(INBOX_SCHEMA) || !isWriteStatement(statement.text)) return undefined;
    return { write: statement.text };
  });
}

/** One write outside the inbox's transaction: its SQL, how often, and the records in flight the first time. */
interface Found {
  readonly sql: string;
  times: number;
  readonly during: readonly string[];
}

/** An open transaction: the sent keys its statements carried, whether it claimed, and the handler's writes in it. */
interface Open {
  readonly keys: Set<string>;
  claimed: boolean;
  lastSeen: number;
  writes: string[];
}

/**
 * Watches a run's statements: each open transaction that claimed a record (the record's apply in flight)
 * with the sent keys it carried, and each write not the inbox's made while one is open: in autocommit, or
 * in a transaction that never claimed and that commits (the handler's own, on a second client or session).
 */
export class OutsideWrites {
  readonly #sentKeys: ReadonlySet<string>;
  readonly #now: () => number;
  readonly #open = new Map<string, Open>();
  readonly #found = new Map<string, Found>();

  /** `now` is the clock that tells an abandoned transaction from an open one (injectable for tests). */
  constructor(sentKeys: ReadonlySet<string>, now: () => number = Date.now) {
    this.#sentKeys = sentKeys;
    this.#now = now;
  }

  /** Starts watching the handlers' transport. */
  watch(feed: StatementFeed): void {
    feed.watch((call) => this.see(call));
    feed.watchParameters?.((transactionId, values) => this.#carried(transactionId, values));
  }

  /** One call the transport saw (what {@link watch} subscribes; tests call it directly). */
  see(call: FaultCall): void {
    const { operation, transactionId, sql } = call;
    if (operation === 'CommitTransaction' || operation === 'RollbackTransaction') {
      if (!transactionId) return;
      const open = this.#open.get(transactionId);
      this.#open.delete(transactionId);
      // A transaction that claimed is the inbox's: its writes are the record's effect. One that never
      // claimed is another, and what it commits stays however the record's transaction ends.
      if (open && !open.claimed && operation === 'CommitTransaction') for (const write of open.writes) this.#flag(write);
      return;
    }
    if (sql === undefined) return;
    if (transactionId) {
      const open = this.#open.get(transactionId) ?? { keys: new Set<string>(), claimed: false, lastSeen: 0, writes: [] };
      if (sql.includes(INBOX_SCHEMA) && sql.includes(CLAIMS)) open.claimed = true;
      open.lastSeen = this.#now();
      this.#open.set(transactionId, open);
      this.#carried(transactionId, valuesOf(call.parameters));
      for (const step of stepsOf(sql)) {
        if (step === undefined || 'control' in step) continue;
        open.writes.push(step.write);
      }
      return;
    }
    // Outside a transaction, statement by statement: a write in autocommit counts at once, one after a BEGIN
    // in the same text when its COMMIT comes (a text that leaves its transaction open is followed no further).
    let pending: string[] | undefined;
    for (const step of stepsOf(sql)) {
      if (step === undefined) continue;
      if ('write' in step) {
        if (pending) pending.push(step.write);
        else this.#flag(step.write);
      } else if (step.control === 'BEGIN') pending = [];
      else {
        if (step.control === 'COMMIT') for (const write of pending ?? []) this.#flag(write);
        pending = undefined;
      }
    }
  }

  /** Records a write when a claimed transaction is applying a record. */
  #flag(sql: string): void {
    // A crashed worker's transaction is never committed nor rolled back by a call: the database ends it idle.
    const now = this.#now();
    const applying = [...this.#open.values()].filter((open) => open.claimed && now - open.lastSeen < ABANDONED_MS);
    if (applying.length === 0) return;
    const found = this.#found.get(sql);
    if (found) found.times++;
    else this.#found.set(sql, { sql, times: 1, during: [...new Set(applying.flatMap((open) => [...open.keys]))] });
  }

  #carried(transactionId: string, values: readonly unknown[]): void {
    const open = this.#open.get(transactionId);
    if (!open) return;
    for (const value of values) if (typeof value === 'string' && this.#sentKeys.has(value)) open.keys.add(value);
  }

  /** One problem line per statement written outside the inbox's transaction. */
  problems(): string[] {
    return [...this.#found.values()].map(({ sql, times, during }) => {
      const records =
        during.length === 0
          ? 'a record'
          : during.length === 1
            ? `record ${during[0]}`
            : `one of the records ${during.slice(0, 5).join(', ')}${during.length > 5 ? ', ...' : ''}`;
      return (
        `a write outside the inbox's transaction while ${records} was being applied (${times} time(s)): ${oneLine(sql)}. ` +
        "A rollback does not undo it and a redelivery makes it again: run it on the transaction apply is given (tx.execute(...), or your ORM's tx), not on a session, pool or transaction of the handler's own"
      );
    });
  }
}

/** The string values of a Data API call's parameters (or parameter sets), as sent. */
function valuesOf(parameters: unknown): unknown[] {
  if (!Array.isArray(parameters)) return [];
  return parameters.flatMap((parameter: unknown) =>
    Array.isArray(parameter) ? valuesOf(parameter) : [(parameter as { value?: { stringValue?: unknown } } | null)?.value?.stringValue],
  );
}

/** A statement on one line, cut at 200 characters. */
function oneLine(sql: string): string {
  const line = sql.replace(/\s+/g, ' ').trim();
  return line.length > 200 ? `${line.slice(0, 200)}...` : line;
}
