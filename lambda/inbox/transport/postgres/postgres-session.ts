import { randomUUID } from 'node:crypto';
import { Transaction } from '../transaction.js';
import type { SqlParams } from '../values.js';
import type { StatementResult } from '../results.js';
import { PostgresError } from '../../errors.js';
import type { InboxSession } from '../session.js';
import { NO_REQUEST_LIMITS } from '../limits.js';
import type { WirePassThrough } from '../pass-through.js';
import { refuseTransactionControl } from '../transaction-control.js';
import { classifyWire } from './failures.js';
import type { WireOperation } from './failures.js';
import { TEXT_PARSERS, toPositional, toRows } from './values.js';

/** What the wire transport needs of a node-postgres `Pool` (`new pg.Pool(...)`): its connections. */
export interface PostgresPool {
  connect(): Promise<PostgresClient>;
}

/** What the wire transport needs of a node-postgres `PoolClient`. */
export interface PostgresClient {
  query(config: {
    text: string;
    values?: unknown[];
    rowMode?: 'array';
    /** Every value arrives as text: the transport parses it itself. */
    types?: { getTypeParser(): (text: string) => string };
    query_timeout?: number;
    queryMode?: 'extended';
  }): Promise<{ command: string; rowCount: number | null; fields: { readonly name: string; readonly dataTypeID: number }[]; rows: unknown[] }>;
  /** Gives the connection back; `true` (or an error) destroys it instead. */
  release(destroy?: boolean | Error): void;
  /**
   * node-postgres emits a checked-out connection's socket errors here (and crashes the process if none
   * listens), and the server's notices (`NoticeResponse`: a warning's SQLSTATE is its `code`).
   */
  on?(event: 'error' | 'notice', listener: (message: Error & { readonly code?: string | undefined }) => void): unknown;
  /**
   * 'I' (idle), 'T' (in a transaction block) or 'E' (in a failed one), as the server's last ReadyForQuery
   * said: node-postgres 8.2x and newer (`getTransactionStatus`); older ones have none.
   */
  getTransactionStatus?(): string | null;
}

/** A PostgreSQL reached over its own protocol: RDS Proxy, RDS or Aurora in a VPC, any PostgreSQL. */
export interface PostgresTarget {
  /**
   * Your node-postgres pool, e.g. `new pg.Pool({ host, database, user, password, ssl, max: 2,
   * idleTimeoutMillis: 60_000, keepAlive: true })`. For RDS IAM authentication pass `password` as a
   * function that returns a fresh token (`@aws-sdk/rds-signer`). One pool per Lambda instance, made at
   * module load: it is reused across invocations.
   */
  readonly pool: PostgresPool;
  /**
   * A connection idle for longer than this is checked with `SELECT 1` before its first statement, and
   * replaced once if the check fails: a Lambda frozen between invocations may hold a socket that the
   * server or RDS Proxy already closed, which would swallow the first statement.
   * @default 10_000
   */
  readonly idleCheckMs?: number | undefined;
}

/** How the wire session waits. */
export interface PostgresPolicy {
  /** Stop waiting for one call's answer after this long; its outcome is then unknown. */
  readonly callTimeoutMs: number;
  /**
   * Each transaction sets `statement_timeout` to this, so that a statement the client gave up on does not
   * go on running on the server (and take effect late). Must be below `callTimeoutMs`.
   * @default callTimeoutMs less a quarter of it, at most 1000 (10 000 gives 9 000; 1 000 gives 750)
   */
  readonly statementTimeoutMs?: number | undefined;
  /**
   * Milliseconds left before the caller's deadline (past its margin): a BEGIN that timed out is not sent
   * again once none is left, as the Data API session makes no retry then.
   * @default no deadline
   */
  readonly timeLeftMs?: (() => number) | undefined;
  /** The clock, for the idle check. @default Date.now */
  readonly now?: (() => number) | undefined;
}

