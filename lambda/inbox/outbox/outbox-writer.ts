import { FIFO_ID_PATTERN } from '../contract.js';
import type { Transaction } from '../transport/transaction.js';
import { InboxConfigError, PermanentError } from '../errors.js';
import { IDEMPOTENCY_KEY_ATTRIBUTE } from '../prepare/keys.js';
import { MAX_SQS_MESSAGE_BYTES, SQS_ATTRIBUTE_NAME, sqsMessageBytes, stringAttributes } from '../producer/sqs-limits.js';
import { destinationUrl, outboxKey } from './outbox-message.js';
import type { OutboxSend } from './outbox-message.js';
import type { OutboxConfig, TransactionOutbox } from './transaction-outbox.js';
import { SQS_TEXT_RULE, sqsRefusal } from './sqs-text.js';

const MAX_ATTRIBUTES = 9;

/** One row to insert, as the flush's JSON parameter carries it. */
interface PendingRow {
  readonly message_key: string;
  readonly position: number;
  readonly idempotency_key: string;
  readonly destination: string;
  readonly body: string;
  readonly group_id: string | null;
  readonly attributes: Readonly<Record<string, string>>;
  readonly delay_seconds: number | null;
}

/**
 * The outbox of one transaction: `tx.send` checks each message and keeps it; {@link flush} writes them all
 * in ONE statement just before the commit, so that they commit (or roll back) with the claim and the
 * effect, at one Data API call per transaction however many messages it sends.
 */
export class OutboxWriter implements TransactionOutbox {
  private readonly pending: PendingRow[] = [];
  private readonly positions = new Map<string, number>();

  constructor(
    private readonly config: OutboxConfig,
    /** The message a send belongs to when it names none: the transaction's only message. */
    private readonly only: { readonly key: string } | undefined,
  ) {}

  /** Keeps one message to send after the commit. Throws, with the fix, when it could never be sent. */
  send(message: OutboxSend, from?: { readonly key: string }): void {
    const source = from ?? this.only;
    if (source === undefined || typeof source.key !== 'string') {
      throw new InboxConfigError(
        'tx.send',
        'in applyBatch, name the message the send belongs to: tx.send({ to, body }, message), so that its key stays stable',
      );
    }
    if (message === null || typeof message !== 'object') throw new InboxConfigError('tx.send', 'pass { to, body, groupId?, attributes?, delaySeconds? }');
    const destination = destinationUrl(message.to, this.config.destinations);
    const body =
      typeof message.body === 'string' ? message.body : message.body !== null && typeof message.body === 'object' ? JSON.stringify(message.body) : undefined;
    if (body === undefined || body.length === 0) throw new InboxConfigError('tx.send.body', 'must be a non-empty string or a JSON-serialisable object');
    if (destination.endsWith('.fifo') && (typeof message.groupId !== 'string' || message.groupId.length === 0)) {
      throw new InboxConfigError('tx.send.groupId', `is required: ${destination} is a FIFO queue`);
    }
    const attributes = message.attributes ?? {};
    if (Object.keys(attributes).length > MAX_ATTRIBUTES || Object.values(attributes).some((value) => typeof value !== 'string')) {
      throw new InboxConfigError('tx.send.attributes', `must be at most ${MAX_ATTRIBUTES} String attributes (the idempotency key takes the tenth)`);
    }
    for (const name of Object.keys(attributes)) refuseAttributeName(name);
    const delay = message.delaySeconds;
    if (delay !== undefined && (!Number.isInteger(delay) || delay < 0 || delay > 900 || destination.endsWith('.fifo'))) {
      throw new InboxConfigError(
        'tx.send.delaySeconds',
        'must be a whole number of seconds from 0 to 900, on a standard queue (FIFO queues take no per-message delay)',
      );
    }
    refuseUnsendable('tx.send.body', body);
    refuseUnsendable('tx.send.groupId', String(message.groupId ?? ''));
    if (message.groupId !== undefined && !FIFO_ID_PATTERN.test(message.groupId)) {
      const { length } = message.groupId;
      const fault = length === 0 || length > 128 ? `is ${length} characters long` : 'holds a character other than an ASCII letter, digit or punctuation';
      throw new PermanentError(`tx.send.groupId ${fault}, which SQS refuses in a MessageGroupId (1 to 128 of those): this message can never be sent`);
    }
    for (const [name, value] of Object.entries(attributes)) {
      refuseUnsendable(`tx.send.attributes["${name}"]`, value);
      if (value.length === 0) throw new PermanentError(`tx.send.attributes["${name}"] is empty, which SQS refuses: this message can never be sent`);
    }
    const position = this.positions.get(source.key) ?? 0;
    const key = outboxKey(this.config.consumer, source.key, position);
    // As SQS counts it: with the idempotency-key attribute the relay adds.
    const bytes = sqsMessageBytes(body, stringAttributes({ ...attributes, [IDEMPOTENCY_KEY_ATTRIBUTE]: key }));
    if (bytes > MAX_SQS_MESSAGE_BYTES) {
      throw new PermanentError(
        `tx.send: the message is ${bytes} bytes with its attributes and its idempotency key, over SQS's limit of ${MAX_SQS_MESSAGE_BYTES}: it can never be sent. ` +
          'Fix: store the payload elsewhere (for example S3) and send a reference',
      );
    }
    this.positions.set(source.key, position + 1);
    this.pending.push({
      message_key: source.key,
      position,
      idempotency_key: key,
      destination,
      body,
      group_id: message.groupId ?? null,
      attributes,
      delay_seconds: delay ?? null,
    });
  }

