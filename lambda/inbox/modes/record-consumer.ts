import { parkRecord } from '../parked/park-record.js';
import { ClaimWithFirstStatement } from './claim-with-first-statement.js';
import type { Outcome } from '../lanes/lanes.js';
import { checkGatedStatement, claimParams, gatedSql, readClaim, sameHash, statementBound, storedHashSql } from '../sql/claim.js';
import type { ClaimOutcome } from '../sql/claim.js';
import type { Transaction } from '../transport/transaction.js';
import type { InboxSession } from '../transport/session.js';
import { retryConflicts } from '../transport/conflicts.js';
import { DatabaseCallError, InboxConfigError, KeyCollisionError, PermanentError, UnstorableTextError } from '../errors.js';
import { hex } from '../prepare/keys.js';
import type { InboxMessage, InboxTransaction, ResolvedMode, ResolvedOptions } from '../handler/options.js';
import type { PreparedRecord } from '../prepare/prepare.js';
import type { InboxTables } from '../sql/schema.js';
import { UNSTORABLE_TEXT_STATES, unstorableTextIn } from '../sql/storable-text.js';
import type { InboxSource } from '../sources/source.js';
import type { BatchTally, InboxLogger } from '../telemetry/telemetry.js';
import { ClaimBeforeApply } from './claim-before-apply.js';
import { OutboxWriter } from '../outbox/outbox-writer.js';
import type { OutboxConfig, TransactionOutbox } from '../outbox/transaction-outbox.js';
import { statementAlone } from './batch-modes.js';
import { withChannel } from '../transport/pass-through.js';
import type { RidingClaim, TransactionClaim } from './claim-before-apply.js';

/** What a claim came to: applied, a redelivery, or a different message under a claimed key. */
export type ClaimVerdict = 'processed' | DuplicateVerdict;
/** A claim that found its key taken: a redelivery, or a different message under the key. */
type DuplicateVerdict = 'duplicate' | { readonly collidesWith: Uint8Array };

/**
 * Turns one prepared record into one outcome, alone: in its own transaction (transaction modes) or its own
 * statement (statement modes). The per-record modes use it for every record; the batch modes for records
 * that cannot join the batch, and for each record after the batch failed. Never throws.
 */
export class RecordConsumer<Body, Raw = unknown> {
  readonly #options: ResolvedOptions<Body, Raw>;
  readonly #tables: InboxTables;
  readonly #logger: InboxLogger;
  readonly #source: InboxSource<Raw, unknown, unknown>;
  readonly #outboxConfig: OutboxConfig | undefined;

  constructor(options: ResolvedOptions<Body, Raw>, tables: InboxTables, logger: InboxLogger, source: InboxSource<Raw, unknown, unknown>) {
    this.#options = options;
    this.#tables = tables;
    this.#logger = logger;
    this.#source = source;
    this.#outboxConfig = options.outbox && { consumer: options.consumer, tables, destinations: options.outbox.destinations };
  }

  /**
   * The outbox of one transaction; `only` is the message a send belongs to when it names none. Without
   * the consumer's `outbox` option, `tx.send` throws, naming it.
   */
  outbox(only: { readonly key: string } | undefined): TransactionOutbox {
    return this.#outboxConfig ? new OutboxWriter(this.#outboxConfig, only) : NO_OUTBOX;
  }

  async consume(prepared: PreparedRecord<Body, Raw>, session: InboxSession, tally: BatchTally): Promise<Outcome> {
    const { sha256 } = prepared;
    try {
      if (prepared.error) throw prepared.error;
      if (prepared.known === 'duplicate') return { kind: 'duplicate' };
      if (prepared.known) throw this.#collision(prepared, prepared.known.collidesWith, tally);
      const message = prepared.message!;
      const verdict = await this.#applyAlone(session, message, sha256, tally);
      if (typeof verdict === 'object') throw this.#collision(prepared, verdict.collidesWith, tally);
      return { kind: verdict };
    } catch (error) {
      return this.#failed(session, prepared, refusedText(prepared, error) ?? error, tally);
    }
  }

  /**
   * The outcome of a record whose claim was made (or refused) by a batch statement: processed when it
   * claimed, else a duplicate, or a collision that is parked or failed.
   */
  async settle(prepared: PreparedRecord<Body, Raw>, claim: ClaimOutcome, session: InboxSession, tally: BatchTally): Promise<Outcome> {
    try {
      if (claim.claimed) return { kind: 'processed' };
      const verdict = await this.#duplicateOrCollision(session, prepared.key!, claim.existingSha256, prepared.sha256);
      if (verdict === 'duplicate') return { kind: 'duplicate' };
      throw this.#collision(prepared, verdict.collidesWith, tally);
    } catch (error) {
      return this.#failed(session, prepared, error, tally);
    }
  }

