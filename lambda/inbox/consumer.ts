import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { isFifo, runBatch, succeeded } from './batch.js';
import type { Outcome } from './batch.js';
import { checkGatedStatement, claimParams, claimSql, gatedSql, parkSql, readClaim, replayGatedSql, sameHash, storedHashSql } from './claim.js';
import type { ClaimOutcome } from './claim.js';
import { DataApiSession } from './data-api.js';
import type { DatabaseTarget, StatementResult, Transaction } from './data-api.js';
import { InboxConfigError, InboxError, KeyCollisionError, ParseError, PermanentError } from './errors.js';
import { checkBodySize, hex, keyStrategy, payloadHash } from './keys.js';
import { resolveOptions } from './options.js';
import type { InboxMessage, InboxOptions, ResolvedOptions } from './options.js';
import { parkedMessages } from './parked.js';
import { sqsRecords } from './sqs-event.js';
import type { ParkedMessage, ParkedMessages } from './parked.js';
import { inboxTables } from './schema.js';
import type { InboxTables } from './schema.js';
import { BatchTally, defaultTelemetry, publishSummary } from './telemetry.js';
import type { InboxLogger } from './telemetry.js';

/** The handler `inbox()` returns: an SQS Lambda handler, plus access to its parked messages. */
export interface InboxHandler {
  /**
   * Handles one SQS event; resolves with the records to report failed. Without a `context`, no record is
   * held back for the deadline.
   */
  (event: SQSEvent, context?: Pick<Context, 'getRemainingTimeInMillis'>): Promise<SQSBatchResponse>;
  /** List and replay this consumer's parked messages. */
  readonly parked: ParkedMessages;
}

/**
 * Makes an SQS-triggered Lambda handler that applies each record's effect exactly once: per record, one
 * Aurora transaction over the Data API claims (consumer, key) in the inbox table and applies the effect
 * only if the claim inserted the row. It returns SQS partial batch failures: exactly the records that did
 * not commit and were not duplicates. Options are validated here, once, at cold start.
 *
 * @example
 * export const handler = inbox({
 *   consumer: 'order-worker',
 *   apply: async (tx, message) => {
 *     await tx.execute("UPDATE orders SET status = 'shipped' WHERE order_id = :orderId", { orderId: message.body.orderId });
 *   },
 * });
 */
