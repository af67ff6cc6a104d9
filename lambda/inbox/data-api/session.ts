import {
  BatchExecuteStatementCommand,
  BeginTransactionCommand,
  CommitTransactionCommand,
  ExecuteStatementCommand,
  RDSDataClient,
  RollbackTransactionCommand,
} from '@aws-sdk/client-rds-data';
import type { ColumnMetadata, ExecuteStatementCommandOutput, Field, SqlParameter } from '@aws-sdk/client-rds-data';
import { DataApiError } from '../errors.js';
import type { InboxSession } from '../transport/session.js';
import type { DataApiFailure } from '../errors.js';

/** Where the database is: an Aurora cluster with the Data API enabled, and the secret to sign in with. */
export interface DatabaseTarget {
  /** The cluster ARN. */
  readonly resourceArn: string;
  /** The Secrets Manager secret holding the database credentials. */
  readonly secretArn: string;
  /** The database name. @default the cluster's default database */
  readonly database?: string | undefined;
  /** The client to send with. Pass one to share its connection pool or point it at a local endpoint. */
  readonly client: RDSDataClient;
}

/** A value with an explicit Data API type hint, made by {@link uuid}, {@link decimal}, {@link json} and friends. */
export class HintedValue {
  constructor(
    /** The Data API `typeHint` the value is sent with. */
    readonly typeHint: 'UUID' | 'DECIMAL' | 'JSON' | 'DATE' | 'TIME' | 'TIMESTAMP',
    /** The value as the string the Data API receives. */
    readonly text: string,
  ) {}
}

/** Binds a string as `uuid` (an untyped string binds as varchar, which a uuid column refuses). */
export const uuid = (value: string) => new HintedValue('UUID', value);
/** Binds a number or numeric string as `numeric` without passing through a float. */
export const decimal = (value: string | number | bigint) => new HintedValue('DECIMAL', String(value));
/** Binds any value as `json` (plain objects and arrays do this by default). */
export const json = (value: unknown) => new HintedValue('JSON', JSON.stringify(value));
/** Binds `YYYY-MM-DD` as `date`. */
export const date = (value: string) => new HintedValue('DATE', value);
/** Binds `HH:MM:SS[.fff]` as `time`. */
export const time = (value: string) => new HintedValue('TIME', value);

/** What `execute` accepts as a parameter value. */
export type SqlValue =
  | string
  | number
  | bigint
  | boolean
  | null
  | undefined
  | Uint8Array
  | Date
  | HintedValue
  | Record<string, unknown>
  | unknown[];

/** Named parameters: `{ orderId: 'order-417' }` binds `:orderId`. */
export type SqlParams = Readonly<Record<string, SqlValue>>;

/** A row keyed by column name, each value typed by its column. */
export type Row = Record<string, unknown>;

/** What one statement returned. */
export interface StatementResult {
  /** The rows of a SELECT or of `RETURNING`. */
  readonly rows: Row[];
  /** Rows inserted, updated or deleted. */
  readonly updated: number;
}

/** How a session waits and retries. Time is injected so that tests can drive it. */
export interface SessionPolicy {
  /** Abort a single Data API call after this long; the outcome of an aborted write is unknown. */
  readonly callTimeoutMs: number;
  /** Delays before each retry of a call refused with DatabaseResumingException (Aurora auto-pause). */
  readonly resumeDelaysMs: readonly number[];
  /** Milliseconds left before the caller's deadline; a retry that cannot finish before it is not made. */
  readonly timeLeftMs?: (() => number) | undefined;
  /** Told about each resume retry, for the metrics. */
  readonly onResumeRetry?: (() => void) | undefined;
  /** @default setTimeout */
  readonly sleep?: ((ms: number) => Promise<void>) | undefined;
}

/**
 * How often a call safe to send twice is sent again after a reset connection. Once: the reset destroys the
 * dead socket, so the second attempt takes another one, which `inbox()`'s default client keeps only while
 * it is younger than the network's idle timeouts (data-api-client.ts), or a new connection.
 */
const RESET_RETRIES = 1;

/**
 * Whether a call failed because its connection was reset or closed under it (ECONNRESET, EPIPE: the SDK
 * names both TimeoutError), as a keep-alive socket the endpoint closed while it sat idle does. Not a call
 * that ran out of time (AbortError), nor a connect timeout.
 */
