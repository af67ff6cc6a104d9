import { DataApiError } from '../../errors.js';
import type { DataApiFailure } from '../../errors.js';

// How a failed Data API call left things: every SDK error sorted into the taxonomy, ambiguous where it may have run.

/**
 * Whether a call failed because its connection was reset or closed under it (ECONNRESET, EPIPE: the SDK
 * names both TimeoutError), as a keep-alive socket the endpoint closed while it sat idle does. Not a call
 * that ran out of time (AbortError), nor a connect timeout.
 */
export function isConnectionReset(error: unknown): boolean {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  return code === 'ECONNRESET' || code === 'EPIPE';
}

const NOT_EXECUTED_5XX = new Set(['InternalServerErrorException', 'ServiceUnavailableError', 'DatabaseUnavailableException']);

/** Sorts an SDK error into the taxonomy. Anything that may have taken effect is marked ambiguous. */
export function classify(operation: string, error: unknown): DataApiError {
  if (error instanceof DataApiError) return error;
  const name = (error as { name?: string })?.name ?? 'Error';
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
    // StatementTimeoutException: the statement ran out of time in the database, which may have run part of it.
    // AbortError: a call aborted after callTimeoutMs (AbortSignal.timeout), on Node 20 and 22 alike.
    // TimeoutError: the SDK's name for a socket that timed out or was reset mid-call ("read ECONNRESET").
    case 'StatementTimeoutException':
    case 'TimeoutError':
    case 'AbortError':
      return make('timeout', true);
  }
  if (NOT_EXECUTED_5XX.has(name)) return make('unavailable', true);
  const status = (error as { $metadata?: { httpStatusCode?: number } })?.$metadata?.httpStatusCode;
  // Stryker disable next-line ConditionalExpression: without a status the comparisons are false anyway
  if (status !== undefined && status >= 400 && status < 500) return make('rejected', false);
  return make('network', true);
}
