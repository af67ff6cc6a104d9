import type pg from 'pg';
import { backendPid, type Databases } from './databases.js';
import { badRequest, DataApiErrorResponse, responseTooLarge, validation } from './errors.js';
import { stringifyJson } from './json.js';
import { assertSingleStatement, bindParameters, scanSql } from './parameters.js';
import { optionalArray, optionalBoolean, optionalEnum, optionalObject, optionalString, required, type RequestBody } from './requests.js';
import { executeResponse, type RawResult, type ResultOptions } from './results.js';
import type { SecretCredentials, Secrets } from './secrets.js';
import { assertAutocommitEnded, releaseClean, transactionEndedBySql, transactionStatus } from './sessions.js';
import { runStatement, withStatementTimeout } from './statements.js';
import type { Operation } from './stats.js';
import type { Transactions } from './transactions.js';

/** What the operations share: the server's identity, its secrets, databases and transactions, and its limits. */
export interface OperationContext {
  readonly resourceArn: string;
  readonly secrets: Secrets;
  readonly defaultDatabase: string;
  readonly databases: Databases;
  readonly transactions: Transactions;
  readonly statementTimeoutMs: number;
  readonly maxResponseBytes: number;
  /**
   * A BeginTransaction's place under maxOpenTransactions, taken by the server before the call was admitted
   * under maxConcurrentCalls: a Begin that waited for a transaction place while holding a call place
   * would keep the calls that end transactions (and free places) from running.
   */
  readonly reservedPlace?: (() => void) | undefined;
  /** A slow-statement fault: this long inside the database (`pg_sleep` on the call's connection) before the call's SQL. */
  readonly slowdownMs?: number | undefined;
}

/**
 * An operation: the request body in, the response body's JSON text out. `signal` aborts when the caller
 * goes away before its answer: a call still waiting for a connection then never runs, and a transaction
 * begun for it is rolled back at once rather than held until the idle timeout.
 */
export type OperationHandler = (context: OperationContext, body: RequestBody, signal?: AbortSignal) => Promise<string>;

/** The five operations Aurora Serverless v2 and provisioned clusters serve. */
export const OPERATIONS: Record<Operation, OperationHandler> = {
  ExecuteStatement: executeStatement,
  BatchExecuteStatement: batchExecuteStatement,
  BeginTransaction: beginTransaction,
  CommitTransaction: commitTransaction,
  RollbackTransaction: rollbackTransaction,
};

/** ExecuteSql is "not supported" on Aurora Serverless v2 and provisioned clusters (§1.2). */
export async function executeSql(): Promise<string> {
  throw badRequest("The ExecuteSql operation isn't supported for Aurora Serverless v2 and provisioned clusters. Use ExecuteStatement.");
}

async function executeStatement(context: OperationContext, body: RequestBody, signal?: AbortSignal): Promise<string> {
  const operation = 'ExecuteStatement';
  const { sql, secretArn, credentials } = checkCommon(context, body, operation, true);
  const database = optionalString(body, 'database', operation);
  const transactionId = optionalString(body, 'transactionId', operation);
  const continueAfterTimeout = optionalBoolean(body, 'continueAfterTimeout', operation);
  const resultSetOptions = optionalObject(body, 'resultSetOptions', operation);
  const options: ResultOptions = {
    includeResultMetadata: optionalBoolean(body, 'includeResultMetadata', operation),
    formatRecordsAs: optionalEnum(body.formatRecordsAs, ['NONE', 'JSON'], 'formatRecordsAs', 'NONE'),
    decimalReturnType: optionalEnum(resultSetOptions.decimalReturnType, ['STRING', 'DOUBLE_OR_LONG'], 'resultSetOptions.decimalReturnType', 'STRING'),
    longReturnType: optionalEnum(resultSetOptions.longReturnType, ['LONG', 'STRING'], 'resultSetOptions.longReturnType', 'LONG'),
  };
  const scanned = scanSql(sql);
  assertSingleStatement(scanned);
  const bound = bindParameters(scanned, optionalArray(body, 'parameters', operation));
  if (continueAfterTimeout && transactionId) {
    // v1 refused this combination; v2 is unverified (§3.1). Refusing keeps local code from relying on it.
    throw badRequest('continueAfterTimeout cannot be combined with transactionId: run the statement outside the transaction, or drop continueAfterTimeout.');
  }
  const respond = async (result: RawResult, name: string, as: SecretCredentials | undefined) => {
    const catalog = context.databases.get(name, as).catalog;
    const types = await catalog.resolve(result.fields.map((field) => field.dataTypeID));
    const text = stringifyJson(executeResponse(result, types, (oid) => catalog.get(oid), options));
    // The JSON format has its own, larger limit (10 MB against 1 MiB, §3.4).
    const limit = options.formatRecordsAs === 'JSON' ? context.maxResponseBytes * 10 : context.maxResponseBytes;
    if (Buffer.byteLength(text) > limit) throw responseTooLarge();
    return text;
  };
  if (transactionId) {
    return context.transactions.run(transactionId, secretArn, (transaction) => {
      assertSameDatabase(database, transaction.database);
      const work = slowDown(context, transaction.client)
        .then(() => runStatement(transaction.client, bound))
        .then((result) => {
          assertStillInTransaction(transaction.client, result.command, transactionId);
          return result;
        });
      const answer = timed(context, transaction.client, transaction.database, work, false).then((result) =>
        respond(result, transaction.database, transaction.credentials),
      );
      return { answer, settled: work };
    });
  }
  const name = database ?? context.defaultDatabase;
  const run = async (client: pg.PoolClient) => {
    await slowDown(context, client);
    const result = await runStatement(client, bound);
    assertAutocommitEnded(client);
    return result;
  };
  return autocommit(context, { name, credentials, signal }, run, continueAfterTimeout, (result) => respond(result, name, credentials));
}

