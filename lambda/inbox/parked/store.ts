import { claimParams, claimSql, readClaim, statementBound } from '../sql/claim.js';
import type { TransportDriver } from '../transport/transport.js';
import type { InboxSession } from '../transport/session.js';
import { sessionOf } from '../transport/transport.js';
import type { InboxTransport } from '../transport/transport.js';
import { retryConflicts } from '../transport/conflicts.js';
import type { Transaction } from '../transport/transaction.js';
import { ParkedCollisionError } from '../errors.js';
import { collisionKey, payloadHash } from '../prepare/keys.js';
import { PARKED_COLUMNS, readParked } from './parked-rows.js';
import { inboxTables } from '../sql/schema.js';
import type { InboxTables } from '../sql/schema.js';

/** Where a parked message stands: still parked, or which one decision was taken on it. */
export type ParkedStatus = 'parked' | 'replayed' | 'redriven' | 'discarded';

/** A record parked by `onPermanentError: park` (`onPermanentError: 'park'`). */
export interface ParkedMessage {
  /** The parked row's id: what {@link ParkedMessages.replay} takes. */
  readonly id: number;
  /** The record's id: the SQS messageId, the stream's sequence number, Kafka's `topic-partition@offset`. */
  readonly sqsMessageId: string;
  /** The idempotency key, or null when the record had no usable key. */
  readonly key: string | null;
  /**
   * The record's payload as text: an SQS body as received; Kinesis data and a Kafka value read as UTF-8
   * (bytes that are not UTF-8 read as U+FFFD: `payload` has them); a DynamoDB change as its JSON.
   */
  readonly body: string;
  /**
   * The record's payload, byte for byte, as it was hashed with its claim: what a replay hands the
   * record back with. (Rows parked before the inbox's migration 6 kept only their body: its UTF-8.)
   */
  readonly payload: Uint8Array;
  /**
   * What the record carried besides its body: `{ attributes, messageAttributes, eventSourceARN }` of an SQS
   * record (no `eventSourceARN` on records parked before it was stored: a redrive then needs a queue URL),
   * `{ record }` of a stream record: the whole record but its payload (Kinesis data and a Kafka value left
   * empty, a DynamoDB change without its key and images), which `payload` holds.
   */
  readonly attributes: {
    readonly attributes?: Record<string, string>;
    readonly messageAttributes?: Record<string, unknown>;
    readonly eventSourceARN?: string;
    readonly record?: unknown;
  };
  /** The permanent error's `name`: `PermanentError`, `ParseError`, `KeyCollisionError`, ... */
  readonly errorClass: string;
  /** Its message. */
  readonly errorMessage: string;
  /** The delivery that parked it (ApproximateReceiveCount). */
  readonly attempt: number;
  /** When it was parked. */
  readonly parkedAt: Date;
  /** When it was replayed; null unless it was. */
  readonly replayedAt: Date | null;
  /** When it was sent back to its queue (`redriveParked`); null unless it was. */
  readonly redrivenAt: Date | null;
  /** The queue URL it was redriven to; null unless it was. */
  readonly redrivenTo: string | null;
  /** When an operator gave it up (`discard`); null unless one did. */
  readonly discardedAt: Date | null;
  /** `parked` until one of replay, redrive or discard is taken on it: then `replayed`, `redriven` or `discarded`. */
  readonly status: 'parked' | 'replayed' | 'redriven' | 'discarded';
  /** Parking this record made its key's claim, so a redelivery of the key is a duplicate. */
  readonly ownsClaim: boolean;
}

/** Why a replay, redrive or discard did nothing to a message: it is gone, or a decision was taken on it already. */
export type ParkedRefusal = 'not-found' | 'already-replayed' | 'already-redriven' | 'already-discarded';

/** How a replay came out. */
export type ReplayResult = 'replayed' | ParkedRefusal;

