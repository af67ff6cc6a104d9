import type { DatabaseError } from 'pg';

/**
 * Every error the local Data API answers with, serialized the way @aws-sdk/client-rds-data parses it
 * (shared/reference/data-api.md §1.4): the type in `x-amzn-ErrorType`, a JSON body with `message`, and
 * the HTTP status of the service model.
 *
 * A database error is never a 5xx: the SDK retries 500/503/504, and a retry would run a write again.
 * Only the injected faults, which run nothing, answer with a 5xx.
 */

/** The error type names this server sends; all but ValidationException are modelled in the SDK. */
export type DataApiErrorType =
  | 'AccessDeniedException'
  | 'BadRequestException'
  | 'DatabaseErrorException'
  | 'DatabaseNotFoundException'
  | 'DatabaseResumingException'
  | 'DatabaseUnavailableException'
  | 'ForbiddenException'
  | 'InternalServerErrorException'
  | 'NotFoundException'
  | 'SecretsErrorException'
  | 'ServiceUnavailableError'
  | 'StatementTimeoutException'
  | 'TransactionNotFoundException'
  | 'UnsupportedResultException'
  | 'ValidationException'
  | 'UnknownOperationException';

const STATUS: Record<DataApiErrorType, number> = {
  AccessDeniedException: 403,
  BadRequestException: 400,
  DatabaseErrorException: 400,
  DatabaseNotFoundException: 404,
  DatabaseResumingException: 400,
  DatabaseUnavailableException: 504,
  ForbiddenException: 403,
  InternalServerErrorException: 500,
  NotFoundException: 404,
  SecretsErrorException: 400,
  ServiceUnavailableError: 503,
  StatementTimeoutException: 400,
  TransactionNotFoundException: 404,
  UnsupportedResultException: 400,
  // Unmodelled; the reference (§1.4) expects 400, and a 4xx keeps the SDK from retrying.
  ValidationException: 400,
  UnknownOperationException: 404,
};

/** The namespace suffix both known emulators put after the type name; the SDK drops everything after ':'. */
const NAMESPACE = 'http://internal.amazon.com/coral/com.amazon.rdsdataservice/';

/** An error answer: its type, HTTP status, message and any extra body members (StatementTimeout's dbConnectionId). */
export class DataApiErrorResponse extends Error {
  override readonly name = 'DataApiErrorResponse';
  readonly status: number;

  constructor(
    readonly type: DataApiErrorType,
    message: string,
    readonly members: Readonly<Record<string, unknown>> = {},
  ) {
    super(message);
    this.status = STATUS[type];
  }

  /** The `x-amzn-ErrorType` header value. */
  get header(): string {
    return `${this.type}:${NAMESPACE}`;
  }

  /** The JSON body members. */
  body(): Record<string, unknown> {
    return { ...this.members, message: this.message };
  }
}

/**
 * The answer of something in front of the Data API (a proxy, a load balancer) rather than of the service:
 * HTTP 502 with a JSON `message` and no `x-amzn-ErrorType`. The SDK models no such error, so it reaches
 * the caller as an unknown one (`name` 'Unknown', `$metadata.httpStatusCode` 502).
 */
export class GatewayError extends Error {
  override readonly name = 'GatewayError';
  readonly status = 502;

  /** The JSON body members. */
  body(): Record<string, unknown> {
    return { message: this.message };
  }
}

/** A missing or wrongly typed request member; the message names the member and what it must be. */
export function badRequest(message: string): DataApiErrorResponse {
  return new DataApiErrorResponse('BadRequestException', message);
}

/** Aurora Serverless v2's answer to a request shape it does not support (multi-statement SQL, `schema`). */
export function validation(message: string): DataApiErrorResponse {
  return new DataApiErrorResponse('ValidationException', message);
}

/** A transaction id that was never issued, or whose transaction has ended. */
export function transactionNotFound(id: string, cause: string): DataApiErrorResponse {
  return new DataApiErrorResponse('TransactionNotFoundException', `Transaction ${id} isn't found. ${cause}`);
}

/** The v2 answer to a second call on a transaction whose previous call has not returned. */
export function transactionBusy(): DataApiErrorResponse {
  return new DataApiErrorResponse('DatabaseErrorException', 'Transaction is still running a query');
}

/** The statement ran longer than the statement timeout; `dbConnectionId` is the PostgreSQL backend pid. */
export function statementTimeout(dbConnectionId: number): DataApiErrorResponse {
  return new DataApiErrorResponse('StatementTimeoutException', 'Request timed out', { dbConnectionId });
}

/** A result the v2 Data API cannot return (money, geometric types, multidimensional arrays). */
export function unsupportedResult(message: string): DataApiErrorResponse {
  return new DataApiErrorResponse('UnsupportedResultException', message);
}

/** The serialized response is over the limit; the statement has still run (and, in autocommit, committed). */
export function responseTooLarge(): DataApiErrorResponse {
  return new DataApiErrorResponse('BadRequestException', 'Database response exceeded size limit');
}

/**
 * Turns an error raised by PostgreSQL (or by the pg driver) into the v2 SQL error:
 * `ERROR: <message>; Hint: <hint>; Position: <n>; SQLState: <code>`, with Hint and Position only when
 * PostgreSQL gave them (§2.6). Detail is left out: the real v2 foreign-key example has none, although
 * PostgreSQL always sends one for that error.
 */
export function fromDatabase(error: unknown): DataApiErrorResponse {
  if (error instanceof DataApiErrorResponse) return error;
  const pgError = error as Partial<DatabaseError> & { message?: string };
  const parts = [`${pgError.severity ?? 'ERROR'}: ${pgError.message ?? String(error)}`];
  if (pgError.hint) parts.push(`Hint: ${pgError.hint}`);
  if (pgError.position) parts.push(`Position: ${pgError.position}`);
  if (pgError.code) parts.push(`SQLState: ${pgError.code}`);
  return new DataApiErrorResponse('DatabaseErrorException', parts.join('; '));
}