export function isConnectionReset(error: unknown): boolean {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  return code === 'ECONNRESET' || code === 'EPIPE';
}

/** CommitTransaction's transactionStatus when the transaction committed. */
const COMMITTED = 'Transaction Committed';

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * A Data API session: typed parameters, typed rows, transactions, bounded retries of auto-pause, and
 * one error taxonomy ({@link DataApiError}) for every failure. It is what `inbox()` uses; use it for
 * your own statements, migrations and test checks. Only a call refused with DatabaseResumingException is
 * retried (it did not run, so sending it again is safe; a lost response may hide a call that ran), so
 * give the target's client `maxAttempts: 1` too. Each call is aborted after `policy.callTimeoutMs`;
 * there is no default policy.
 *
 * @example
 * const target = { client: new RDSDataClient({ maxAttempts: 1 }), resourceArn, secretArn, database: 'app' };
 * const session = new DataApiSession(target, { callTimeoutMs: 10_000, resumeDelaysMs: [500, 1000, 2000] });
 * const { rows } = await session.execute('SELECT count(*) AS n FROM orders WHERE status = :status', { status: 'shipped' });
 * const tx = await session.transaction();
 * await tx.execute('UPDATE orders SET status = :status WHERE order_id = :id', { status: 'shipped', id: 'o-1' });
 * await tx.commit(); // a failed statement makes commit() roll back and throw instead
 */
export class DataApiSession implements InboxSession {
  constructor(
    /** The cluster, secret, database and client every call goes to. */
    readonly target: DatabaseTarget,
    /** Call timeout and auto-pause retries. */
    readonly policy: SessionPolicy,
  ) {}

  /** Runs one statement, in autocommit or inside `transactionId`. */
  async execute(sql: string, params: SqlParams = {}, transactionId?: string): Promise<StatementResult> {
    return this.executeStatement(sql, params, transactionId, false);
  }

  /**
   * Runs one autocommit statement that is safe to send twice: a read, or a statement gated by its claim
   * (sent twice, it claims once, and the second finds the claim). Besides the auto-pause retries, a call
   * whose connection was reset before it was answered ({@link isConnectionReset}: an idle keep-alive
   * socket the endpoint or a NAT had dropped) is sent once more, on a new connection.
   */
  async executeIdempotent(sql: string, params: SqlParams = {}): Promise<StatementResult> {
    return this.executeStatement(sql, params, undefined, true);
  }

  private async executeStatement(sql: string, params: SqlParams, transactionId: string | undefined, resendReset: boolean): Promise<StatementResult> {
    const output = await this.call('ExecuteStatement', { resume: true, reset: resendReset }, () =>
      new ExecuteStatementCommand({
        resourceArn: this.target.resourceArn,
        secretArn: this.target.secretArn,
        database: this.target.database,
        sql,
        parameters: toSqlParameters(params),
        transactionId,
        includeResultMetadata: true,
        resultSetOptions: { longReturnType: 'STRING' },
      }),
    );
    return toResult(output as ExecuteStatementCommandOutput);
  }

  /**
   * Runs one statement once per parameter set, in ONE call (BatchExecuteStatement): in autocommit, or
   * inside `transactionId`. Returns how many parameter sets ran. The Data API returns no rows from it.
   */
  async executeBatch(sql: string, paramSets: readonly SqlParams[], transactionId?: string): Promise<number> {
    if (paramSets.length === 0) return 0;
    const output = await this.call('BatchExecuteStatement', { resume: true, reset: false }, () =>
      new BatchExecuteStatementCommand({
        resourceArn: this.target.resourceArn,
        secretArn: this.target.secretArn,
        database: this.target.database,
        sql,
        parameterSets: paramSets.map(toSqlParameters),
        transactionId,
      }),
    );
    return (output as { updateResults?: unknown[] }).updateResults?.length ?? paramSets.length;
  }