/** Read one consumer's parked messages. */
export interface ParkedMessageReader {
  /**
   * Parked messages, oldest first: by default only those still parked (not replayed, redriven nor discarded).
   * @example
   * const waiting = await parked.list();
   * const everything = await parked.list({ includeReplayed: true, includeRedriven: true, includeDiscarded: true, limit: 1000 });
   */
  list(options?: {
    /** Also list messages already replayed. @default false */
    readonly includeReplayed?: boolean | undefined;
    /** Also list messages already redriven to their queue. @default false */
    readonly includeRedriven?: boolean | undefined;
    /** Also list messages discarded by an operator. @default false */
    readonly includeDiscarded?: boolean | undefined;
    /** At most this many. @default 100 */
    readonly limit?: number | undefined;
  }): Promise<ParkedMessage[]>;
  /**
   * One parked message by id, whatever its status; undefined when this consumer has none with that id.
   * @example
   * const message = await parked.show(7);
   */
  show(id: number): Promise<ParkedMessage | undefined>;
}

/** List and replay one consumer's parked messages: `parkedMessages(handler)` from `sqs-inbox/operations`. */
export interface ParkedMessages extends ParkedMessageReader {
  /**
   * Applies a parked message's effect now (after its cause was fixed), in one transaction that also marks
   * it replayed: replaying twice, or a later redelivery, applies nothing more. A message redriven or
   * discarded is not replayed. A throw rolls everything back and leaves the message parked. A key
   * collision is refused with `ParkedCollisionError` unless `options.collision` says otherwise.
   * @example
   * await parkedMessages(handler).replay(7); // 'replayed'
   * await parkedMessages(handler).replay(8, { collision: 'apply-under-new-key' }); // both messages of key 8 take effect
   */
  replay(
    id: number,
    options?: {
      /**
       * What to do with a message parked for a key collision (a different message under a key whose effect
       * is applied): `'refuse'` throws `ParkedCollisionError`, as `redriveParked` refuses it;
       * `'apply-under-new-key'` claims a key of its own (its key and its body's hash, `<key>@sha256:<hex>`) in
       * the replay's transaction and applies it under that key, so another parked copy of the same message
       * applies nothing, and its outbox sends do not share the first message's keys.
       * @default 'refuse'
       */
      readonly collision?: 'refuse' | 'apply-under-new-key' | undefined;
    },
  ): Promise<'replayed' | 'not-found' | 'already-replayed' | 'already-redriven' | 'already-discarded'>;
}

/** What an operator does to parked messages besides replaying them: {@link parkedMessageStore}. */
export interface ParkedMessageStore extends ParkedMessageReader {
  /**
   * Gives messages up: marks each discarded, so it leaves the list and can no longer be replayed or
   * redriven. Its claim stays, so a later delivery of its key is still a duplicate. One statement.
   * @example
   * const [result] = await parked.discard([7]); // { id: 7, status: 'discarded' }
   */
  discard(
    ids: readonly number[],
  ): Promise<{ readonly id: number; readonly status: 'discarded' | 'not-found' | 'already-replayed' | 'already-redriven' | 'already-discarded' }[]>;
}

/**
 * The effect of a consumer, run for a replay inside the replay's transaction. Resolves with the ids of
 * the outbox rows it wrote, which the replay relays once it committed.
 */
export type ReplayEffect = (tx: Transaction, parked: ParkedMessage) => Promise<readonly number[]>;

/**
 * The parked messages of one consumer, as an operator's script or the CLI works on them: list, show,
 * discard. (A replay runs the consumer's effect, so it is `parkedMessages(handler).replay`; a redrive sends, so
 * it is `redriveParked`.)
 *
 * @example
 * const parked = parkedMessageStore({ session: dataApi({ resourceArn, secretArn }), consumer: 'order-worker' });
 * for (const message of await parked.list()) console.log(message.id, message.errorClass);
 * await parked.discard([7, 8]);
 */
