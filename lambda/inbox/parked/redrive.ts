import type { Transaction } from '../transport/transaction.js';
import { retryConflicts } from '../transport/conflicts.js';
import type { InboxSession } from '../transport/session.js';
import { sessionOf } from '../transport/transport.js';
import type { InboxTransport } from '../transport/transport.js';
import { InboxConfigError } from '../errors.js';
import { IDEMPOTENCY_KEY_ATTRIBUTE } from '../prepare/keys.js';
import { described } from '../handler/option-checks.js';
import { outboxKey } from '../outbox/outbox-message.js';
import { relayRows } from '../outbox/relay.js';
import { SQS_TEXT_RULE, sqsRefusal } from '../outbox/sqs-text.js';
import { MAX_SQS_MESSAGE_BYTES, sqsMessageBytes, stringAttributes } from '../producer/sqs-limits.js';
import { sqsOutbox } from '../outbox/sqs-outbox.js';
import type { OutboxTransport } from '../outbox/relay.js';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { PARKED_COLUMNS, readParked } from './parked-rows.js';
import { idArray, isKeyCollision, refusalFor } from './store.js';
import type { ParkedMessage } from './store.js';
import { inboxTables } from '../sql/schema.js';
import type { InboxTables } from '../sql/schema.js';
import { FIFO_ID_PATTERN } from '../contract.js';

/** Options of {@link redriveParked}. */
export interface RedriveOptions {
  /** The transport to run on (`dataApi({...})`, `postgres(pool)`, `dsql({...})`). */
  readonly session: InboxTransport;
  /** The consumer whose parked messages these are: the `consumer` given to `inbox()`. */
  readonly consumer: string;
  /** The SQS client the redriven messages are sent with, after the commits: `new SQSClient({})` from `@aws-sdk/client-sqs`. */
  readonly client: SQSClient;
  /**
   * The queue to send every message to. Needed for messages parked before their record's `eventSourceARN`
   * was stored; else each goes back to the queue its ARN names.
   * @default the queue of each message's eventSourceARN
   */
  readonly queueUrl?: string | undefined;
  /** The inbox's schema. @default 'inbox' */
  readonly schema?: string | undefined;
  /** The time, for the FIFO deduplication window. @default Date.now */
  readonly now?: (() => number) | undefined;
}

/** Why a message was not redriven, when the message itself stands in the way. */
export type RedriveRefusal =
  /** Parked by a Kinesis, DynamoDB Streams or Kafka consumer: there is no queue to send it back to. */
  | 'stream-record'
  /** Its source queue is unknown (parked before the ARN was stored) or not an SQS queue ARN. */
  | 'no-queue'
  /** It collided with another message under its key and owns no claim: back on the queue it collides again. */
  | 'key-collision'
  /** SQS would refuse it as it is: an empty body, a key or attribute SQS cannot carry, more than 1 MiB with them, a FIFO queue without a group. */
  | 'unsendable'
  /** A FIFO queue would drop it as a duplicate of its own first send, which is under 5 minutes old. */
  | 'deduplication-window'
  /** Its key was claimed again (its claim was purged, and another delivery of the key took effect). */
  | 'claimed-again';

/** How the redrive of one message came out. */
export interface RedriveResult {
  /** The parked row's id, as given. */
  readonly id: number;
  /**
   * `redriven`: committed, with its outbox row (`sent` says whether it is on the queue yet); `not-found`
   * or `already-...` (a decision was taken on it already); `refused` (see `refusal`); `failed`: the Data
   * API call failed (see `message`).
   */
  readonly status: 'redriven' | 'not-found' | 'already-replayed' | 'already-redriven' | 'already-discarded' | 'refused' | 'failed';
  /**
   * Why it was refused, when `status` is `refused`: `stream-record` (parked by a stream consumer: no queue
   * to send it back to), `no-queue` (its source queue is unknown or not an SQS queue ARN), `key-collision`
   * (it collided under its key and owns no claim), `unsendable` (SQS would refuse it as it is),
   * `deduplication-window` (a FIFO queue would drop it as a duplicate of its first send, under 5 minutes
   * old) or `claimed-again` (its key's claim was purged and another delivery took effect).
   */
  readonly refusal?: 'stream-record' | 'no-queue' | 'key-collision' | 'unsendable' | 'deduplication-window' | 'claimed-again' | undefined;
  /** What went wrong, and the fix: for `refused`, `failed`, and a `redriven` message not sent yet. */
  readonly message?: string | undefined;
  /** The queue it was sent back to. */
  readonly queueUrl?: string | undefined;
  /** The idempotency key it carries (the `idempotency-key` attribute; on FIFO, the MessageDeduplicationId). */
  readonly key?: string | undefined;
  /** Its outbox row's id. */
  readonly outboxId?: number | undefined;
  /** True once SQS took it; false leaves the outbox row for `sweepOutbox`. */
  readonly sent?: boolean | undefined;
}