export function inbox<Body = any>(options: InboxOptions<Body>): InboxHandler {
  const resolved = resolveOptions(options);
  const tables = inboxTables(resolved.schema);
  const keyOf = keyStrategy(options.key);
  if (resolved.mode.kind === 'statement' && resolved.mode.constantSql !== undefined) {
    checkGatedStatement(resolved.mode.constantSql, undefined, 'statement.sql');
  }
  // Stryker disable next-line ConditionalExpression: making the defaults when both are given only wastes them
  const defaults = options.logger && options.metrics ? undefined : defaultTelemetry(resolved.consumer);
  const logger = options.logger ?? defaults!.logger;
  const deployed = process.env.INBOX_CONSUMER;
  if (options.consumer !== undefined && deployed && deployed !== options.consumer) {
    // The construct names its alarms, dashboard and uniqueness check after INBOX_CONSUMER; the claims
    // and metrics carry the option. Both work, but they no longer describe the same consumer.
    logger.warn('inbox consumer differs from INBOX_CONSUMER: claims and metrics use the option, the deployment\'s alarms watch the environment name', {
      consumer: options.consumer,
      INBOX_CONSUMER: deployed,
    });
  }
  const metrics = options.metrics ?? defaults!.metrics;
  const consumer = new RecordConsumer(resolved, tables, keyOf, logger);

  // Checked at the first invocation (the client's settings are async providers) and remembered.
  let clientChecked: Promise<void> | undefined;

  const handler = async (event: SQSEvent, context?: Pick<Context, 'getRemainingTimeInMillis'>): Promise<SQSBatchResponse> => {
    await (clientChecked ??= refuseSdkRetries(resolved.mode.kind, resolved.target.client));
    const started = resolved.now();
    const records = sqsRecords(event);
    // Lambda's clock when it gives one; else the margin never stops a record.
    const remaining = () => context?.getRemainingTimeInMillis?.() ?? Number.POSITIVE_INFINITY;
    const margin = resolved.deadlineMarginMs ?? Math.min(resolved.callTimeoutMs * 2, remaining() / 2);
    const tally = new BatchTally();
    const session = new DataApiSession(resolved.target, {
      callTimeoutMs: resolved.callTimeoutMs,
      resumeDelaysMs: resolved.resumeDelaysMs,
      timeLeftMs: () => remaining() - margin,
      onResumeRetry: () => tally.resumeRetries++,
      sleep: resolved.sleep,
    });
    const outcomes = await runBatch(
      records,
      {
        fifo: isFifo(records),
        onFailure: resolved.onFailure,
        concurrency: resolved.concurrency,
        mayStart: () => remaining() >= margin,
      },
      async (record) => {
        const begun = resolved.now();
        const outcome = await consumer.consume(record, session, tally);
        tally.recordLatenciesMs.push(resolved.now() - begun);
        return outcome;
      },
    );
    const failed = records.filter((_, index) => !succeeded(outcomes[index]!));
    if (failed.some((record) => typeof record.messageId !== 'string' || record.messageId.length === 0)) {
      // A record that did not commit must come back, but it cannot be named: fail the whole batch. Its
      // committed records are duplicates on redelivery, so this costs calls, never an effect.
      throw new InboxError('a record that did not commit has no messageId, so it cannot be reported alone; failing the whole batch so SQS delivers it again');
    }
    const failedIds = failed.map((record) => record.messageId);
    const summary = tally.summarise(outcomes, failedIds, resolved.now() - started);
    logFailures(logger, records, outcomes);
    publishSummary(metrics, summary);
    options.onBatch?.(summary);
    return { batchItemFailures: failedIds.map((itemIdentifier) => ({ itemIdentifier })) };
  };
  return Object.assign(handler, {
    parked: parkedMessages({
      target: resolved.target,
      tables,
      consumer: resolved.consumer,
      callTimeoutMs: resolved.callTimeoutMs,
      replayEffect: (tx, parked) => consumer.replay(tx, parked),
    }),
  });
}

/**
 * In transaction mode the SDK's own retries would re-send a statement whose response was lost, running it
 * twice inside one transaction. A client that retries is refused, with the fix.
 */
async function refuseSdkRetries(mode: 'transaction' | 'statement', client: DatabaseTarget['client']): Promise<void> {
  if (mode !== 'transaction') return;
  const provider = (client.config as { maxAttempts?: unknown }).maxAttempts;
  // Stryker disable next-line LogicalOperator: an RDSDataClient's resolved config always holds maxAttempts as a provider function (resolveRetryConfig), so this branch never runs
  const attempts = typeof provider === 'function' ? Number(await provider()) : Number(provider ?? 1);
  if (attempts > 1) {
    throw new InboxConfigError(
      'database.client',
      `retries each call up to ${attempts} times; inside a transaction a retried statement whose first response was lost runs twice. ` +
        'Create it with `new RDSDataClient({ maxAttempts: 1 })`, or leave `client` out and inbox() makes one',
    );
  }
}

function logFailures(logger: InboxLogger, records: readonly SQSRecord[], outcomes: readonly Outcome[]): void {
  outcomes.forEach((outcome, index) => {
    const messageId = records[index]?.messageId;
    if (outcome.kind === 'failed') {
      logger.warn('record failed; SQS will deliver it again', { messageId, error: describe(outcome.error) });
    } else if (outcome.kind === 'parked') {
      logger.warn('record parked', { messageId, error: describe(outcome.error) });
    }
  });
}

const describe = (error: Error) => ({ name: error.name, message: error.message });

/** Turns one record into one outcome; never throws. */
class RecordConsumer<Body> {
  constructor(
    private readonly options: ResolvedOptions<Body>,
    private readonly tables: InboxTables,
    private readonly keyOf: (record: SQSRecord) => string,
    private readonly logger: InboxLogger,
  ) {}