export function parkedMessageStore(options: {
  /** The transport to run on (`dataApi({...})`, `postgres(pool)`, `dsql({...})`). */
  readonly session: InboxTransport;
  /** The consumer whose messages these are: the `consumer` given to `inbox()`. */
  readonly consumer: string;
  /** The inbox's schema. @default 'inbox' */
  readonly schema?: string | undefined;
}): ParkedMessageStore {
  const tables = inboxTables(options.schema ?? 'inbox');
  const { consumer } = options;
  const session = sessionOf(options.session, 'session');
  return {
    ...reader(() => session, tables, consumer),
    async discard(ids) {
      if (ids.length === 0) return [];
      // On Aurora DSQL a conflict at COMMIT rolled the discard back for certain: it runs again, and reads again.
      const found = await retryConflicts(session, async () => {
        const tx = await session.transaction();
        try {
          // Locked in id order, so two discards of overlapping ids wait for each other, never in a cycle;
          // a concurrent replay or redrive of one of them is either done (and named here) or waits.
          const { rows } = await tx.execute(
            `SELECT id, replayed_at, redriven_at, discarded_at FROM ${tables.parked}
              WHERE consumer_name = :consumer AND id = ANY(:ids::bigint[]) ORDER BY id FOR UPDATE`,
            { ids: idArray(ids), consumer },
          );
          const read = new Map(rows.map((row) => [Number(row.id), refusalOf(row.replayed_at !== null, row.redriven_at !== null, row.discarded_at !== null)]));
          const open = [...read].filter(([, refusal]) => refusal === undefined).map(([id]) => id);
          if (open.length > 0) await tx.execute(`UPDATE ${tables.parked} SET discarded_at = now() WHERE id = ANY(:ids::bigint[])`, { ids: idArray(open) });
          await tx.commit();
          return read;
        } catch (error) {
          await tx.rollback().catch(() => {});
          throw error;
        }
      });
      return ids.map((id) => ({ id, status: found.has(id) ? (found.get(id) ?? 'discarded') : 'not-found' }));
    },
  };
}

/** The parked messages of a consumer, with its replay: what `parkedMessages(handler)` gives. */
export function consumerParkedMessages(config: {
  transport: TransportDriver;
  tables: InboxTables;
  consumer: string;
  callTimeoutMs: number;
  replayEffect: ReplayEffect;
  /** Sends the outbox rows a committed replay wrote, as the consumer does after its batch; never throws. */
  relay: (session: InboxSession, ids: readonly number[]) => Promise<unknown>;
}): ParkedMessages {
  const { tables, consumer } = config;
  const session = () => config.transport.open({ callTimeoutMs: config.callTimeoutMs, resumeDelaysMs: [500, 1000, 2000, 4000, 8000] });
  return {
    ...reader(session, tables, consumer),
    async replay(id, options = {}) {
      const onCollision = options.collision ?? 'refuse';
      if (onCollision !== 'refuse' && onCollision !== 'apply-under-new-key') {
        throw new TypeError(`replay option "collision" must be 'refuse' or 'apply-under-new-key'; got ${JSON.stringify(onCollision)}`);
      }
      const db = session();
      // A conflict (Aurora DSQL at COMMIT, or a racing replay under repeatable read) rolled the replay back
      // for certain: it runs again, and finds the other replay's decision.
      const outcome = await retryConflicts(db, () => replayOnce(db, id, onCollision));
      if (outcome.result === 'replayed') await config.relay(db, outcome.outboxIds);
      return outcome.result;
    },
  };

  async function replayOnce(
    db: InboxSession,
    id: number,
    onCollision: 'refuse' | 'apply-under-new-key',
  ): Promise<{ result: ReplayResult; outboxIds: readonly number[] }> {
    const tx = await db.transaction();
    try {
      const [parked] = await readParked(
        (sql, params) => tx.execute(sql, params),
        tables,
        `SELECT ${PARKED_COLUMNS} FROM ${tables.parked} WHERE id = :id AND consumer_name = :consumer FOR UPDATE`,
        { id, consumer },
      );
      if (!parked) {
        await tx.rollback();
        return { result: 'not-found', outboxIds: [] };
      }
      const refusal = refusalFor(parked);
      if (refusal) {
        await tx.rollback();
        return { result: refusal, outboxIds: [] };
      }
      // A row that owns its key's claim is the only parked row for that key (a second message with the
      // key was a duplicate, or a collision parked without the claim): its effect runs under its key,
      // once, which FOR UPDATE and replayed_at guard. A row without a key has none to claim. A collision
      // runs only when asked, under a key of its own that it claims here.
      let outboxIds: readonly number[] = [];
      if (isKeyCollision(parked)) {
        if (onCollision === 'refuse') throw new ParkedCollisionError(parked.id, parked.key!);
        const sha256 = payloadHash(parked.payload);
        const key = collisionKey(parked.key!, sha256);
        const claim = readClaim((await tx.execute(claimSql(tables), { ...claimParams(consumer, key, sha256), ...statementBound(config.callTimeoutMs) })).rows);
        // Not claimed: another parked copy of this message was applied under that key already.
        if (claim.claimed) outboxIds = await config.replayEffect(tx, { ...parked, key });
      } else {
        outboxIds = await config.replayEffect(tx, parked);
      }
      await tx.execute(`UPDATE ${tables.parked} SET replayed_at = now() WHERE id = :id`, { id });
      await tx.commit();
      return { result: 'replayed', outboxIds };
    } catch (error) {
      await tx.rollback().catch(() => {});
      throw error;
    }
  }
}