/** The outbox row a redrive writes, or why the message cannot be redriven. */
type Plan =
  | { readonly refusal: RedriveRefusal; readonly message: string }
  | {
      readonly refusal?: undefined;
      readonly queueUrl: string;
      readonly key: string;
      readonly messageKey: string;
      readonly body: string;
      readonly groupId: string | null;
      readonly attributes: Readonly<Record<string, string>>;
    };

const MAX_ATTRIBUTES = 9;
/** SQS's FIFO deduplication interval, plus a minute for the clocks of this machine and SQS to disagree. */
const DEDUPLICATION_WINDOW_MS = 5 * 60_000 + 60_000;
/** An SQS queue's ARN; a queue name is at most 80 letters, digits, hyphens and underscores, `.fifo` included. */
const ARN = /^arn:(aws|aws-cn|aws-us-gov):sqs:([a-z]{2}(?:-[a-z]+)+-\d+):(\d{12}):([A-Za-z0-9_-]{1,80}|[A-Za-z0-9_-]{1,75}\.fifo)$/;

/**
 * The URL of the SQS queue an ARN names: `arn:aws:sqs:<region>:<account>:<name>` is
 * `https://sqs.<region>.amazonaws.com/<account>/<name>` (`.amazonaws.com.cn` in China); undefined when the
 * ARN is not an SQS queue's.
 *
 * @example
 * queueUrlFromArn('arn:aws:sqs:eu-west-1:123456789012:orders.fifo'); // 'https://sqs.eu-west-1.amazonaws.com/123456789012/orders.fifo'
 */
export function queueUrlFromArn(arn: string): string | undefined {
  const match = typeof arn === 'string' ? ARN.exec(arn) : null;
  if (!match) return undefined;
  const [, partition, region, account, name] = match;
  return `https://sqs.${region}.amazonaws.com${partition === 'aws-cn' ? '.cn' : ''}/${account}/${name}`;
}

/**
 * Sends parked SQS messages back to their queue, each through the outbox. Per message, ONE transaction
 * locks its parked row, refuses it if a decision was taken on it already (replayed, redriven, discarded),
 * releases the claim its parking made (so the message takes effect when it comes back), marks it redriven
 * and writes an outbox row: the original body, message attributes and FIFO group, under its ORIGINAL
 * idempotency key (the `idempotency-key` attribute; on FIFO, the MessageDeduplicationId), so a second
 * send is a duplicate for the consumer's inbox. After the commits the rows are sent; a row whose send
 * fails stays for `sweepOutbox`. Messages go in id order, so a FIFO group gets them in the order they
 * were parked (after whatever the group received since).
 *
 * Never throws for one message: each gets a {@link RedriveResult}. Throws InboxConfigError for bad options.
 *
 * The consumer must take the `idempotency-key` attribute as its key (the default, `key: 'auto'`) or derive
 * its key from the body or from an attribute it set itself: with `key: 'message-id'` the message comes
 * back under a new MessageId, hence a new key.
 *
 * @example
 * import { SQSClient } from '@aws-sdk/client-sqs';
 * import { dataApi } from 'sqs-inbox';
 * import { redriveParked } from 'sqs-inbox/operations';
 * const session = dataApi({ resourceArn, secretArn });
 * const results = await redriveParked({ session, consumer: 'order-worker', client: new SQSClient({}) }, [7, 8]);
 * // [{ id: 7, status: 'redriven', queueUrl: 'https://sqs.eu-west-1.amazonaws.com/123456789012/orders.fifo', sent: true, ... }, ...]
 */