  async consume(record: SQSRecord, session: DataApiSession, tally: BatchTally): Promise<Outcome> {
    let key: string | null = null;
    // Stryker disable next-line StringLiteral: a record without a body string is parked; its hash only has to match its own redeliveries
    const body = typeof record.body === 'string' ? record.body : '';
    const sha256 = payloadHash(body);
    try {
      key = this.keyOf(record);
      if (typeof record.body !== 'string') {
        throw new ParseError(`the record has no body string (body is ${record.body === null ? 'null' : typeof record.body}); SQS records from Lambda always carry one`);
      }
      checkBodySize(body);
      const message = this.message(record, key);
      const outcome = this.options.mode.kind === 'transaction'
        ? await this.inTransaction(session, message, sha256)
        : await this.inOneStatement(session, message, sha256);
      if (typeof outcome === 'object') throw this.collision(record, key, outcome.collidesWith, sha256, tally);
      return { kind: outcome };
    } catch (error) {
      const failure = error instanceof Error ? error : new Error(String(error));
      if (failure instanceof PermanentError && this.options.onPermanentError === 'park') {
        return this.park(session, record, key, sha256, failure, tally);
      }
      return { kind: 'failed', error: failure };
    }
  }

  /** Runs the effect of a parked message inside the replay's transaction, which already holds its claim. */
  async replay(tx: Transaction, parked: ParkedMessage): Promise<void> {
    const record: SQSRecord = {
      messageId: parked.sqsMessageId,
      receiptHandle: '',
      body: parked.body,
      attributes: parked.attributes.attributes as unknown as SQSRecord['attributes'],
      messageAttributes: parked.attributes.messageAttributes as SQSRecord['messageAttributes'],
      md5OfBody: '',
      eventSource: 'aws:sqs',
      eventSourceARN: '',
      awsRegion: '',
    };
    const message = this.message(record, parked.key ?? parked.sqsMessageId);
    const mode = this.options.mode;
    if (mode.kind === 'transaction') {
      await mode.apply({ execute: (sql, params) => tx.execute(sql, params), transactionId: tx.transactionId }, message);
      return;
    }
    const { sql, params } = mode.statement(message);
    const userSql = checkGatedStatement(sql, params, 'statement');
    await tx.execute(replayGatedSql(userSql), { ...params, inbox_key: message.key });
  }