  /**
   * Opens a transaction and returns its id. A reset connection is retried once, as in
   * {@link executeIdempotent}: a BeginTransaction sent twice at worst opens a transaction nobody uses,
   * which holds no lock and expires after 3 minutes.
   */
  async begin(): Promise<string> {
    const output = await this.call('BeginTransaction', { resume: true, reset: true }, () =>
      new BeginTransactionCommand({
        resourceArn: this.target.resourceArn,
        secretArn: this.target.secretArn,
        database: this.target.database,
      }),
    );
    const id = (output as { transactionId?: string }).transactionId;
    // Stryker disable next-line StringLiteral,BooleanLiteral: unreachable: a successful BeginTransaction always returns a transactionId
    if (!id) throw new DataApiError('BeginTransaction', 'rejected', false, 'the response held no transactionId');
    return id;
  }

  /**
   * Commits. Never retried: a commit whose response is lost may have committed, and a second commit of
   * the same id only says the transaction is gone. Every failure here is ambiguous.
   */
  async commit(transactionId: string): Promise<void> {
    // Stryker disable next-line BooleanLiteral: a commit is never refused with DatabaseResumingException (its open transaction keeps the cluster awake), so retry.resume is never consulted
    const output = await this.call('CommitTransaction', { resume: false, reset: false }, () =>
      new CommitTransactionCommand({
        resourceArn: this.target.resourceArn,
        secretArn: this.target.secretArn,
        transactionId,
      }),
    );
    const status = (output as { transactionStatus?: string }).transactionStatus;
    // Anything but the documented answer is treated as "maybe not committed": the record is reported
    // failed, and its redelivery finds the claim if the commit did happen.
    if (status !== COMMITTED) {
      throw new DataApiError('CommitTransaction', 'rejected', true, `the commit answered "${status ?? '(no status)'}", not "${COMMITTED}"`);
    }
  }

  /** Rolls back. A transaction that is already gone counts as rolled back. */
  async rollback(transactionId: string): Promise<void> {
    try {
      // Stryker disable next-line BooleanLiteral: a rollback is never refused with DatabaseResumingException (its open transaction keeps the cluster awake), so retry.resume is never consulted
      await this.call('RollbackTransaction', { resume: false, reset: false }, () =>
        new RollbackTransactionCommand({
          resourceArn: this.target.resourceArn,
          secretArn: this.target.secretArn,
          transactionId,
        }),
      );
    } catch (error) {
      if (error instanceof DataApiError && error.failure === 'transaction-not-found') return;
      throw error;
    }
  }

  /** Opens a transaction whose statements are sent one at a time, in call order. */
  async transaction(): Promise<Transaction> {
    return new Transaction(this, await this.begin());
  }

  /**
   * Sends one call. `retry.resume`: a DatabaseResumingException is retried after the policy's delays.
   * `retry.reset`: a reset connection is sent once more; only for a call that is safe to run twice.
   */
  private async call(operation: string, retry: { readonly resume: boolean; readonly reset: boolean }, command: () => object): Promise<unknown> {
    const sleep = this.policy.sleep ?? defaultSleep;
    let resumes = 0;
    let resets = 0;
    for (;;) {
      try {
        // One command object per attempt: the SDK's middleware must not see a reused input.
        return await this.target.client.send(command() as never, {
          abortSignal: AbortSignal.timeout(this.policy.callTimeoutMs),
        });
      } catch (error) {
        const classified = classify(operation, error);
        const timeLeft = this.policy.timeLeftMs?.() ?? Number.POSITIVE_INFINITY;
        if (retry.reset && resets < RESET_RETRIES && isConnectionReset(error) && timeLeft > 0) {
          resets++;
          continue;
        }
        const delay = this.policy.resumeDelaysMs[resumes];
        if (retry.resume && classified.failure === 'resuming' && delay !== undefined && delay < timeLeft) {
          resumes++;
          this.policy.onResumeRetry?.();
          await sleep(delay);
          continue;
        }
        throw classified;
      }
    }
  }
}

/**
 * One Data API transaction. Statements are queued and sent one at a time even when `execute` is called
 * concurrently: the Data API refuses a second call on a transaction that is still running a query.
 */
export class Transaction {
  private queue: Promise<unknown> = Promise.resolve();
  /** The first statement that failed: PostgreSQL has aborted the transaction, so it must not commit. */
  private failure: unknown;
  private ending = false;
  private rolledBack = false;

  constructor(
    private readonly session: InboxSession,
    /** The transaction's id: the Data API's, or the wire transport's own. */
    readonly transactionId: string,
  ) {}