/** When each connection last answered: a connection not seen for `idleCheckMs` is checked before use. */
const lastAnswered = new WeakMap<PostgresClient, number>();
/** Connections that have our listeners: their failures reach the call that uses them instead. */
const listened = new WeakSet<PostgresClient>();
const ignore = () => {};
/**
 * Connections whose server warned "there is no transaction in progress" (SQLSTATE 25P01) since the mark was
 * last cleared: PostgreSQL's answer to a COMMIT outside a transaction block, which is otherwise a success.
 */
const noTransactionWarned = new WeakSet<PostgresClient>();
const NO_TRANSACTION_IN_PROGRESS = '25P01';

/**
 * The transport over the PostgreSQL wire protocol, on a node-postgres pool: the same `:name` parameters,
 * the same typed rows and the same failure taxonomy as `DataApiSession`, so every mode runs on it
 * unchanged. A transaction holds one connection from BEGIN to COMMIT or ROLLBACK; an autocommit statement
 * borrows one for its call. Nothing is retried once it may have run: only a BEGIN on a connection that
 * turned out dead, before anything of the transaction was sent, is sent again on a fresh one.
 */
export class PostgresSession implements InboxSession {
  /** The transport's name: a session is a transport already open (see `InboxSession`). */
  readonly name: string = 'postgres';
  /** A wire message may be 1 GB: no batch comes near it. */
  readonly limits = NO_REQUEST_LIMITS;

  private readonly open = new Map<string, PostgresClient>();
  private readonly statementTimeoutMs: number;
  private readonly idleCheckMs: number;
  private readonly now: () => number;

  constructor(
    readonly target: PostgresTarget,
    readonly policy: PostgresPolicy,
  ) {
    // Room for the cancel's answer to come back before the client gives up, without leaving a short call
    // timeout a statement timeout no statement fits in.
    this.statementTimeoutMs = policy.statementTimeoutMs ?? Math.max(1, policy.callTimeoutMs - Math.min(1000, Math.floor(policy.callTimeoutMs / 4)));
    this.idleCheckMs = target.idleCheckMs ?? 10_000;
    this.now = policy.now ?? Date.now;
  }

  async execute(sql: string, params: SqlParams = {}, transactionId?: string): Promise<StatementResult> {
    const { text, values } = toPositional(sql, params);
    return this.onConnection('ExecuteStatement', transactionId, sql, async (client) => {
      const result = await this.query(client, text, values);
      return { rows: toRows(result.fields, result.rows as (string | null)[][]), updated: WRITES.has(result.command) ? (result.rowCount ?? 0) : 0 };
    });
  }

  /** An idempotent statement: the connection is checked before use when it sat idle, so it is sent once. */
  executeIdempotent(sql: string, params: SqlParams = {}): Promise<StatementResult> {
    return this.execute(sql, params);
  }

  async executeBatch(sql: string, paramSets: readonly SqlParams[], transactionId?: string): Promise<number> {
    if (paramSets.length === 0) return 0;
    const statements = paramSets.map((params) => toPositional(sql, params));
    if (transactionId !== undefined) {
      return this.onConnection('BatchExecuteStatement', transactionId, sql, async (client) => {
        for (const { text, values } of statements) await this.query(client, text, values);
        return statements.length;
      });
    }
    // In autocommit, as the Data API's BatchExecuteStatement: every set or none.
    const id = await this.begin();
    try {
      await this.executeBatch(sql, paramSets, id);
    } catch (error) {
      await this.rollback(id).catch(() => {});
      throw error;
    }
    await this.commit(id);
    return statements.length;
  }