  private message(record: SQSRecord, key: string): InboxMessage<Body> {
    let body: Body;
    try {
      body = this.options.parse(record.body, record);
    } catch (error) {
      // Stryker disable next-line ObjectLiteral: the cause is for a debugger; the message already carries its text
      throw new ParseError(`the body could not be parsed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
    return { key, body, record, attempt: attemptOf(record), groupId: record.attributes?.MessageGroupId };
  }

  /** Begin, claim, apply (only if claimed), commit. k + 3 calls for an apply of k statements. */
  private async inTransaction(session: DataApiSession, message: InboxMessage<Body>, sha256: Uint8Array) {
    const mode = this.options.mode;
    // Stryker disable next-line StringLiteral: the message of an unreachable error
    if (mode.kind !== 'transaction') throw new Error('unreachable');
    const tx = await session.transaction();
    let claim: ClaimOutcome;
    try {
      claim = readClaim((await tx.execute(claimSql(this.tables), claimParams(this.options.consumer, message.key, sha256))).rows);
      if (claim.claimed) {
        await mode.apply({ execute: (sql, params) => tx.execute(sql, params), transactionId: tx.transactionId }, message);
      }
    } catch (error) {
      // The claim and the effect roll back together; a failed rollback leaves the transaction to expire.
      await tx.rollback().catch(() => {});
      throw error;
    }
    if (!claim.claimed) {
      await tx.rollback().catch(() => {});
      return this.duplicateOrCollision(session, message.key, claim, sha256);
    }
    try {
      await tx.commit();
    } catch (error) {
      // Ambiguous: the commit may have happened. Reported failed; the redelivery finds the claim if it did.
      // If it did not, a rollback frees the claim's row lock now instead of at the idle expiry, so the
      // redelivery is not stuck behind it. After a commit that happened, the rollback finds nothing.
      await tx.rollback().catch(() => {});
      throw error;
    }
    return 'processed' as const;
  }

  /** One autocommit statement that claims and applies. */
  private async inOneStatement(session: DataApiSession, message: InboxMessage<Body>, sha256: Uint8Array) {
    const mode = this.options.mode;
    // Stryker disable next-line StringLiteral: the message of an unreachable error
    if (mode.kind !== 'statement') throw new Error('unreachable');
    const { sql, params } = mode.statement(message);
    const result: StatementResult = await session.execute(gatedSql(this.tables, checkGatedStatement(sql, params, 'statement')), {
      ...params,
      ...claimParams(this.options.consumer, message.key, sha256),
    });
    const claim = readClaim(result.rows);
    return claim.claimed ? ('processed' as const) : this.duplicateOrCollision(session, message.key, claim, sha256);
  }

  private async duplicateOrCollision(session: DataApiSession, key: string, claim: ClaimOutcome, sha256: Uint8Array) {
    const stored = claim.existingSha256 ?? (await this.storedHash(session, key));
    // A claim without a stored hash (made by an older writer) cannot be compared: treat it as a redelivery.
    if (stored && !sameHash(stored, sha256)) return { collidesWith: stored };
    return 'duplicate' as const;
  }

  private async storedHash(session: DataApiSession, key: string): Promise<Uint8Array | null> {
    const { rows } = await session.execute(storedHashSql(this.tables), { inbox_consumer: this.options.consumer, inbox_key: key });
    return (rows[0]?.existing_sha256 as Uint8Array | null | undefined) ?? null;
  }

  /**
   * Stores the record with its claim, so it succeeds without blocking its FIFO group. A record whose key
   * turns out to be claimed already is not parked: with the same body it is a duplicate (its effect was
   * applied, or is parked under the claim's owner); with another body it is parked as a collision.
   */
  private async park(
    session: DataApiSession,
    record: SQSRecord,
    key: string | null,
    sha256: Uint8Array,
    error: PermanentError,
    tally: BatchTally,
  ): Promise<Outcome> {
    const claim = key !== null && !(error instanceof KeyCollisionError);
    try {
      const { rows } = await session.execute(parkSql(this.tables), {
        ...claimParams(this.options.consumer, key, sha256),
        inbox_claim: claim,
        inbox_message_id: record.messageId,
        inbox_body: typeof record.body === 'string' ? record.body : '',
        inbox_attributes: { attributes: record.attributes ?? {}, messageAttributes: record.messageAttributes ?? {} },
        inbox_error_class: error.name,
        inbox_error_message: error.message,
        inbox_attempt: attemptOf(record),
      });
      const outcome = readClaim(rows);
      if (!claim || outcome.claimed) return { kind: 'parked', error };
      const verdict = await this.duplicateOrCollision(session, key!, outcome, sha256);
      if (verdict === 'duplicate') return { kind: 'duplicate' };
      const collision = this.collision(record, key!, verdict.collidesWith, sha256, tally);
      return this.park(session, record, key, sha256, collision, tally);
    } catch (parkError) {
      return { kind: 'failed', error: parkError instanceof Error ? parkError : new Error(String(parkError)) };
    }
  }

  /** Counts and logs a key collision, and returns it as the record's permanent error. */
  private collision(record: SQSRecord, key: string, stored: Uint8Array, received: Uint8Array, tally: BatchTally): KeyCollisionError {
    tally.collisions++;
    const error = new KeyCollisionError(key, hex(stored), hex(received));
    this.logger.error('key collision: a different message reused a claimed idempotency key; not applied', {
      messageId: record.messageId,
      key,
      storedSha256: error.storedSha256,
      receivedSha256: error.receivedSha256,
      attempt: attemptOf(record),
      // Stryker disable next-line OptionalChaining: Lambda's SQS records always carry attributes
      groupId: record.attributes?.MessageGroupId,
    });
    return error;
  }

}

function attemptOf(record: SQSRecord): number {
  const count = Number(record.attributes?.ApproximateReceiveCount);
  return Number.isInteger(count) && count > 0 ? count : 1;
}