  /** Runs one statement in this transaction. */
  execute(sql: string, params: SqlParams = {}): Promise<StatementResult> {
    return this.enqueue(() => this.session.execute(sql, params, this.transactionId));
  }

  private enqueue<T>(call: () => Promise<T>): Promise<T> {
    if (this.ending) {
      return Promise.reject(new Error('the transaction is committing or rolling back; await every tx.execute inside apply'));
    }
    const run = this.queue.then(call);
    this.queue = run.catch((error: unknown) => {
      this.failure ??= error;
    });
    return run;
  }

  /** Runs one statement once per parameter set in this transaction, in one call (BatchExecuteStatement). */
  executeBatch(sql: string, paramSets: readonly SqlParams[]): Promise<number> {
    return this.enqueue(() => this.session.executeBatch(sql, paramSets, this.transactionId));
  }

  /**
   * Waits for queued statements, then commits; if any statement failed (even one whose error the caller
   * caught), rolls back and throws that error instead: an aborted transaction must never look committed.
   */
  async commit(): Promise<void> {
    this.ending = true;
    await this.queue;
    if (this.failure !== undefined) {
      await this.rollback().catch(() => {});
      throw this.failure;
    }
    await this.session.commit(this.transactionId);
  }

  /** Waits for queued statements, then rolls back (once: a second call does nothing). */
  async rollback(): Promise<void> {
    this.ending = true;
    await this.queue;
    if (this.rolledBack) return;
    this.rolledBack = true;
    await this.session.rollback(this.transactionId);
  }
}

const NAME = /^[A-Za-z0-9_]+$/;

/** Maps plain JS values to Data API parameters. */
export function toSqlParameters(params: SqlParams): SqlParameter[] {
  return Object.entries(params).map(([name, value]) => {
    if (!NAME.test(name)) {
      throw new TypeError(`parameter name "${name}" must match ${NAME}; it is written as :${name} in the SQL`);
    }
    return { name, ...toField(name, value) };
  });
}

function toField(name: string, value: SqlValue): { value: Field; typeHint?: HintedValue['typeHint'] } {
  if (value === null || value === undefined) return { value: { isNull: true } };
  if (value instanceof HintedValue) return { value: { stringValue: value.text }, typeHint: value.typeHint };
  if (typeof value === 'string') return { value: { stringValue: value } };
  if (typeof value === 'boolean') return { value: { booleanValue: value } };
  if (typeof value === 'bigint') {
    // The SDK writes a BigInt longValue as raw JSON digits, keeping precision a number would lose.
    return { value: { longValue: value as unknown as number } };
  }
  if (typeof value === 'number') {
    if (Number.isInteger(value) && Number.isSafeInteger(value)) return { value: { longValue: value } };
    if (!Number.isFinite(value)) {
      throw new TypeError(`parameter "${name}" is ${value}; the Data API cannot bind it. Pass null or a finite number.`);
    }
    return { value: { doubleValue: value } };
  }
  if (value instanceof Uint8Array) return { value: { blobValue: value } };
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) throw new TypeError(`parameter "${name}" is an invalid Date`);
    return { value: { stringValue: value.toISOString().replace('T', ' ').replace('Z', '') }, typeHint: 'TIMESTAMP' };
  }
  if (typeof value === 'object') return { value: { stringValue: JSON.stringify(value) }, typeHint: 'JSON' };
  throw new TypeError(`parameter "${name}" has type ${typeof value}, which the Data API cannot bind`);
}

function toResult(output: ExecuteStatementCommandOutput): StatementResult {
  const columns = output.columnMetadata ?? [];
  const rows = (output.records ?? []).map((record) => {
    const row: Row = {};
    record.forEach((field, index) => {
      const column = columns[index];
      // Stryker disable next-line StringLiteral,LogicalOperator: includeResultMetadata is set, so every column has metadata with a non-empty label (PostgreSQL's JDBC driver gives the alias as both label and name)
      row[column?.label || column?.name || `column${index}`] = fromField(field, column);
    });
    return row;
  });
  return { rows, updated: output.numberOfRecordsUpdated ?? 0 };
}