  /** A record's failure: parked when it is permanent and the consumer parks, else failed. */
  #failed(session: InboxSession, prepared: PreparedRecord<Body, Raw>, error: unknown, tally: BatchTally): Promise<Outcome> | Outcome {
    const failure = error instanceof Error ? error : new Error(String(error));
    if (failure instanceof PermanentError && this.#options.onPermanentError === 'park') {
      const { record, key, sha256 } = prepared;
      return parkRecord({
        session,
        tables: this.#tables,
        consumer: this.#options.consumer,
        record,
        attributes: this.#source.parkedAttributes(record.raw),
        key,
        sha256,
        error: failure,
        verdictOf: (claim) => this.#duplicateOrCollision(session, key!, claim.existingSha256, sha256),
        collision: (stored) => this.#collision(prepared, stored, tally),
      });
    }
    return { kind: 'failed', error: failure };
  }

  /** The record alone, in the consumer's mode. */
  async #applyAlone(session: InboxSession, message: InboxMessage<Body, Raw>, sha256: Uint8Array, tally: BatchTally): Promise<ClaimVerdict> {
    const mode = this.#options.mode;
    // On a database with optimistic concurrency (Aurora DSQL) a conflict rolled the transaction back for
    // certain: the record's whole transaction runs again, in place, a bounded number of times.
    switch (mode.kind) {
      case 'transaction':
        return retryConflicts(session, () => this.#inTransaction(session, tally, { message, sha256 }, (tx) => mode.apply(tx, message)));
      case 'batch-transaction':
        return retryConflicts(session, () => this.#inTransaction(session, tally, { message, sha256 }, (tx) => mode.applyBatch(tx, [message])));
      case 'statement':
        return retryConflicts(session, () => this.#inOneStatement(session, mode, message, sha256));
      case 'batch-statement': {
        const claim = await retryConflicts(session, () =>
          statementAlone(session, { tables: this.#tables, consumer: this.#options.consumer, mode }, { message, sha256 }),
        );
        return claim.claimed ? 'processed' : this.#duplicateOrCollision(session, message.key, claim.existingSha256, sha256);
      }
    }
  }

  /**
   * Begin, claim, apply (only if claimed), commit. The claim goes alone before `apply` (k + 3 calls for an
   * effect of k statements), or rides on the effect's first statement (k + 2) with `claim:
   * withFirstStatement`; one call more when the effect sends (its outbox rows, in one statement).
   */
  async #inTransaction(
    session: InboxSession,
    tally: BatchTally,
    { message, sha256 }: { readonly message: InboxMessage<Body, Raw>; readonly sha256: Uint8Array },
    apply: (tx: InboxTransaction) => Promise<void>,
  ): Promise<ClaimVerdict> {
    const tx = await session.transaction();
    const writer = this.outbox(message);
    const params = { ...claimParams(this.#options.consumer, message.key, sha256), ...statementBound(this.#options.callTimeoutMs) };
    // A claim that rides on apply's statements takes them; one made before apply leaves them to the transaction.
    const riding = this.#options.claim === 'with-first-statement' ? new ClaimWithFirstStatement(tx, this.#tables, params) : undefined;
    const claim: TransactionClaim = riding ?? new ClaimBeforeApply(tx, this.#tables, params);
    let claimed = false;
    let sent: number[] = [];
    try {
      if (await claim.beforeApply()) {
        await apply(inboxTransaction(tx, writer, riding)).catch((error: unknown) => {
          // A statement after a taken claim fails too (the transaction is aborted): the record is a duplicate.
          if (!claim.taken) throw error;
        });
        claimed = await claim.afterApply();
        if (claimed) sent = await writer.flush(tx);
      }
    } catch (error) {
      // The claim and the effect roll back together; a failed rollback leaves the transaction to expire.
      await tx.rollback().catch(() => {});
      // The carrier statement failed: a claim made before (a duplicate) may hide behind the effect's own error.
      const earlier = claim.carrierFailed ? await this.#claimOf(session, message.key).catch(() => undefined) : undefined;
      if (earlier) return this.#duplicateOrCollision(session, message.key, earlier.existingSha256, sha256);
      throw error;
    }
    if (!claimed) {
      await tx.rollback().catch(() => {});
      return this.#duplicateOrCollision(session, message.key, claim.existingSha256, sha256);
    }
    await commitOrRollBack(tx);
    // Committed: the relay sends these after the batch.
    tally.outboxIds.push(...sent);
    return 'processed';
  }

  /** One autocommit statement that claims and applies. */
  async #inOneStatement(
    session: InboxSession,
    mode: Extract<ResolvedMode<Body, Raw>, { kind: 'statement' }>,
    message: InboxMessage<Body, Raw>,
    sha256: Uint8Array,
  ): Promise<ClaimVerdict> {
    const { sql, params } = mode.statement(message);
    const result = await session.executeIdempotent(gatedSql(this.#tables, checkGatedStatement(sql, params, 'statement')), {
      ...params,
      ...claimParams(this.#options.consumer, message.key, sha256),
    });
    const claim = readClaim(result.rows);
    return claim.claimed ? 'processed' : this.#duplicateOrCollision(session, message.key, claim.existingSha256, sha256);
  }

  /** A claim that found its key taken: a duplicate, or a collision. `existing`: the hash the claim read, if any. */
  async #duplicateOrCollision(session: InboxSession, key: string, existing: Uint8Array | null, sha256: Uint8Array): Promise<DuplicateVerdict> {
    const stored = existing ?? (await this.#storedHash(session, key));
    // A claim without a stored hash (made by an older writer) cannot be compared: treat it as a redelivery.
    if (stored && !sameHash(stored, sha256)) return { collidesWith: stored };
    return 'duplicate';
  }

  async #storedHash(session: InboxSession, key: string): Promise<Uint8Array | null> {
    return (await this.#claimOf(session, key))?.existingSha256 ?? null;
  }

  /** The committed claim of a key, if there is one: its stored hash (null for a claim stored without one). */
  async #claimOf(session: InboxSession, key: string): Promise<{ existingSha256: Uint8Array | null } | undefined> {
    const { rows } = await session.executeIdempotent(storedHashSql(this.#tables), { inbox_consumer: this.#options.consumer, inbox_key: key });
    return rows[0] && { existingSha256: (rows[0].existing_sha256 as Uint8Array | null | undefined) ?? null };
  }

  /** Counts and logs a key collision of the record with the hash `stored`, and returns it as the record's permanent error. */
  #collision({ record, key, sha256 }: PreparedRecord<Body, Raw>, stored: Uint8Array, tally: BatchTally): KeyCollisionError {
    tally.collisions++;
    const error = new KeyCollisionError(key!, hex(stored), hex(sha256));
    this.#logger.error('key collision: a different message reused a claimed idempotency key; not applied', {
      [this.#source.idName]: record.id,
      key,
      storedSha256: error.storedSha256,
      receivedSha256: error.receivedSha256,
      attempt: record.attempt,
      groupId: record.groupId,
    });
    return error;
  }
}

/**
 * A statement PostgreSQL refused for text it cannot store, run for a message that holds such text: the
 * message's own permanent failure, which no redelivery can change (not the database's temporary one).
 * Undefined for any other failure, or for a message without such text (the text came from elsewhere).
 */
function refusedText(prepared: PreparedRecord<unknown, unknown>, error: unknown): UnstorableTextError | undefined {
  const sqlState = error instanceof DatabaseCallError ? error.sqlState : undefined;
  if (sqlState === undefined || !UNSTORABLE_TEXT_STATES.has(sqlState)) return undefined;
  const { body, groupId, id } = prepared.message!;
  const found = unstorableTextIn({ body, groupId, id }, 'message');
  return found && new UnstorableTextError(found.path, found.kind, { cause: error, sqlState });
}

/**
 * What `apply` and `applyBatch` may call on the transaction. With `claim` (a per-record transaction whose
 * claim rides on its first statement), statements go through it, and an ORM's calls wait for it (`sqs-inbox/orm`).
 */
export function inboxTransaction(tx: Transaction, outbox: TransactionOutbox, claim?: RidingClaim): InboxTransaction {
  const statements: Pick<Transaction, 'execute' | 'executeBatch'> = claim ?? tx;
  const inboxTx: InboxTransaction = {
    // Bound, not wrapped: the user's call reaches the claim or the transaction directly, one frame fewer in its stack.
    execute: statements.execute.bind(statements),
    executeBatch: statements.executeBatch.bind(statements),
    send: (message, from) => outbox.send(message, from),
    transactionId: tx.transactionId,
  };
  return withChannel(inboxTx, tx.channel(claim));
}

/** The outbox of a consumer without one. */
const NO_OUTBOX: TransactionOutbox = {
  send() {
    throw new InboxConfigError(
      'outbox',
      'tx.send needs an outbox: pass e.g. inbox({ outbox: sqsOutbox({ client: new SQSClient({}) }), ... }) (sqsOutbox from "sqs-inbox/outbox")',
    );
  },
  flush: async () => [],
};

/**
 * Commits. A failed commit is ambiguous: the record is reported failed, and its redelivery finds the claim
 * if the commit did happen. If it did not, a rollback frees the claim's row lock now instead of at the
 * idle expiry, so the redelivery is not stuck behind it; after a commit that happened it finds nothing.
 */
export async function commitOrRollBack(tx: Transaction): Promise<void> {
  try {
    await tx.commit();
  } catch (error) {
    await tx.rollback().catch(() => {});
    throw error;
  }
}