export async function redriveParked(given: RedriveOptions, ids: readonly number[]): Promise<RedriveResult[]> {
  const tables = inboxTables(given.schema ?? 'inbox');
  checkOptions(given);
  const options: SessionRedriveOptions = { ...given, session: sessionOf(given.session, 'session'), transport: sqsOutbox({ client: given.client }).transport };
  const redrive: Redrive = { options, tables, now: options.now ?? Date.now };
  const unique = [...new Set(ids.map(checkId))].sort((a, b) => a - b);
  const results = new Map<number, RedriveResult>();
  for (const id of unique) results.set(id, await redriveOne(redrive, id));
  await relay(options, tables, results);
  return ids.map((id) => results.get(id)!);
}

/** The options with the session opened on the transport they gave, and the outbox's SQS transport on their client. */
type SessionRedriveOptions = Omit<RedriveOptions, 'session'> & { readonly session: InboxSession; readonly transport: OutboxTransport };

/** One call of redriveParked: its options, the tables they name, and its clock. */
interface Redrive {
  readonly options: SessionRedriveOptions;
  readonly tables: InboxTables;
  readonly now: () => number;
}

/** One message redriven, or why not; a failure is its result, never thrown. */
async function redriveOne(redrive: Redrive, id: number): Promise<RedriveResult> {
  const state = { committing: false };
  try {
    // A conflict (Aurora DSQL at COMMIT, or a racing redrive under repeatable read) rolled it back for
    // certain: the session's dialect runs it again, and counts it, as it does a record's transaction.
    return await retryConflicts(redrive.options.session, () => redriveTransaction(redrive, id, state));
  } catch (error) {
    const text = error instanceof Error ? error.message : String(error);
    return {
      id,
      status: 'failed',
      message: state.committing ? `${text}; the commit may have happened all the same: look at the message before trying again` : text,
    };
  }
}

/** The redrive's transaction: rolled back and thrown on failure; `state.committing` once its COMMIT is sent. */
async function redriveTransaction({ options, tables, now }: Redrive, id: number, state: { committing: boolean }): Promise<RedriveResult> {
  const { session, consumer } = options;
  let tx: Transaction | undefined;
  state.committing = false;
  const refuse = async (result: RedriveResult) => {
    await tx!.rollback();
    return result;
  };
  try {
    tx = await session.transaction();
    // The row lock makes two redrives (or a redrive and a replay or discard) of one message take turns:
    // the second sees the first's decision and refuses.
    const [parked] = await readParked(
      (sql, params) => tx!.execute(sql, params),
      tables,
      `SELECT ${PARKED_COLUMNS} FROM ${tables.parked} WHERE id = :id AND consumer_name = :consumer FOR UPDATE`,
      { id, consumer },
    );
    if (!parked) return await refuse({ id, status: 'not-found' });
    const taken = refusalFor(parked);
    if (taken) return await refuse({ id, status: taken });
    const plan = planRedrive(parked, consumer, options.queueUrl, now());
    if (plan.refusal) return await refuse({ id, status: 'refused', refusal: plan.refusal, message: plan.message });
    if (parked.ownsClaim) {
      // Only the claim its parking made (same statement, so the same now()): a claim made later, after a
      // purge, belongs to a delivery that took effect, and must stay.
      const released = await tx.execute(
        `WITH released AS (
           DELETE FROM ${tables.consumed} c USING ${tables.parked} p
            WHERE p.id = :id AND c.consumer_name = p.consumer_name AND c.message_id = p.message_key AND c.processed_at = p.parked_at
           RETURNING c.message_id)
         SELECT (SELECT count(*) FROM released)::int AS released,
                (SELECT processed_at FROM ${tables.consumed} WHERE consumer_name = :consumer AND message_id = :key) AS claimed_at`,
        { id, consumer, key: parked.key },
      );
      const row = released.rows[0]!;
      if (row.released === 0 && row.claimed_at != null) {
        return await refuse({
          id,
          status: 'refused',
          refusal: 'claimed-again',
          message: `its key "${parked.key}" was claimed again at ${(row.claimed_at as Date).toISOString()}, after its parking claim was purged: a delivery of that key took effect, so a redrive would be a duplicate; discard it`,
        });
      }
    }
    await tx.execute(`UPDATE ${tables.parked} SET redriven_at = now(), redriven_to = :queueUrl WHERE id = :id`, { id, queueUrl: plan.queueUrl });
    // Its own consumer_name, so that redrives of two parked rows with one key (a message parked again
    // after a redrive) never meet on the outbox's unique (consumer_name, idempotency_key).
    const inserted = await tx.execute(
      `INSERT INTO ${tables.outbox} (consumer_name, message_key, position, idempotency_key, destination, body, group_id, attributes)
       VALUES (:outboxConsumer, :messageKey, 0, :key, :queueUrl, :body, :groupId, :attributes::jsonb)
       RETURNING id`,
      {
        outboxConsumer: `${consumer}:redrive:${id}`,
        messageKey: plan.messageKey,
        key: plan.key,
        queueUrl: plan.queueUrl,
        body: plan.body,
        groupId: plan.groupId,
        attributes: JSON.stringify(plan.attributes),
      },
    );
    state.committing = true;
    await tx.commit();
    return { id, status: 'redriven', queueUrl: plan.queueUrl, key: plan.key, outboxId: Number(inserted.rows[0]!.id), sent: false };
  } catch (error) {
    await tx?.rollback().catch(() => {});
    throw error;
  }
}

