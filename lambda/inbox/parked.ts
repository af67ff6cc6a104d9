import { DataApiSession } from './data-api.js';
import type { DatabaseTarget, Transaction } from './data-api.js';
import type { InboxTables } from './schema.js';

/** A record parked by `onPermanentError: 'park'`. */
export interface ParkedMessage {
  /** The parked row's id: what {@link ParkedMessages.replay} takes. */
  readonly id: number;
  /** The record's id: the SQS messageId, the stream's sequence number, Kafka's `topic-partition@offset`. */
  readonly sqsMessageId: string;
  /** The idempotency key, or null when the record had no usable key. */
  readonly key: string | null;
  /** The record's body, as received. */
  readonly body: string;
  /**
   * What the record carried besides its body: `{ attributes, messageAttributes }` of an SQS record,
   * `{ record }` (the whole record) of a stream record.
   */
  readonly attributes: { readonly attributes?: Record<string, string>; readonly messageAttributes?: Record<string, unknown>; readonly record?: unknown };
  /** The permanent error's `name`: `PermanentError`, `ParseError`, `KeyCollisionError`, ... */
  readonly errorClass: string;
  /** Its message. */
  readonly errorMessage: string;
  /** The delivery that parked it (ApproximateReceiveCount). */
  readonly attempt: number;
  /** When it was parked. */
  readonly parkedAt: Date;
  /** When it was replayed; null while it is still parked. */
  readonly replayedAt: Date | null;
  /** Parking this record made its key's claim, so a redelivery of the key is a duplicate. */
  readonly ownsClaim: boolean;
}

/** How a replay came out. */
export type ReplayResult = 'replayed' | 'already-replayed' | 'not-found';

/** List and replay one consumer's parked messages. */
export interface ParkedMessages {
  /**
   * Parked messages, oldest first.
   * @param options.includeReplayed also list messages already replayed. @default false
   * @param options.limit @default 100
   */
  list(options?: { includeReplayed?: boolean | undefined; limit?: number | undefined }): Promise<ParkedMessage[]>;
  /**
   * Applies a parked message's effect now (after its cause was fixed), in one transaction that also marks
   * it replayed: replaying twice, or a later redelivery, applies nothing more.
   * A throw rolls everything back and leaves the message parked.
   */
  replay(id: number): Promise<ReplayResult>;
}

/** The consumer's effect, run for a replay inside the replay's transaction. */
export type ReplayEffect = (tx: Transaction, parked: ParkedMessage) => Promise<void>;

export function parkedMessages(config: {
  target: DatabaseTarget;
  tables: InboxTables;
  consumer: string;
  callTimeoutMs: number;
  replayEffect: ReplayEffect;
}): ParkedMessages {
  const { tables, consumer } = config;
  const session = () => new DataApiSession(config.target, { callTimeoutMs: config.callTimeoutMs, resumeDelaysMs: [500, 1000, 2000, 4000, 8000] });
  const columns = `id, sqs_message_id, message_key, body, attributes, error_class, error_message, attempt, parked_at, replayed_at, owns_claim`;
  return {
    async list(options = {}) {
      const { rows } = await session().execute(
        `SELECT ${columns} FROM ${tables.parked}
          WHERE consumer_name = :consumer AND (:includeReplayed OR replayed_at IS NULL)
          ORDER BY parked_at, id LIMIT :limit`,
        { consumer, includeReplayed: options.includeReplayed ?? false, limit: options.limit ?? 100 },
      );
      return rows.map(toParked);
    },
    async replay(id) {
      const tx = await session().transaction();
      try {
        const { rows } = await tx.execute(
          `SELECT ${columns} FROM ${tables.parked} WHERE id = :id AND consumer_name = :consumer FOR UPDATE`,
          { id, consumer },
        );
        const row = rows[0];
        if (!row) {
          await tx.rollback();
          return 'not-found';
        }
        const parked = toParked(row);
        if (parked.replayedAt) {
          await tx.rollback();
          return 'already-replayed';
        }
        // No claim is made here. A row that owns its key's claim is the only parked row for that key (a
        // second message with the key was a duplicate, or a collision parked without the claim); a row
        // without one has no key to claim, or collided with another message's key. Either way the
        // effect runs once per parked row, which FOR UPDATE and replayed_at guard.
        await config.replayEffect(tx, parked);
        await tx.execute(`UPDATE ${tables.parked} SET replayed_at = now() WHERE id = :id`, { id });
        await tx.commit();
        return 'replayed';
      } catch (error) {
        await tx.rollback().catch(() => {});
        throw error;
      }
    },
  };
}

function toParked(row: Record<string, unknown>): ParkedMessage {
  return {
    id: Number(row.id),
    sqsMessageId: String(row.sqs_message_id),
    key: (row.message_key as string | null) ?? null,
    body: String(row.body),
    attributes: row.attributes as ParkedMessage['attributes'],
    errorClass: String(row.error_class),
    errorMessage: String(row.error_message),
    attempt: Number(row.attempt),
    parkedAt: row.parked_at as Date,
    replayedAt: (row.replayed_at as Date | null) ?? null,
    ownsClaim: row.owns_claim === true,
  };
}