  /**
   * Writes the kept messages inside `tx`, in send order, and returns their row ids (none when nothing was
   * sent). A row whose key is there already (the same send, recorded before) is not written twice.
   */
  async flush(tx: Transaction): Promise<number[]> {
    if (this.pending.length === 0) return [];
    const { rows } = await tx.execute(
      `INSERT INTO ${this.config.tables.outbox}
         (consumer_name, message_key, position, idempotency_key, destination, body, group_id, attributes, delay_seconds)
       SELECT :consumer, r.message_key, r.position, r.idempotency_key, r.destination, r.body, r.group_id, coalesce(r.attributes, '{}'::jsonb), r.delay_seconds
         FROM jsonb_to_recordset(:rows::jsonb)
           AS r(seq int, message_key text, position int, idempotency_key text, destination text, body text, group_id text, attributes jsonb, delay_seconds int)
        ORDER BY r.seq
       ON CONFLICT (consumer_name, idempotency_key) DO NOTHING
       RETURNING id`,
      // The ids follow send order, which the relay keeps for a FIFO group.
      { consumer: this.config.consumer, rows: this.pending.map((row, seq) => ({ seq, ...row })) },
    );
    return rows.map((row) => Number(row.id)).sort((a, b) => a - b);
  }
}

/**
 * Refuses an attribute name SQS would refuse, or the one the outbox sets itself: a name is the code's, not
 * the message's, so the record fails and comes back until the code is fixed.
 */
function refuseAttributeName(name: string): void {
  if (name === IDEMPOTENCY_KEY_ATTRIBUTE) {
    throw new InboxConfigError(
      `tx.send.attributes["${name}"]`,
      'is the key the outbox sends each message under, which it sets itself: name your attribute otherwise',
    );
  }
  if (!SQS_ATTRIBUTE_NAME.test(name)) {
    throw new InboxConfigError(
      `tx.send.attributes["${name}"]`,
      'is no message attribute name SQS takes: use 1 to 256 letters, digits, _, - and ., not beginning with AWS. or Amazon., nor beginning or ending with a period, nor holding two in a row',
    );
  }
}

/**
 * Refuses text SQS would refuse. It comes from the message being applied, most likely, so the same message
 * always fails: it fails as permanent (and parks), instead of leaving a row no relay can ever send.
 */
function refuseUnsendable(where: string, text: string): void {
  const refused = sqsRefusal(text);
  if (refused) throw new PermanentError(`${where} holds ${refused}, which SQS refuses (${SQS_TEXT_RULE}): this message can never be sent`);
}