/** Sends the committed rows, and records in each result whether it went out. */
async function relay(options: SessionRedriveOptions, tables: InboxTables, results: Map<number, RedriveResult>): Promise<void> {
  const redriven = [...results.values()].filter((result) => result.outboxId !== undefined);
  if (redriven.length === 0) return;
  const ids = redriven.map((result) => result.outboxId!);
  let rows: Record<string, unknown>[];
  try {
    await relayRows(options.session, tables, options.transport, ids);
    rows = (await options.session.execute(`SELECT id, sent_at, last_error FROM ${tables.outbox} WHERE id = ANY(:ids::bigint[])`, { ids: idArray(ids) })).rows;
  } catch (error) {
    const text = error instanceof Error ? error.message : String(error);
    for (const result of redriven) results.set(result.id, { ...result, message: `not sent yet (${text}); sweepOutbox sends it` });
    return;
  }
  const byId = new Map(rows.map((row) => [Number(row.id), row]));
  for (const result of redriven) {
    const row = byId.get(result.outboxId!);
    const sent = row !== undefined && row.sent_at !== null;
    const why = row?.last_error ? `the send failed: ${String(row.last_error)}` : 'it waits behind an older unsent message of its FIFO group';
    results.set(result.id, { ...result, sent, ...(sent ? {} : { message: `not sent yet (${why}); sweepOutbox sends it` }) });
  }
}