  async begin(): Promise<string> {
    // Nothing of the transaction exists before BEGIN answers, so a BEGIN lost on a dead connection may be
    // sent again on a fresh one, once.
    for (let attempt = 0; ; attempt++) {
      const client = await this.checkout();
      try {
        await this.query(client, `BEGIN; SET LOCAL statement_timeout = ${this.statementTimeoutMs}`);
      } catch (error) {
        client.release(true);
        const failure = classifyWire('BeginTransaction', error);
        const timeLeft = this.policy.timeLeftMs?.() ?? Number.POSITIVE_INFINITY;
        if (attempt === 0 && (failure.failure === 'network' || failure.failure === 'timeout') && timeLeft > 0) continue;
        throw failure;
      }
      const id = randomUUID();
      this.open.set(id, client);
      return id;
    }
  }

  async commit(transactionId: string): Promise<void> {
    const client = this.take(transactionId, 'CommitTransaction');
    let command: string;
    noTransactionWarned.delete(client);
    try {
      ({ command } = await this.query(client, 'COMMIT'));
    } catch (error) {
      const failure = classifyWire('CommitTransaction', error);
      // The server answered (a serialization failure, a deferred constraint): the transaction is over and the
      // connection idle and sound, so it goes back to the pool. On Aurora DSQL, where a conflict fails at
      // COMMIT, closing it would spend a new connection (and a token) of the cluster's 100 a second per conflict.
      client.release(failure.failure === 'statement' && !failure.ambiguous ? undefined : true);
      throw failure;
    }
    client.release();
    // A COMMIT with no transaction to end answers COMMIT too, with a warning: a statement had ended the
    // transaction before it (a COMMIT or ROLLBACK in the SQL), and what ran after that committed on its own.
    if (noTransactionWarned.has(client)) {
      throw new PostgresError(
        'CommitTransaction',
        'transaction-not-found',
        true,
        'PostgreSQL warned that there was no transaction in progress (25P01): a statement had ended the transaction before the COMMIT, ' +
          'so what ran after it committed without the claim, or not at all',
      );
    }
    // PostgreSQL answers COMMIT of an aborted transaction with ROLLBACK: definitely not committed.
    if (command !== 'COMMIT') {
      throw new PostgresError('CommitTransaction', 'rejected', false, `the commit answered ${command}: the transaction had failed and was rolled back`);
    }
  }

  async rollback(transactionId: string): Promise<void> {
    const client = this.open.get(transactionId);
    if (!client) return;
    this.open.delete(transactionId);
    try {
      await this.query(client, 'ROLLBACK');
      client.release();
    } catch (error) {
      // A connection that cannot roll back is closed: the server rolls the transaction back with it.
      client.release(true);
      const failure = classifyWire('RollbackTransaction', error);
      if (failure.failure !== 'transaction-not-found' && failure.failure !== 'network') throw failure;
    }
  }

  async transaction(): Promise<Transaction> {
    return new Transaction(this, await this.begin());
  }

  /**
   * An ORM's query, run as the ORM wrote it (its own parameters, row mode and type parsers) on the
   * connection that holds the inbox's transaction, with the call timeout and the failures classified.
   * @internal `sqs-inbox/orm` sends through it.
   */
  get passThrough(): WirePassThrough {
    return {
      transport: 'postgres',
      query: (transactionId: string, query: Readonly<Record<string, unknown>>) =>
        this.onConnection('ExecuteStatement', transactionId, query.text, async (client) => {
          // By the extended protocol, as the session's own statements go: a text of several statements is
          // refused by PostgreSQL, as by the Data API, instead of running each.
          const result = await client.query({ query_timeout: this.policy.callTimeoutMs, ...query, queryMode: 'extended' } as never);
          lastAnswered.set(client, this.now());
          return result;
        }),
      connection: (transactionId: string) => this.open.get(transactionId),
    };
  }

