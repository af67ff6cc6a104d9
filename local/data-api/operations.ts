import type pg from 'pg';
import { backendPid, type Databases } from './databases.js';
import { badRequest, DataApiError, responseTooLarge, validation } from './errors.js';
import { stringifyJson } from './json.js';
import { assertSingleStatement, bindParameters, scanSql } from './parameters.js';
import { optionalArray, optionalBoolean, optionalEnum, optionalObject, optionalString, required, type RequestBody } from './requests.js';
import { executeResponse, type RawResult, type ResultOptions } from './results.js';
import { runStatement, withStatementTimeout } from './statements.js';
import type { Operation } from './stats.js';
import type { Transactions } from './transactions.js';

/** What the operations share: the server's identity, its databases and transactions, and its limits. */
export interface OperationContext {
  readonly resourceArn: string;
  readonly secretArn: string;
  readonly defaultDatabase: string;
  readonly databases: Databases;
  readonly transactions: Transactions;
  readonly statementTimeoutMs: number;
  readonly maxResponseBytes: number;
}

/** An operation: the request body in, the response body's JSON text out. */
export type OperationHandler = (context: OperationContext, body: RequestBody) => Promise<string>;

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

async function executeStatement(context: OperationContext, body: RequestBody): Promise<string> {
  const operation = 'ExecuteStatement';
  const sql = checkCommon(context, body, operation, true);
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
  const respond = async (result: RawResult, name: string) => {
    const catalog = context.databases.get(name).catalog;
    const types = await catalog.resolve(result.fields.map((field) => field.dataTypeID));
    const text = stringifyJson(executeResponse(result, types, (oid) => catalog.get(oid), options));
    // The JSON format has its own, larger limit (10 MB against 1 MiB, §3.4).
    const limit = options.formatRecordsAs === 'JSON' ? context.maxResponseBytes * 10 : context.maxResponseBytes;
    if (Buffer.byteLength(text) > limit) throw responseTooLarge();
    return text;
  };
  if (transactionId) {
    return context.transactions.run(transactionId, (transaction) => {
      assertSameDatabase(database, transaction.database);
      const work = runStatement(transaction.client, bound);
      const answer = timed(context, transaction.client, transaction.database, work, false).then((result) => respond(result, transaction.database));
      return { answer, settled: work };
    });
  }
  const name = database ?? context.defaultDatabase;
  return autocommit(context, name, (client) => runStatement(client, bound), continueAfterTimeout, (result) => respond(result, name));
}

async function batchExecuteStatement(context: OperationContext, body: RequestBody): Promise<string> {
  const operation = 'BatchExecuteStatement';
  const sql = checkCommon(context, body, operation, true);
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
  const runAll = async (client: pg.PoolClient) => {
    for (const statement of bound) await runStatement(client, statement);
  };
  const respond = async () => stringifyJson({ updateResults: bound.map(() => ({ generatedFields: [] })) });
  if (transactionId) {
    return context.transactions.run(transactionId, (transaction) => {
      assertSameDatabase(database, transaction.database);
      const work = runAll(transaction.client);
      return { answer: timed(context, transaction.client, transaction.database, work, false).then(respond), settled: work };
    });
  }
  // Without a transaction the batch is atomic, as the JDBC driver behind the service sends one batch in
  // one implicit transaction: a failing set leaves no earlier set applied.
  const atomic = async (client: pg.PoolClient) => {
    await client.query('BEGIN');
    try {
      await runAll(client);
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    }
  };
  return autocommit(context, database ?? context.defaultDatabase, atomic, false, respond);
}

async function beginTransaction(context: OperationContext, body: RequestBody): Promise<string> {
  const operation = 'BeginTransaction';
  checkCommon(context, body, operation, false);
  const name = optionalString(body, 'database', operation) ?? context.defaultDatabase;
  const client = await context.databases.connect(name);
  const transactionId = await context.transactions.begin(client, name);
  return stringifyJson({ transactionId });
}

async function commitTransaction(context: OperationContext, body: RequestBody): Promise<string> {
  const operation = 'CommitTransaction';
  checkCommon(context, body, operation, false);
  await context.transactions.commit(required(body, 'transactionId', operation));
  return stringifyJson({ transactionStatus: 'Transaction Committed' });
}

async function rollbackTransaction(context: OperationContext, body: RequestBody): Promise<string> {
  const operation = 'RollbackTransaction';
  checkCommon(context, body, operation, false);
  await context.transactions.rollback(required(body, 'transactionId', operation));
  return stringifyJson({ transactionStatus: 'Rollback Complete' });
}

/**
 * The members every operation checks first: the two ARNs (this server serves one cluster and one
 * secret), `sql` where the operation has it, and `schema`, which v2 refuses.
 */
function checkCommon(context: OperationContext, body: RequestBody, operation: Operation, hasSql: true): string;
function checkCommon(context: OperationContext, body: RequestBody, operation: Operation, hasSql: false): undefined;
function checkCommon(context: OperationContext, body: RequestBody, operation: Operation, hasSql: boolean): string | undefined {
  const resourceArn = required(body, 'resourceArn', operation);
  const secretArn = required(body, 'secretArn', operation);
  const sql = hasSql ? required(body, 'sql', operation) : undefined;
  if (operation === 'CommitTransaction' || operation === 'RollbackTransaction') required(body, 'transactionId', operation);
  if (resourceArn !== context.resourceArn) {
    // The model lists NotFoundException ("resourceArn not found") for Commit and Rollback only.
    const type = operation === 'CommitTransaction' || operation === 'RollbackTransaction' ? 'NotFoundException' : 'BadRequestException';
    throw new DataApiError(type, `The resourceArn ${resourceArn} is not a cluster this server serves. Use ${context.resourceArn}.`);
  }
  if (secretArn !== context.secretArn) {
    throw new DataApiError('SecretsErrorException', `The secret provided wasn't found: ${secretArn}. This server accepts ${context.secretArn}.`);
  }
  if (body.schema !== undefined && body.schema !== null) throw validation("The schema parameter isn't supported");
  return sql;
}

function assertSameDatabase(requested: string | undefined, transactionDatabase: string): void {
  if (requested !== undefined && requested !== transactionDatabase) {
    throw badRequest(`"database" is ${requested}, but the transaction was begun on ${transactionDatabase}. Omit database, or begin a transaction on ${requested}.`);
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
 * a pooled connection that goes back to the pool when the work settles, which after a
 * continueAfterTimeout is later than the answer.
 */
async function autocommit<T>(
  context: OperationContext,
  database: string,
  run: (client: pg.PoolClient) => Promise<T>,
  continueAfterTimeout: boolean,
  respond: (result: T) => Promise<string>,
): Promise<string> {
  const client = await context.databases.connect(database);
  const work = run(client);
  void work.then(
    () => client.release(),
    // A connection whose statement failed is healthy unless the connection itself broke.
    (error: unknown) => client.release((error as { code?: string }).code === undefined ? (error as Error) : undefined),
  );
  return respond(await timed(context, client, database, work, continueAfterTimeout));
}
