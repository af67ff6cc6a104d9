/**
 * The errors sqs-inbox raises. Callers branch on the class, never on the message text.
 *
 * - `InboxConfigError`: `inbox(options)` was given an option it cannot use; thrown once, at cold start.
 * - `PermanentError`: this record can never succeed as it is; it is retried into the dead-letter
 *   queue or parked, depending on `onPermanentError`. Throw it from `apply` yourself for business rejections.
 * - `DataApiError`: a Data API call failed; `ambiguous` says whether it may have taken effect.
 */
export class InboxError extends Error {
  override name = 'InboxError';
}

/** An option passed to `inbox()`, `migrate()` or `purge()` is invalid. The message names the option and the fix. */
export class InboxConfigError extends InboxError {
  override name = 'InboxConfigError';
  constructor(
    /** The option at fault, as a dotted path: `database.resourceArn`, `fifo.onFailure`. */
    readonly option: string,
    message: string,
  ) {
    super(`inbox option "${option}": ${message}`);
  }
}

/**
 * This record can never succeed as it is: retrying it cannot help. With `onPermanentError: 'retry'` the
 * record is reported failed (SQS moves it to the dead-letter queue after maxReceiveCount); with `park` it
 * is stored in `inbox.parked_message` and reported succeeded.
 *
 * @example
 * apply: async (tx, message) => {
 *   if (!message.body.orderId) throw new PermanentError('body.orderId is missing');
 * }
 */
export class PermanentError extends InboxError {
  override name = 'PermanentError';
}

/**
 * The event was not sent by an SQS event source mapping: the function's trigger is misconfigured, or a
 * test built the event by hand. Thrown before any record runs, so the whole invocation fails loudly
 * instead of acknowledging records it never looked at. (Powertools' batch utility raises
 * `UnexpectedBatchTypeError` for the same mistake.)
 */
export class UnexpectedEventError extends InboxError {
  override name = 'UnexpectedEventError';
}

/** The body could not be parsed by `parse` (the default is `JSON.parse`). */
export class ParseError extends PermanentError {
  override name = 'ParseError';
}

/** The record has no usable idempotency key: missing attribute, too long, or holding control characters. */
export class KeyError extends PermanentError {
  override name = 'KeyError';
}

/** The body is larger than SQS allows (1 MiB), so it cannot be a message a producer meant to send. */
export class BodyTooLargeError extends PermanentError {
  override name = 'BodyTooLargeError';
}

/**
 * A record holds text PostgreSQL cannot store (U+0000, which neither `text` nor `jsonb` takes, or a lone
 * UTF-16 surrogate, which `jsonb` refuses), and a statement that read it was refused for that: as it is,
 * the record can never be applied. Its `cause` is the refused statement's error. A `PermanentError` to
 * callers (kept off the runtime entry, whose names are budgeted): its name says which in logs and parked rows.
 */
export class UnstorableTextError extends PermanentError {
  override name = 'UnstorableTextError';
  constructor(
    /** Where in the message it is: `body.items[2].sku`, `groupId`. */
    readonly path: string,
    /** What it is: `U+0000`, `a lone surrogate`. */
    readonly kind: string,
    options: { cause: unknown; sqlState: string },
  ) {
    super(
      `${path} holds ${kind}, which PostgreSQL cannot store in text or jsonb, and a statement that reads it was refused ` +
        `(SQLState ${options.sqlState}): the message can never be applied as it is. Fix the producer, or have parse drop or replace the character`,
      { cause: options.cause },
    );
  }
}

/**
 * A record's key was claimed before by a message whose body hash differs: two different messages share
 * one key, a producer bug. The second one is not applied.
 */
export class KeyCollisionError extends PermanentError {
  override name = 'KeyCollisionError';
  constructor(
    /** The idempotency key both messages carry. */
    readonly key: string,
    /** Hex SHA-256 of the body stored with the first claim. */
    readonly storedSha256: string,
    /** Hex SHA-256 of this record's body. */
    readonly receivedSha256: string,
  ) {
    super(
      `key "${key}" was already claimed by a message with body sha256 ${storedSha256}, but this body hashes to ` +
        `${receivedSha256}: two different messages share one idempotency key. Fix the producer so each logical ` +
        'message gets its own key; this message was not applied.',
    );
  }
}

/**
 * `parked.replay(id)` of a message parked for a key collision: another message's effect holds its key, so
 * applying this body under that key would give one key two different effects. Thrown unless the replay
 * asks for `{ collision: 'apply-under-new-key' }`; the message stays parked.
 */
export class ParkedCollisionError extends InboxError {
  override name = 'ParkedCollisionError';
  constructor(
    /** The parked message's id. */
    readonly id: number,
    /** The key it shares with the message whose effect holds it. */
    readonly key: string,
  ) {
    super(
      `parked message ${id} collided with another message under key "${key}", whose effect holds the key: it was not replayed. ` +
        'Fix the producer so each logical message gets its own key, then discard it (`sqs-inbox parked discard`); ' +
        "or, if both messages must take effect, replay it with { collision: 'apply-under-new-key' }, which applies it under a key of its own.",
    );
  }
}