async function batchExecuteStatement(context: OperationContext, body: RequestBody, signal?: AbortSignal): Promise<string> {
  const operation = 'BatchExecuteStatement';
  const { sql, secretArn, credentials } = checkCommon(context, body, operation, true);
  const database = optionalString(body, 'database', operation);
  const transactionId = optionalString(body, 'transactionId', operation);
  const scanned = scanSql(sql);
  assertSingleStatement(scanned);
  if (scanned.endsWithSemicolon) {
    throw validation('The SQL of BatchExecuteStatement must not end with a semicolon (;). Remove the trailing semicolon.');
  }
  // Every set is checked before any runs, so a bad set cannot leave the batch half done.
  const bound = (optionalArray(body, 'parameterSets', operation) ?? []).map((set, index) => {
    if (!Array.isArray(set)) throw badRequest(`parameterSets[${index}] must be a list of SqlParameter.`);
    return bindParameters(scanned, set, `parameterSets[${index}]`);
  });
  // Every set must leave the transaction (the caller's, or the one around an autocommit batch) open.
  const runAll = async (client: pg.PoolClient, transactionId: string | undefined) => {
    await slowDown(context, client);
    for (const statement of bound) {
      const result = await runStatement(client, statement);
      assertStillInTransaction(client, result.command, transactionId);
    }
  };
  const respond = async () => stringifyJson({ updateResults: bound.map(() => ({ generatedFields: [] })) });
  if (transactionId) {
    return context.transactions.run(transactionId, secretArn, (transaction) => {
      assertSameDatabase(database, transaction.database);
      const work = runAll(transaction.client, transactionId);
      return { answer: timed(context, transaction.client, transaction.database, work, false).then(respond), settled: work };
    });
  }
  // Without a transaction the batch is atomic, as the JDBC driver behind the service sends one batch in
  // one implicit transaction: a failing set leaves no earlier set applied.
  const atomic = async (client: pg.PoolClient) => {
    await client.query('BEGIN');
    try {
      await runAll(client, undefined);
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    }
  };
  return autocommit(context, { name: database ?? context.defaultDatabase, credentials, signal }, atomic, false, respond);
}

async function beginTransaction(context: OperationContext, body: RequestBody, signal?: AbortSignal): Promise<string> {
  const operation = 'BeginTransaction';
  const { secretArn, credentials } = checkCommon(context, body, operation, false);
  const name = optionalString(body, 'database', operation) ?? context.defaultDatabase;
  const releasePlace = context.reservedPlace ?? (await context.transactions.reserve(signal));
  let client: pg.PoolClient;
  try {
    client = await context.databases.connect(name, credentials, signal);
  } catch (error) {
    releasePlace();
    throw error;
  }
  const transactionId = await context.transactions.begin(client, name, secretArn, credentials, releasePlace);
  if (signal?.aborted) {
    // Nobody will ever learn this id: holding it until the idle timeout would only take a connection.
    await context.transactions.rollback(transactionId, secretArn).catch(() => {});
    throw signal.reason;
  }
  return stringifyJson({ transactionId });
}

async function commitTransaction(context: OperationContext, body: RequestBody): Promise<string> {
  const operation = 'CommitTransaction';
  const { secretArn } = checkCommon(context, body, operation, false);
  await context.transactions.commit(required(body, 'transactionId', operation), secretArn);
  return stringifyJson({ transactionStatus: 'Transaction Committed' });
}

