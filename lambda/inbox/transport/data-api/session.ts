import {
  BatchExecuteStatementCommand,
  BeginTransactionCommand,
  CommitTransactionCommand,
  ExecuteStatementCommand,
  type RDSDataClient,
  RollbackTransactionCommand,
} from '@aws-sdk/client-rds-data';
import type { ExecuteStatementCommandOutput } from '@aws-sdk/client-rds-data';
import { DataApiError } from '../../errors.js';
import type { InboxSession } from '../session.js';
import { refuseTransactionControl } from '../transaction-control.js';
import type { DataApiPassThrough } from '../pass-through.js';
import { Transaction } from '../transaction.js';
import type { SessionPolicy } from '../session.js';
import { DATA_API_LIMITS } from './request-size.js';
import { classify, isConnectionReset } from './failures.js';
import { toSqlParameters } from './parameters.js';
import type { SqlParams } from '../values.js';
import { toResult } from './results.js';
import type { StatementResult } from '../results.js';

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

/**
 * How often a call safe to send twice is sent again after a reset connection. Once: the reset destroys the
 * dead socket, so the second attempt takes another one, which `inbox()`'s default client keeps only while
 * it is younger than the network's idle timeouts (data-api-client.ts), or a new connection.
 */
const RESET_RETRIES = 1;

/** A statement that may have run when its connection reset: retried only when refused while resuming. */
const NOT_TWICE = { resume: true, reset: false } as const;

/** A call safe to run twice (a read, a claim-gated statement, a begin): also sent again after a reset connection. */
const TWICE = { resume: true, reset: true } as const;

/** A commit or a rollback: never sent again, since its first attempt may have done its work. */
const ONCE = { resume: false, reset: false } as const;

/** CommitTransaction's transactionStatus when the transaction committed. */
const COMMITTED = 'Transaction Committed';

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * A Data API session: typed parameters, typed rows, transactions, bounded retries of auto-pause, and
 * one error taxonomy (`DataApiError` from `sqs-inbox`) for every failure. It is what `inbox()` uses; use it for
 * your own statements, migrations and test checks. A call is sent again only when it was refused with
 * DatabaseResumingException (it did not run, so sending it again is safe; a lost response may hide a call
 * that ran), or when its connection reset and it is safe to run twice (`executeIdempotent`, `begin`), so
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

  /** The transport's name: a session is a transport already open (see `InboxSession`). */
  readonly name: string = 'data-api';

  /** A request of at most 4 MiB, an answer of at most 1 MiB. */
  readonly limits = DATA_API_LIMITS;

  /** Runs one statement, in autocommit or inside `transactionId`. */
  async execute(sql: string, params: SqlParams = {}, transactionId?: string): Promise<StatementResult> {
    return toResult((await this.#call('ExecuteStatement', NOT_TWICE, sql, () => this.#statement(sql, params, transactionId))) as ExecuteStatementCommandOutput);
  }

  /**
   * Runs one autocommit statement that is safe to send twice: a read, or a statement gated by its claim
   * (sent twice, it claims once, and the second finds the claim). Besides the auto-pause retries, a call
   * whose connection was reset before it was answered (`isConnectionReset`: an idle keep-alive
   * socket the endpoint or a NAT had dropped) is sent once more, on a new connection.
   */
  async executeIdempotent(sql: string, params: SqlParams = {}): Promise<StatementResult> {
    return toResult((await this.#call('ExecuteStatement', TWICE, sql, () => this.#statement(sql, params, undefined))) as ExecuteStatementCommandOutput);
  }

  /** One ExecuteStatement call's command, with the column metadata results.ts types the rows by. */
  #statement(sql: string, params: SqlParams, transactionId: string | undefined): ExecuteStatementCommand {
    return new ExecuteStatementCommand({
      resourceArn: this.target.resourceArn,
      secretArn: this.target.secretArn,
      database: this.target.database,
      sql,
      parameters: toSqlParameters(params),
      transactionId,
      includeResultMetadata: true,
      resultSetOptions: { longReturnType: 'STRING' },
    });
  }

  /**
   * Runs one statement once per parameter set, in ONE call (BatchExecuteStatement): in autocommit, or
   * inside `transactionId`. Returns how many parameter sets ran. The Data API returns no rows from it.
   */
  async executeBatch(sql: string, paramSets: readonly SqlParams[], transactionId?: string): Promise<number> {
    if (paramSets.length === 0) return 0;
    await this.#call(
      'BatchExecuteStatement',
      NOT_TWICE,
      sql,
      () =>
        new BatchExecuteStatementCommand({
          resourceArn: this.target.resourceArn,
          secretArn: this.target.secretArn,
          database: this.target.database,
          sql,
          parameterSets: paramSets.map(toSqlParameters),
          transactionId,
        }),
    );
    // The call runs every parameter set or fails (its updateResults hold one entry per set).
    return paramSets.length;
  }

  /**
   * Opens a transaction and returns its id. A reset connection is retried once, as in
   * `executeIdempotent`: a BeginTransaction sent twice at worst opens a transaction nobody uses,
   * which holds no lock and expires after 3 minutes.
   */
  async begin(): Promise<string> {
    const output = await this.#call(
      'BeginTransaction',
      TWICE,
      undefined,
      () =>
        new BeginTransactionCommand({
          resourceArn: this.target.resourceArn,
          secretArn: this.target.secretArn,
          database: this.target.database,
        }),
    );
    const id = (output as { transactionId?: string }).transactionId;
    if (!id) throw new DataApiError('BeginTransaction', 'rejected', false, 'the response held no transactionId');
    return id;
  }

  /**
   * Commits. Never retried: a commit whose response is lost may have committed, and a second commit of
   * the same id only says the transaction is gone. Every failure here is ambiguous.
   */
  async commit(transactionId: string): Promise<void> {
    const output = await this.#call(
      'CommitTransaction',
      ONCE,
      undefined,
      () =>
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
      await this.#call(
        'RollbackTransaction',
        ONCE,
        undefined,
        () =>
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
   * Sends an ORM's ExecuteStatement or BatchExecuteStatement as this session sends its own: one attempt
   * (auto-pause refusals aside), the call timeout, the failure classified.
   * @internal `sqs-inbox/orm` sends through it.
   */
  get passThrough(): DataApiPassThrough {
    return {
      transport: 'data-api',
      target: this.target,
      send: (operation, input) =>
        this.#call(operation, NOT_TWICE, input.sql, () =>
          operation === 'ExecuteStatement' ? new ExecuteStatementCommand(input as never) : new BatchExecuteStatementCommand(input as never),
        ),
    };
  }

  /**
   * Sends one call, after refusing transaction control in its `sql`: every caller's SQL passes here (the
   * statements, the batches, an ORM's), and none may end the transaction. `retry.resume`: a
   * DatabaseResumingException is retried after the policy's delays. `retry.reset`: a reset connection is
   * sent once more; only for a call that is safe to run twice.
   */
  async #call(operation: string, retry: { readonly resume: boolean; readonly reset: boolean }, sql: unknown, command: () => object): Promise<unknown> {
    refuseTransactionControl(sql);
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
        // With its delays spent, a resume retry could never finish in time.
        const delay = this.policy.resumeDelaysMs[resumes] ?? Number.POSITIVE_INFINITY;
        if (retry.resume && classified.failure === 'resuming' && delay < timeLeft) {
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
