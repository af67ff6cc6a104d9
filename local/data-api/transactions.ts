import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { backendPid } from './databases.js';
import { badRequest, DataApiErrorResponse, fromDatabase, transactionBusy, transactionNotFound } from './errors.js';
import { Gate } from './gate.js';
import type { SecretCredentials } from './secrets.js';
import { releaseClean, transactionStatus } from './sessions.js';

/**
 * Data API transactions (shared/reference/data-api.md §3.1): each id owns one PostgreSQL connection with
 * an open transaction block. An id is a bearer token: any HTTP connection, any client instance may use it,
 * but only with the secret that began it.
 */

/** An open transaction. */
export interface ServerTransaction {
  readonly id: string;
  readonly database: string;
  /** The secret BeginTransaction named; every later call on the transaction must name it too. */
  readonly secretArn: string;
  /** That secret's user (undefined: the server URL's). */
  readonly credentials: SecretCredentials | undefined;
  readonly client: pg.PoolClient;
}

interface Entry extends ServerTransaction {
  busy: boolean;
  /** Set when the transaction was ended (lifetime) while a call was still running on it. */
  endedWhileBusy: boolean;
  idleTimer: NodeJS.Timeout | undefined;
  lifetimeTimer: NodeJS.Timeout | undefined;
  /** Gives back the transaction's place under maxOpenTransactions. */
  releasePlace: () => void;
}

export interface TransactionOptions {
  /** A transaction no call has used for this long is rolled back. */
  readonly idleTimeoutMs: number;
  /** A transaction older than this is rolled back. */
  readonly maxLifetimeMs: number;
  /** At most this many transactions are open (or being begun) at once. */
  readonly maxOpen: number;
  /** How long BeginTransaction waits for a place when `maxOpen` are open. */
  readonly waitTimeoutMs: number;
  /** Cancels the statement running on a backend. */
  readonly cancel: (database: string, pid: number) => Promise<void>;
}

const EXPIRED = 'Transaction may be expired.';
const TERMINATED = 'One previous call resulted in a termination of your transaction.';
/** How many ended ids are remembered, to say why an id is not found. */
const REMEMBERED = 10_000;

/** The open transactions of one server. */
export class Transactions {
  private readonly open = new Map<string, Entry>();
  private readonly ended = new Map<string, string>();
  private readonly places: Gate;

  constructor(private readonly options: TransactionOptions) {
    this.places = new Gate(options.maxOpen);
  }

  /**
   * A place for one more transaction, waited for (in arrival order) at most `waitTimeoutMs` when
   * `maxOpen` are open: then StatementTimeoutException, as the service answers when its connections are
   * all taken. The place is given back when the transaction ends, or by the caller if it never begins.
   */
  reserve(signal?: AbortSignal): Promise<() => void> {
    return this.places.acquire({
      timeoutMs: this.options.waitTimeoutMs,
      signal,
      onTimeout: () =>
        new DataApiErrorResponse(
          'StatementTimeoutException',
          `Connection is not available, request timed out after ${this.options.waitTimeoutMs}ms: ${this.options.maxOpen} transactions ` +
            'are open (maxOpenTransactions). Commit or roll back the transactions you began (an abandoned one is rolled back after ' +
            'the idle timeout), or raise maxOpenTransactions.',
        ),
    });
  }

  /**
   * Opens a transaction block on the connection and returns its new id. The connection and the place
   * belong to the transaction until it ends.
   */
  async begin(
    client: pg.PoolClient,
    database: string,
    secretArn: string,
    credentials: SecretCredentials | undefined,
    releasePlace: () => void,
  ): Promise<string> {
    try {
      await client.query('BEGIN');
    } catch (error) {
      client.release(true);
      releasePlace();
      throw fromDatabase(error);
    }
    // Like the real ids, long random bearer tokens (AWS's are about 180 characters).
    const id = randomBytes(96).toString('base64url');
    const entry: Entry = {
      id,
      database,
      secretArn,
      credentials,
      client,
      busy: false,
      endedWhileBusy: false,
      idleTimer: undefined,
      lifetimeTimer: undefined,
      releasePlace,
    };
    entry.lifetimeTimer = setTimeout(() => void this.expire(entry), this.options.maxLifetimeMs);
    this.open.set(id, entry);
    this.armIdleTimer(entry);
    return id;
  }