/** What the outbox row of a redrive holds, or why the message cannot go back to a queue. Pure. */
export function planRedrive(parked: ParkedMessage, consumer: string, queueUrlOption: string | undefined, nowMs: number): Plan {
  const { attributes } = parked;
  if (attributes.record !== undefined || (attributes.attributes === undefined && attributes.messageAttributes === undefined)) {
    return {
      refusal: 'stream-record',
      message:
        'it was parked by a stream consumer (Kinesis, DynamoDB Streams or Kafka), which has no queue to send it back to: replay it (parkedMessages(handler).replay) once its cause is fixed, or discard it',
    };
  }
  if (isKeyCollision(parked)) {
    return {
      refusal: 'key-collision',
      message: `it collided with another message under key "${parked.key}" and owns no claim: back on its queue it would collide again; discard it, or, if both must take effect, replay it with parkedMessages(handler).replay(id, { collision: 'apply-under-new-key' })`,
    };
  }
  let queueUrl = queueUrlOption;
  if (queueUrl === undefined) {
    const arn = attributes.eventSourceARN;
    if (arn === undefined) {
      return {
        refusal: 'no-queue',
        message: "its source queue is unknown (it was parked before the record's eventSourceARN was stored): give the queue URL (--queue-url)",
      };
    }
    queueUrl = queueUrlFromArn(arn);
    if (queueUrl === undefined)
      return { refusal: 'no-queue', message: `its eventSourceARN "${arn}" is not an SQS queue ARN: give the queue URL (--queue-url)` };
  }
  const unsendable = (why: string): Plan => ({ refusal: 'unsendable', message: `SQS would refuse it: ${why}` });
  const key = parked.key ?? outboxKey(consumer, `parked:${parked.id}`, 0);
  if (!FIFO_ID_PATTERN.test(key)) {
    return unsendable(
      `its key ${JSON.stringify(key)} is not 1 to 128 ASCII letters, digits or punctuation, so it cannot travel as the idempotency-key attribute; replay it instead`,
    );
  }
  if (parked.body.length === 0) return unsendable('its body is empty; discard it');
  const inBody = sqsRefusal(parked.body);
  if (inBody) return unsendable(`its body holds ${inBody} (${SQS_TEXT_RULE}); replay it instead`);
  const carried: Record<string, string> = {};
  for (const [name, value] of Object.entries(attributes.messageAttributes ?? {})) {
    if (name === IDEMPOTENCY_KEY_ATTRIBUTE) continue;
    const { dataType, stringValue } = (value ?? {}) as { dataType?: unknown; stringValue?: unknown };
    // The outbox sends String attributes; a Number's text travels unchanged, as a String.
    if (typeof stringValue !== 'string' || typeof dataType !== 'string' || !/^(String|Number)(\.|$)/.test(dataType)) {
      return unsendable(
        `its message attribute "${name}" is ${typeof dataType === 'string' ? dataType : 'not a string'}; the outbox carries String and Number attributes only; replay it instead`,
      );
    }
    const inValue = sqsRefusal(stringValue);
    if (inValue) return unsendable(`its message attribute "${name}" holds ${inValue} (${SQS_TEXT_RULE}); replay it instead`);
    carried[name] = stringValue;
  }
  if (Object.keys(carried).length > MAX_ATTRIBUTES) {
    return unsendable(`it has ${Object.keys(carried).length} message attributes besides its key; SQS takes ${MAX_ATTRIBUTES + 1} with the key`);
  }
  // SQS counts the attributes with the body: one delivered at the limit is over it once the key attribute is added.
  const bytes = sqsMessageBytes(parked.body, stringAttributes({ ...carried, [IDEMPOTENCY_KEY_ATTRIBUTE]: key }));
  if (bytes > MAX_SQS_MESSAGE_BYTES) {
    return unsendable(
      `it is ${bytes} bytes with its message attributes and its key attribute, over SQS's limit of ${MAX_SQS_MESSAGE_BYTES}; replay it instead`,
    );
  }
  const sqsAttributes = attributes.attributes ?? {};
  const groupId = sqsAttributes.MessageGroupId ?? null;
  const fifo = queueUrl.endsWith('.fifo');
  if (fifo && groupId === null) return unsendable(`${queueUrl} is a FIFO queue and the message has no MessageGroupId; give a standard queue (--queue-url)`);
  if (fifo) {
    // The outbox sends under the key as MessageDeduplicationId: within 5 minutes of a send under the same
    // id (its original send, if the producer used the key as we do) SQS accepts it and delivers nothing.
    const sentAt = Number(sqsAttributes.SentTimestamp);
    const originalId = sqsAttributes.MessageDeduplicationId;
    if ((originalId === undefined || originalId === key) && Number.isFinite(sentAt) && nowMs < sentAt + DEDUPLICATION_WINDOW_MS) {
      return {
        refusal: 'deduplication-window',
        message: `${queueUrl} would drop it as a duplicate: it was sent at ${new Date(sentAt).toISOString()} with deduplication id "${key}", which the queue remembers for 5 minutes; redrive it after ${new Date(sentAt + DEDUPLICATION_WINDOW_MS).toISOString()}`,
      };
    }
  }
  return { queueUrl, key, messageKey: parked.key ?? `parked:${parked.id}`, body: parked.body, groupId, attributes: carried };
}

function checkOptions(options: RedriveOptions): void {
  if (typeof options.consumer !== 'string' || options.consumer.length === 0) {
    throw new InboxConfigError('consumer', `must be the consumer's name, as given to inbox({ consumer }); got ${described(options.consumer)}`);
  }
  if (typeof (options.client as Partial<SQSClient> | undefined)?.send !== 'function') {
    throw new InboxConfigError(
      'client',
      `must be an SQS client to send the redriven messages with, e.g. new SQSClient({}) from @aws-sdk/client-sqs; got ${described(options.client)}`,
    );
  }
  if (options.queueUrl !== undefined && (typeof options.queueUrl !== 'string' || !/^https?:\/\/[^/]+\/\d+\/[^/]+$/.test(options.queueUrl))) {
    throw new InboxConfigError('queueUrl', `must be a queue URL, https://sqs.<region>.amazonaws.com/<account>/<name>; got ${described(options.queueUrl)}`);
  }
}

function checkId(id: number): number {
  if (!Number.isSafeInteger(id) || id < 1) throw new InboxConfigError('ids', `must be parked message ids (positive whole numbers); got ${described(id)}`);
  return id;
}