function fromField(field: Field, column: ColumnMetadata | undefined): unknown {
  // Stryker disable next-line StringLiteral: any fallback type name that is not a listed case gives the same default, the text
  const type = (column?.typeName ?? '').toLowerCase();
  if (field.isNull) return null;
  if (field.booleanValue !== undefined) return field.booleanValue;
  // Stryker disable next-line ConditionalExpression: with longReturnType STRING the Data API never returns a longValue
  if (field.longValue !== undefined) return field.longValue;
  if (field.doubleValue !== undefined) return field.doubleValue;
  if (field.blobValue !== undefined) return field.blobValue;
  if (field.arrayValue !== undefined) {
    const array = field.arrayValue;
    // Stryker disable next-line ArrayDeclaration: the Data API always sets one of the typed arrays of an arrayValue
    return array.stringValues ?? array.longValues ?? array.doubleValues ?? array.booleanValues ?? array.arrayValues ?? [];
  }
  if (field.stringValue !== undefined) return fromText(field.stringValue, type);
  return undefined;
}

function fromText(text: string, type: string): unknown {
  switch (type) {
    case 'int2':
    case 'int4':
    // Stryker disable next-line StringLiteral: PostgreSQL reports a serial column as int4; the typeName is never serial, nor empty
    case 'serial':
    case 'int8':
    // Stryker disable next-line StringLiteral: PostgreSQL reports a bigserial column as int8; the typeName is never bigserial, nor empty
    case 'bigserial': {
      // Longs arrive as strings (longReturnType STRING) so that values beyond 2^53 survive as bigint.
      const big = BigInt(text);
      return big >= BigInt(Number.MIN_SAFE_INTEGER) && big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big;
    }
    case 'timestamptz':
    case 'timestamp':
      return new Date(`${text.replace(' ', 'T')}Z`);
    case 'json':
    case 'jsonb':
      return JSON.parse(text);
    default:
      return text;
  }
}

const NOT_EXECUTED_5XX = new Set(['InternalServerErrorException', 'ServiceUnavailableError', 'DatabaseUnavailableException']);

/** Sorts an SDK error into the taxonomy. Anything that may have taken effect is marked ambiguous. */
export function classify(operation: string, error: unknown): DataApiError {
  if (error instanceof DataApiError) return error;
  // Stryker disable next-line OptionalChaining,StringLiteral: the SDK never throws null or undefined
  const name = (error as { name?: string })?.name ?? 'Error';
  // Stryker disable next-line OptionalChaining: the SDK never throws null or undefined
  const message = (error as { message?: string })?.message ?? String(error);
  const isCommit = operation === 'CommitTransaction';
  const make = (failure: DataApiFailure, ambiguous: boolean) =>
    new DataApiError(operation, failure, ambiguous || isCommit, `${name}: ${message}`, { cause: error });
  switch (name) {
    case 'DatabaseResumingException':
      return make('resuming', false);
    case 'DatabaseErrorException':
    case 'BadRequestException':
    case 'UnsupportedResultException':
      return make('statement', false);
    case 'TransactionNotFoundException':
    case 'NotFoundException':
      return make('transaction-not-found', false);
    // Stryker disable next-line ConditionalExpression: emptied, this case falls through to the next one, which returns the same timeout
    case 'StatementTimeoutException':
      return make('timeout', true);
    // AbortError: a call aborted after callTimeoutMs (AbortSignal.timeout), on Node 20 and 22 alike.
    // TimeoutError: the SDK's name for a socket that timed out or was reset mid-call ("read ECONNRESET").
    // Stryker disable next-line StringLiteral: without this case a reset falls to 'network', just as ambiguous
    case 'TimeoutError':
    case 'AbortError':
      return make('timeout', true);
    // Stryker disable next-line ConditionalExpression: the default case only breaks, so emptying it changes nothing
    default:
      break;
  }
  if (NOT_EXECUTED_5XX.has(name)) return make('unavailable', true);
  // Stryker disable next-line OptionalChaining: the SDK never throws null or undefined
  const status = (error as { $metadata?: { httpStatusCode?: number } })?.$metadata?.httpStatusCode;
  // Stryker disable next-line ConditionalExpression: without a status the comparisons are false anyway
  if (status !== undefined && status >= 400 && status < 500) return make('rejected', false);
  return make('network', true);
}