async function rollbackTransaction(context: OperationContext, body: RequestBody): Promise<string> {
  const operation = 'RollbackTransaction';
  const { secretArn } = checkCommon(context, body, operation, false);
  await context.transactions.rollback(required(body, 'transactionId', operation), secretArn);
  return stringifyJson({ transactionStatus: 'Rollback Complete' });
}

/** What checkCommon read: the SQL (where the operation has it) and the call's secret with its user. */
interface CommonMembers<Sql> {
  readonly sql: Sql;
  readonly secretArn: string;
  readonly credentials: SecretCredentials | undefined;
}

/**
 * The members every operation checks first: the two ARNs (this server serves one cluster, and the
 * secrets it was given), `sql` where the operation has it, and `schema`, which v2 refuses.
 */
function checkCommon(context: OperationContext, body: RequestBody, operation: Operation, hasSql: true): CommonMembers<string>;
function checkCommon(context: OperationContext, body: RequestBody, operation: Operation, hasSql: false): CommonMembers<undefined>;
function checkCommon(context: OperationContext, body: RequestBody, operation: Operation, hasSql: boolean): CommonMembers<string | undefined> {
  const resourceArn = required(body, 'resourceArn', operation);
  const secretArn = required(body, 'secretArn', operation);
  const sql = hasSql ? required(body, 'sql', operation) : undefined;
  if (operation === 'CommitTransaction' || operation === 'RollbackTransaction') required(body, 'transactionId', operation);
  if (resourceArn !== context.resourceArn) {
    // The model lists NotFoundException ("resourceArn not found") for Commit and Rollback only.
    const type = operation === 'CommitTransaction' || operation === 'RollbackTransaction' ? 'NotFoundException' : 'BadRequestException';
    throw new DataApiErrorResponse(type, `The resourceArn ${resourceArn} is not a cluster this server serves. Use ${context.resourceArn}.`);
  }
  const credentials = context.secrets.resolve(secretArn);
  if (body.schema !== undefined && body.schema !== null) throw validation("The schema parameter isn't supported");
  return { sql, secretArn, credentials };
}

/**
 * The slow-statement fault: time spent inside PostgreSQL before the call's SQL, as a statement of its own
 * on the call's connection, so the session's statement_timeout cancels it as it would a slow statement.
 */
async function slowDown(context: OperationContext, client: pg.PoolClient): Promise<void> {
  if (!context.slowdownMs) return;
  await client.query('SELECT pg_sleep($1::float8 / 1000)', [context.slowdownMs]);
}

/** A statement inside a transaction left its block open; COMMIT or ROLLBACK in the SQL would end it. */
function assertStillInTransaction(client: pg.PoolClient, command: string, transactionId: string | undefined): void {
  if (transactionStatus(client) === 'I') throw transactionEndedBySql(command, transactionId);
}

function assertSameDatabase(requested: string | undefined, transactionDatabase: string): void {
  if (requested !== undefined && requested !== transactionDatabase) {
    throw badRequest(
      `"database" is ${requested}, but the transaction was begun on ${transactionDatabase}. Omit database, or begin a transaction on ${requested}.`,
    );
  }
}

/** The statement timeout around work on a connection; on timeout the backend is cancelled unless told to continue. */
function timed<T>(context: OperationContext, client: pg.PoolClient, database: string, work: Promise<T>, continueAfterTimeout: boolean): Promise<T> {
  const pid = backendPid(client);
  return withStatementTimeout(work, {
    timeoutMs: context.statementTimeoutMs,
    continueAfterTimeout,
    pid,
    cancel: () => context.databases.cancel(database, pid),
  });
}

/**
 * A call without transactionId: no explicit transaction block (so CREATE INDEX CONCURRENTLY works), on
 * a pooled connection of the call's database and user that goes back to the pool, with a clean session,
 * when the work settles, which after a continueAfterTimeout is later than the answer.
 */
async function autocommit<T>(
  context: OperationContext,
  target: { name: string; credentials: SecretCredentials | undefined; signal: AbortSignal | undefined },
  run: (client: pg.PoolClient) => Promise<T>,
  continueAfterTimeout: boolean,
  respond: (result: T) => Promise<string>,
): Promise<string> {
  const client = await context.databases.connect(target.name, target.credentials, target.signal);
  const work = run(client);
  void work.catch(() => {}).then(() => releaseClean(client));
  return respond(await timed(context, client, target.name, work, continueAfterTimeout));
}