function reader(session: () => InboxSession, tables: InboxTables, consumer: string): ParkedMessageReader {
  return {
    async list(options = {}) {
      const db = session();
      return readParked(
        (sql, params) => db.execute(sql, params),
        tables,
        `SELECT ${PARKED_COLUMNS} FROM ${tables.parked}
          WHERE consumer_name = :consumer
            AND (:includeReplayed OR replayed_at IS NULL)
            AND (:includeRedriven OR redriven_at IS NULL)
            AND (:includeDiscarded OR discarded_at IS NULL)
          ORDER BY parked_at, id LIMIT :limit`,
        {
          consumer,
          includeReplayed: options.includeReplayed ?? false,
          includeRedriven: options.includeRedriven ?? false,
          includeDiscarded: options.includeDiscarded ?? false,
          limit: options.limit ?? 100,
        },
      );
    },
    async show(id) {
      const db = session();
      const [parked] = await readParked(
        (sql, params) => db.execute(sql, params),
        tables,
        `SELECT ${PARKED_COLUMNS} FROM ${tables.parked} WHERE id = :id AND consumer_name = :consumer`,
        { id: checkedId(id), consumer },
      );
      return parked;
    },
  };
}

/**
 * A message parked because another message's effect holds its key: it has a key, and its parking made no
 * claim. Neither a replay nor a redrive applies it under that key.
 */
export function isKeyCollision(parked: ParkedMessage): boolean {
  return parked.key !== null && !parked.ownsClaim;
}

/** The decision taken on a parked message already, as the refusal of another one; undefined while it is parked. */
export function refusalFor(parked: ParkedMessage): Exclude<ParkedRefusal, 'not-found'> | undefined {
  return refusalOf(parked.replayedAt !== null, parked.redrivenAt !== null, parked.discardedAt !== null);
}

function refusalOf(replayed: boolean, redriven: boolean, discarded: boolean): Exclude<ParkedRefusal, 'not-found'> | undefined {
  if (replayed) return 'already-replayed';
  if (redriven) return 'already-redriven';
  if (discarded) return 'already-discarded';
  return undefined;
}

/** Ids go into an array literal: only safe integers. */
function checkedId(id: number): number {
  if (!Number.isSafeInteger(id)) throw new TypeError(`a parked message id is a whole number; got ${String(id)}`);
  return id;
}

/** A `bigint[]` parameter: the Data API binds no arrays, so it travels as PostgreSQL's array literal. */
export function idArray(ids: readonly number[]): string {
  return `{${ids.map(checkedId).join(',')}}`;
}