  /**
   * Runs one call on the transaction. A call while another is still running is refused at once, as v2
   * does ("Transaction is still running a query"); v1 queued. `work` returns what the caller waits for
   * and `settled`, after which the connection is free again (later than the answer when a statement
   * continues after a timeout). A call whose SQL ended the transaction block (COMMIT or ROLLBACK in SQL)
   * ends the transaction: its connection goes back clean and its id is not found any more.
   */
  async run<T>(id: string, secretArn: string, work: (transaction: ServerTransaction) => { answer: Promise<T>; settled: Promise<unknown> }): Promise<T> {
    const entry = this.acquire(id, secretArn);
    let settled: Promise<unknown> = Promise.resolve();
    try {
      const started = work(entry);
      settled = started.settled;
      return await started.answer;
    } finally {
      void settled
        .catch(() => {})
        .then(() => {
          entry.busy = false;
          if (entry.endedWhileBusy) void this.finish(entry, 'ROLLBACK').catch(() => {});
          else if (transactionStatus(entry.client) === 'I') {
            this.forget(entry, TERMINATED);
            void this.giveBack(entry);
          } else this.armIdleTimer(entry);
        });
    }
  }

  /** Commits and forgets the transaction. A transaction PostgreSQL had aborted is rolled back and reported. */
  async commit(id: string, secretArn: string): Promise<void> {
    const entry = this.acquire(id, secretArn);
    this.forget(entry, TERMINATED);
    const command = await this.finish(entry, 'COMMIT');
    if (command === 'ROLLBACK') {
      // PostgreSQL answers COMMIT of an aborted transaction with ROLLBACK and no error; reporting
      // "Transaction Committed" would tell the caller an uncommitted effect is durable.
      throw new DataApiErrorResponse(
        'DatabaseErrorException',
        'ERROR: current transaction is aborted, commands ignored until end of transaction block; the transaction was rolled back, not committed; SQLState: 25P02',
      );
    }
  }

  /** Rolls back and forgets the transaction. */
  async rollback(id: string, secretArn: string): Promise<void> {
    const entry = this.acquire(id, secretArn);
    this.forget(entry, TERMINATED);
    await this.finish(entry, 'ROLLBACK');
  }

  /** Rolls back every open transaction (server shutdown). */
  async rollbackAll(): Promise<void> {
    await Promise.all([...this.open.values()].map((entry) => this.expire(entry)));
  }

  /** The number of open transactions. */
  get size(): number {
    return this.open.size;
  }

  private acquire(id: string, secretArn: string): Entry {
    const entry = this.open.get(id);
    if (!entry) throw transactionNotFound(id, this.ended.get(id) ?? EXPIRED);
    if (entry.secretArn !== secretArn) {
      // The service's answer is unverified (shared/reference/data-api.md §7); a transaction runs as the
      // user of the secret that began it, so a call naming another secret is refused, not run as that user.
      throw badRequest(
        `Transaction ${id} was begun with the secret ${entry.secretArn}, and this call names ${secretArn}. ` +
          'Every call on a transaction must name the secret that began it.',
      );
    }
    if (entry.busy) throw transactionBusy();
    entry.busy = true;
    clearTimeout(entry.idleTimer);
    return entry;
  }

  private armIdleTimer(entry: Entry): void {
    clearTimeout(entry.idleTimer);
    entry.idleTimer = setTimeout(() => void this.expire(entry), this.options.idleTimeoutMs);
  }

  /** Idle expiry, lifetime expiry or shutdown: the transaction is rolled back. */
  private async expire(entry: Entry): Promise<void> {
    if (this.open.get(entry.id) !== entry) return;
    this.forget(entry, EXPIRED);
    if (entry.busy) {
      // The running call releases the connection when it settles; cancel it so that is soon.
      entry.endedWhileBusy = true;
      await this.options.cancel(entry.database, backendPid(entry.client));
      return;
    }
    await this.finish(entry, 'ROLLBACK').catch(() => {});
  }

  private forget(entry: Entry, cause: string): void {
    clearTimeout(entry.idleTimer);
    clearTimeout(entry.lifetimeTimer);
    this.open.delete(entry.id);
    this.ended.set(entry.id, cause);
    if (this.ended.size > REMEMBERED) this.ended.delete(this.ended.keys().next().value as string);
  }

  /** Ends the transaction block and gives the connection back clean; a broken connection is discarded. */
  private async finish(entry: Entry, command: 'COMMIT' | 'ROLLBACK'): Promise<string> {
    let result: pg.QueryResult;
    try {
      result = await entry.client.query(command);
    } catch (error) {
      entry.client.release(true);
      entry.releasePlace();
      throw fromDatabase(error);
    }
    void this.giveBack(entry);
    return result.command;
  }

  /** The connection back to its pool with a clean session, then the transaction's place. */
  private async giveBack(entry: Entry): Promise<void> {
    await releaseClean(entry.client);
    entry.releasePlace();
  }
}