/**
 * A statement that would begin, end or replace the inbox's transaction was refused before it was sent: BEGIN,
 * START TRANSACTION, COMMIT, END, ABORT, ROLLBACK, SAVEPOINT, RELEASE, ROLLBACK TO, PREPARE TRANSACTION,
 * COMMIT or ROLLBACK PREPARED in the SQL (`tx.execute`, `tx.executeBatch`, a statement mode's SQL, an ORM
 * bound to the transaction), or an ORM's `db.transaction()`. The inbox owns the transaction: it commits the
 * claim and the effect together after `apply` returns, and rolls both back when it throws; a COMMIT in the
 * SQL would commit half an effect, and a ROLLBACK would drop the claim while later statements commit on
 * their own. A bug in the code, not in the message: the record fails and is delivered again (it is not
 * parked, and not acknowledged), so it applies once the code is fixed. Nothing of the statement was sent.
 */
export class TransactionControlError extends InboxError {
  override name = 'TransactionControlError';
  constructor(
    /** What was refused: `ROLLBACK`, `SAVEPOINT`, `BeginTransaction`, ... */
    readonly refused: string,
    fix = 'leave BEGIN, COMMIT, ROLLBACK and SAVEPOINT out of the SQL, and drop db.transaction() inside apply: write through tx (or the ORM bound to it), ' +
      'and the inbox commits for you; to undo the effect, throw from apply',
  ) {
    super(
      `${refused} refused inside the inbox's transaction: the inbox commits the claim and your writes together when apply returns, ` +
        `and rolls both back when it throws. Fix: ${fix}.`,
    );
  }
}

/** How a failed database call left things, on every transport (the Data API, the PostgreSQL wire protocol). */
export type DatabaseFailure =
  /** Aurora Serverless v2 is resuming from auto-pause; nothing ran. Retry after a short wait. */
  | 'resuming'
  /** The SQL failed in the database (DatabaseErrorException, a PostgreSQL error); nothing of this statement took effect. */
  | 'statement'
  /** The transaction is gone: expired, committed, rolled back, aborted, or its connection closed. */
  | 'transaction-not-found'
  /** The statement or the call timed out; it may still have run unless `ambiguous` is false. */
  | 'timeout'
  /** The service or the database was unavailable: nothing ran unless `ambiguous` is true. */
  | 'unavailable'
  /** The call was refused (access, validation, bad request): retrying the same call cannot help. */
  | 'rejected'
  /** The connection failed or the response was lost; the call may have taken effect. */
  | 'network';

/** The Data API's name for `DatabaseFailure`. */
export type DataApiFailure = DatabaseFailure;

/**
 * A database call failed, on any transport. Callers branch on `failure` and `ambiguous`, never on the
 * message: `DataApiError` for the Data API, `PostgresError` for the wire protocol.
 */
export class DatabaseCallError extends InboxError {
  override name = 'DatabaseCallError';
  constructor(
    /** The operation: ExecuteStatement, BeginTransaction, CommitTransaction, ... */
    readonly operation: string,
    /**
     * How the call failed: `resuming` (Aurora Serverless v2 resuming from auto-pause; nothing ran),
     * `statement` (the SQL failed in the database; nothing of it took effect), `transaction-not-found`
     * (expired, committed, rolled back, aborted, or its connection closed), `timeout` (it may still have run
     * unless `ambiguous` is false), `unavailable` (nothing ran unless `ambiguous` is true), `rejected`
     * (access, validation, bad request: retrying cannot help) or `network` (the call may have taken effect).
     */
    readonly failure: 'resuming' | 'statement' | 'transaction-not-found' | 'timeout' | 'unavailable' | 'rejected' | 'network',
    /** True when the call may have taken effect although it failed (a commit whose response was lost). */
    readonly ambiguous: boolean,
    message: string,
    options?: { cause?: unknown; sqlState?: string | undefined },
  ) {
    super(`${operation} failed (${failure}${ambiguous ? ', outcome unknown' : ''}): ${message}`, options);
    this.sqlState = options?.sqlState ?? /SQLState: (\w{5})/.exec(message)?.[1];
  }

  /** PostgreSQL's SQLSTATE of a `statement` failure, when the transport reports one: `23505`, `40001`. */
  readonly sqlState: string | undefined;
}

/** A Data API call failed. The SDK's error is the `cause`. */
export class DataApiError extends DatabaseCallError {
  override name = 'DataApiError';
}

/** A call over the PostgreSQL wire protocol failed. node-postgres' error is the `cause`. */
export class PostgresError extends DatabaseCallError {
  override name = 'PostgresError';
}

/**
 * A migration that was applied has changed since: its statements no longer hash to the checksum recorded
 * with its version, so the database was not built by the migrations as they read now. `migrate` applies
 * nothing of the run (and a deploy fails) until the migration is restored.
 */
export class MigrationChangedError extends InboxError {
  override name = 'MigrationChangedError';
  constructor(
    /** The migration set's name. */
    readonly set: string,
    /** The version that changed. */
    readonly version: number,
    /** The migration's name as it reads now. */
    readonly migration: string,
    /** Hex SHA-256 recorded when the version was applied. */
    readonly recordedChecksum: string,
    /** Hex SHA-256 of its statements as they read now. */
    readonly currentChecksum: string,
  ) {
    super(
      `migration set "${set}" version ${version} ("${migration}") was changed after it was applied: its statements hash to ` +
        `${currentChecksum}, the database recorded ${recordedChecksum}. Fix: restore version ${version} as it was applied, ` +
        'and put the change in a new migration with a higher version; nothing of this run was applied.',
    );
  }
}