  /**
   * Runs `work`, which sends `sql` for a caller, on the transaction's connection, or on a connection
   * borrowed for this one call. Every caller's SQL passes here (statements, batches, an ORM's queries):
   * transaction control in it is refused before anything is sent.
   */
  private async onConnection<T>(
    operation: WireOperation,
    transactionId: string | undefined,
    sql: unknown,
    work: (client: PostgresClient) => Promise<T>,
  ): Promise<T> {
    refuseTransactionControl(sql);
    if (transactionId !== undefined) {
      const client = this.open.get(transactionId);
      if (!client)
        throw new PostgresError(operation, 'transaction-not-found', false, `no open transaction ${transactionId}: it was committed, rolled back or lost`);
      let result: T;
      try {
        result = await work(client);
      } catch (error) {
        const failure = classifyWire(operation, error, true);
        // A connection that lost its answer, or that the server closed (idle-in-transaction timeout), cannot
        // be trusted again: the transaction goes with it. An aborted transaction (25P02) keeps its
        // connection until its ROLLBACK.
        if (failure.ambiguous || (failure.failure === 'transaction-not-found' && failure.sqlState !== '25P02')) {
          this.open.delete(transactionId);
          client.release(true);
        }
        throw failure;
      }
      // Whatever the scan could not see: a statement that left its connection outside a transaction block
      // ended the inbox's transaction, and the next statement would commit on its own. It goes no further.
      if (client.getTransactionStatus?.() === 'I') {
        this.open.delete(transactionId);
        client.release();
        throw new PostgresError(
          operation,
          'transaction-not-found',
          true,
          'the statement ended the transaction (the connection is outside a transaction block after it): what it committed, if anything, committed without the rest',
        );
      }
      return result;
    }
    const client = await this.checkout();
    try {
      const result = await work(client);
      client.release();
      return result;
    } catch (error) {
      const failure = classifyWire(operation, error, false);
      client.release(failure.failure === 'statement' ? undefined : true);
      throw failure;
    }
  }

  /** A connection from the pool, checked with `SELECT 1` first when it sat idle, and replaced once if dead. */
  private async checkout(): Promise<PostgresClient> {
    for (let attempt = 0; ; attempt++) {
      let client: PostgresClient;
      try {
        client = await this.target.pool.connect();
      } catch (error) {
        throw classifyWire('Connect', error);
      }
      if (!listened.has(client)) {
        listened.add(client);
        client.on?.('error', ignore);
        client.on?.('notice', (notice) => {
          if (notice.code === NO_TRANSACTION_IN_PROGRESS) noTransactionWarned.add(client);
        });
      }
      const last = lastAnswered.get(client);
      if (last === undefined || this.now() - last < this.idleCheckMs) return client;
      try {
        await this.query(client, 'SELECT 1', undefined, Math.min(this.policy.callTimeoutMs, 2000));
        return client;
      } catch (error) {
        client.release(true);
        if (attempt > 0) throw classifyWire('Connect', error);
      }
    }
  }

  private take(transactionId: string, operation: WireOperation): PostgresClient {
    const client = this.open.get(transactionId);
    if (!client)
      throw new PostgresError(operation, 'transaction-not-found', false, `no open transaction ${transactionId}: it was committed, rolled back or lost`);
    this.open.delete(transactionId);
    return client;
  }

  /**
   * Sends one call. A statement with `values` (every statement of the caller's, even one without
   * parameters) goes by the extended protocol, which takes one statement only: `a; b` is refused as the
   * Data API refuses it, so SQL that runs on the wire runs on the Data API too. The session's own texts
   * (BEGIN with its SET LOCAL, COMMIT, ROLLBACK, the liveness check) go as simple queries.
   */
  private async query(client: PostgresClient, text: string, values?: unknown[], timeoutMs = this.policy.callTimeoutMs) {
    const result = await client.query({
      text,
      values,
      rowMode: 'array',
      types: TEXT_PARSERS,
      query_timeout: timeoutMs,
      ...(values ? { queryMode: 'extended' as const } : {}),
    });
    lastAnswered.set(client, this.now());
    // A multi-statement text (BEGIN; SET LOCAL ...) answers with one result per statement.
    return Array.isArray(result) ? (result.at(-1) as typeof result) : result;
  }
}

const WRITES = new Set(['INSERT', 'UPDATE', 'DELETE', 'MERGE']);
