import type * as ClientSqs from '@aws-sdk/client-sqs';
import type { Message, MessageAttributeValue, SQSClient } from '@aws-sdk/client-sqs';
import { InboxConfigError } from '../inbox/errors.js';
import { described } from '../inbox/handler/option-checks.js';
import { PeerDependencyError, importPeer } from '../inbox/peers.js';
import { IDEMPOTENCY_KEY_ATTRIBUTE, REDRIVEN_MESSAGE_ID_ATTRIBUTE, hex, payloadHash } from '../inbox/prepare/keys.js';
import { MAX_SQS_MESSAGE_BYTES, sqsMessageBytes } from '../inbox/producer/sqs-limits.js';
import { inboxTables } from '../inbox/sql/schema.js';
import { sessionOf } from '../inbox/transport/transport.js';
import type { InboxTransport } from '../inbox/transport/transport.js';

/** Options of {@link redriveDeadLetters}. */
export interface DeadLetterRedriveOptions {
  /** The SQS client to receive, send and delete with: `new SQSClient({})` from `@aws-sdk/client-sqs`. */
  readonly client: SQSClient;
  /** The dead-letter queue's URL. */
  readonly deadLetterQueueUrl: string;
  /**
   * The queue to send every message to.
   * @default each message's source queue: its `DeadLetterQueueSourceArn`, else the one queue the dead-letter
   * queue's RedriveAllowPolicy (`byQueue`) names; a message whose source is unknown is left, as failed
   */
  readonly destinationQueueUrl?: string | undefined;
  /**
   * The consumer of the destination queue, with `session` and `destinationQueueUrl`: a message whose key it
   * claimed already, for the same body, took effect before it was dead-lettered, and is deleted without being
   * sent (`skipped`).
   * @default none: every message is sent, and the consumer's inbox finds the committed ones duplicates
   */
  readonly consumer?: string | undefined;
  /** The transport `consumer`'s claims are read on (`dataApi({...})`, `postgres(pool)`, `dsql({...})`). */
  readonly session?: InboxTransport | undefined;
  /** The inbox's schema. @default 'inbox' */
  readonly schema?: string | undefined;
  /**
   * Receive and report, but send and delete nothing. Each message received stays hidden for
   * `visibilityTimeoutSeconds`; on a FIFO queue a group stays locked as long, so a dry run sees at most the
   * first 10 messages of each group. @default false
   */
  readonly dryRun?: boolean | undefined;
  /** At most this many messages. @default no limit: until a receive finds the queue empty */
  readonly max?: number | undefined;
  /** How long a received message stays hidden while it is moved. @default 60 */
  readonly visibilityTimeoutSeconds?: number | undefined;
  /**
   * Each receive's long poll, 0 to 20 seconds. Not 0 on AWS: a short poll samples some of SQS's servers and
   * may find none of the messages there, which would end the run early.
   * @default 2
   */
  readonly waitTimeSeconds?: number | undefined;
}

/** The counts of a redrive, and each message's outcome in the order received. */
export interface DeadLetterRedriveReport {
  /** Messages sent to their destination, then deleted from the dead-letter queue. */
  readonly moved: number;
  /** Messages whose key was claimed already for the same body: deleted without a send. */
  readonly skipped: number;
  /** Messages left on the dead-letter queue; each outcome's `reason` says why. */
  readonly failed: number;
  /** What became of each dead-lettered message. */
  readonly outcomes: readonly {
    /** Its messageId in the dead-letter queue: the id SQS gave it when it was sent, which a move to a DLQ keeps. */
    readonly messageId: string;
    /**
     * `moved`: sent to `destination`, then deleted from the dead-letter queue; `skipped`: its key was claimed
     * already for this body, so it was deleted without a send; `failed`: left on the dead-letter queue (see
     * `reason`). A dry run says `would-move` and `would-skip`.
     */
    readonly status: 'moved' | 'skipped' | 'failed' | 'would-move' | 'would-skip';
    /** The messageId it carries as `sqs-inbox-redriven-message-id`: the id its first send got. */
    readonly originalMessageId: string;
    /** Where it went, or would go. */
    readonly destination?: string | undefined;
    /** Its FIFO message group. */
    readonly groupId?: string | undefined;
    /** Why it failed, and the fix; or, for a moved message still on the dead-letter queue, what that means. */
    readonly reason?: string | undefined;
  }[];
}

/** What became of one dead-lettered message, as {@link DeadLetterRedriveReport} writes it out. */
export type DeadLetterOutcome = DeadLetterRedriveReport['outcomes'][number];

/** SQS takes at most 10 message attributes; the stamp is one. */
const MAX_ATTRIBUTES = 10;
const QUEUE_URL = /^https?:\/\/[^/]+\/\d+\/[^/]+$/;
const SQS_ARN = /^arn:[\w-]+:sqs:[a-z0-9-]+:(\d{12}):([A-Za-z0-9_.-]{1,80})$/;

/** Reads the claim a dead-lettered message's key holds, to tell a committed effect from one that never ran. */
const CLAIM_HASH_SQL = (table: string) => `SELECT payload_sha256 FROM ${table} WHERE consumer_name = :consumer AND message_id = :key`;

/**
 * Moves messages from a dead-letter queue back to their source queue so that an inbox consumer applies each
 * one at most once: each is sent stamped with the `sqs-inbox-redriven-message-id` attribute, the messageId its first
 * send got (which SQS keeps when it dead-letters a message), so that `key: 'message-id'` and `key: 'auto'`
 * claim it under the key they claimed it under before. SQS's own redrive (the console's, StartMessageMoveTask)
 * gives every message a new messageId instead: a message whose effect committed, but whose answer was lost
 * on every receive, then takes effect a second time.
 *
 * Keeps the body, the message attributes, the group id and, per FIFO group, the order. On a FIFO queue the
 * deduplication id is `dlq-redrive:` and the SHA-256 of the dead-lettered messageId and the body, so that a run resumed within 5 minutes
 * of a send that was not followed by its delete sends nothing twice. A message is deleted from the
 * dead-letter queue only after its send succeeded; a crash between the two leaves it there, and a later run
 * sends it again: a duplicate the inbox absorbs. Once a message of a FIFO group fails, the group's later
 * messages stay too, in order.
 *
 * Never throws for one message: each gets an outcome in the report. Throws InboxConfigError for bad
 * options, and the SDK's error when the dead-letter queue cannot be read.
 *
 * @example
 * import { SQSClient } from '@aws-sdk/client-sqs';
 * import { redriveDeadLetters } from 'sqs-inbox/operations';
 * const report = await redriveDeadLetters({ client: new SQSClient({}), deadLetterQueueUrl: 'https://sqs.eu-west-1.amazonaws.com/123456789012/orders-dlq' });
 * // { moved: 12, skipped: 0, failed: 0, outcomes: [...] }
 */
export async function redriveDeadLetters(options: DeadLetterRedriveOptions): Promise<DeadLetterRedriveReport> {
  checkOptions(options);
  const sqs = await clientSqs();
  const destinations = await destinationResolver(sqs, options);
  const committed = claimReader(options);
  const outcomes: DeadLetterOutcome[] = [];
  const blockedGroups = new Set<string>();
  const seen = new Set<string>();
  const max = options.max ?? Number.POSITIVE_INFINITY;
  while (outcomes.length < max) {
    const received = await receive(sqs, options, Math.min(10, max - outcomes.length));
    const fresh = received.filter((message) => !seen.has(message.MessageId!));
    if (fresh.length === 0) break;
    for (const message of fresh) {
      seen.add(message.MessageId!);
      outcomes.push(await redriveOne(sqs, options, message, { destinations, committed, blockedGroups }));
    }
  }
  const count = (...statuses: DeadLetterOutcome['status'][]) => outcomes.filter((outcome) => statuses.includes(outcome.status)).length;
  return { moved: count('moved', 'would-move'), skipped: count('skipped', 'would-skip'), failed: count('failed'), outcomes };
}

interface RunState {
  readonly destinations: (message: Message) => Promise<string | { readonly unknown: string }>;
  readonly committed: (key: string, body: string) => Promise<boolean>;
  readonly blockedGroups: Set<string>;
}

/** One message: skipped, sent then deleted, or left with its reason. */
async function redriveOne(sqs: typeof ClientSqs, options: DeadLetterRedriveOptions, message: Message, run: RunState): Promise<DeadLetterOutcome> {
  const messageId = message.MessageId!;
  const stamped = message.MessageAttributes?.[REDRIVEN_MESSAGE_ID_ATTRIBUTE]?.StringValue;
  const originalMessageId = stamped ?? messageId;
  const groupId = message.Attributes?.MessageGroupId;
  const base = { messageId, originalMessageId, ...(groupId === undefined ? {} : { groupId }) };
  const fail = (reason: string): DeadLetterOutcome => {
    if (groupId !== undefined) run.blockedGroups.add(groupId);
    return { ...base, status: 'failed', reason };
  };
  if (groupId !== undefined && run.blockedGroups.has(groupId)) {
    return { ...base, status: 'failed', reason: `an earlier message of group "${groupId}" failed: it stays behind it, in order, for the next run` };
  }
  try {
    const body = message.Body ?? '';
    // The key 'auto' claims under; the claim's hash must be this body's too, or the claim is another message's.
    const key = message.MessageAttributes?.[IDEMPOTENCY_KEY_ATTRIBUTE]?.StringValue ?? originalMessageId;
    if (await run.committed(key, body)) {
      if (options.dryRun) return { ...base, status: 'would-skip' };
      await deleteMessage(sqs, options, message);
      return { ...base, status: 'skipped' };
    }
    const destination = await run.destinations(message);
    if (typeof destination !== 'string') return fail(destination.unknown);
    const attributes = { ...message.MessageAttributes, [REDRIVEN_MESSAGE_ID_ATTRIBUTE]: { DataType: 'String', StringValue: originalMessageId } };
    const unsendable = sendRefusal(body, attributes, destination, groupId);
    if (unsendable) return fail(unsendable);
    if (options.dryRun) return { ...base, status: 'would-move', destination };
    const fifo = destination.endsWith('.fifo');
    const trace = message.Attributes?.AWSTraceHeader;
    await options.client.send(
      new sqs.SendMessageCommand({
        QueueUrl: destination,
        MessageBody: body,
        MessageAttributes: attributes,
        ...(groupId === undefined ? {} : { MessageGroupId: groupId }),
        ...(fifo ? { MessageDeduplicationId: redriveDeduplicationId(messageId, body) } : {}),
        ...(trace === undefined ? {} : { MessageSystemAttributes: { AWSTraceHeader: { DataType: 'String', StringValue: trace } } }),
      }),
    );
    try {
      await deleteMessage(sqs, options, message);
    } catch (error) {
      return {
        ...base,
        status: 'moved',
        destination,
        reason: `sent, but still on the dead-letter queue (${text(error)}): a later run sends it again, which the consumer's inbox finds a duplicate`,
      };
    }
    return { ...base, status: 'moved', destination };
  } catch (error) {
    return fail(`${text(error)}; it stays on the dead-letter queue: run the redrive again`);
  }
}

/**
 * The FIFO deduplication id of a redriven message: the same for every run that sends it (so a resumed run's
 * second send within 5 minutes is dropped), and one that a sender cannot take first. The messageId alone
 * reaches the consumer's log lines (each failed record names it); a sender who saw one there and sent a
 * message of its own under `dlq-redrive:<id>` would have SQS drop the real redrive, acknowledged to us and
 * delivered to no one. With the body's bytes in the hash, it would need the body too, which no log holds.
 */
export function redriveDeduplicationId(messageId: string, body: string): string {
  return `dlq-redrive:${hex(payloadHash(`${messageId}\n${body}`))}`;
}

/** Why SQS would refuse the message as it is to be sent, or undefined (the rules of sqs-limits.ts). */
function sendRefusal(body: string, attributes: Record<string, MessageAttributeValue>, destination: string, groupId: string | undefined): string | undefined {
  const names = Object.keys(attributes);
  if (names.length > MAX_ATTRIBUTES) {
    return `it has ${names.length - 1} message attributes, and with ${REDRIVEN_MESSAGE_ID_ATTRIBUTE} SQS would refuse ${names.length} (at most ${MAX_ATTRIBUTES}): move it by hand`;
  }
  const bytes = sqsMessageBytes(body, attributes);
  if (bytes > MAX_SQS_MESSAGE_BYTES) {
    return `it is ${bytes} bytes with its attributes and ${REDRIVEN_MESSAGE_ID_ATTRIBUTE}, over SQS's limit of ${MAX_SQS_MESSAGE_BYTES}: move it by hand`;
  }
  if (destination.endsWith('.fifo') && groupId === undefined) {
    return `${destination} is a FIFO queue and the message has no MessageGroupId: give a standard queue (--to)`;
  }
  return undefined;
}

/** Where each message goes: the option, else its own source queue, else the one source the DLQ allows. */
async function destinationResolver(sqs: typeof ClientSqs, options: DeadLetterRedriveOptions): Promise<RunState['destinations']> {
  const given = options.destinationQueueUrl;
  if (given !== undefined) return async () => given;
  const { Attributes } = await options.client.send(
    new sqs.GetQueueAttributesCommand({ QueueUrl: options.deadLetterQueueUrl, AttributeNames: ['RedriveAllowPolicy'] }),
  );
  const allowed = onlyAllowedSource(Attributes?.RedriveAllowPolicy);
  const urls = new Map<string, Promise<string>>();
  return async (message) => {
    const arn = message.Attributes?.DeadLetterQueueSourceArn ?? allowed;
    const match = arn === undefined ? null : SQS_ARN.exec(arn);
    if (!match) {
      return {
        unknown: `its source queue is unknown (no DeadLetterQueueSourceArn, and the dead-letter queue's RedriveAllowPolicy names no single source): give the destination (--to)`,
      };
    }
    const [, account, name] = match;
    let url = urls.get(arn!);
    if (url === undefined) {
      url = options.client.send(new sqs.GetQueueUrlCommand({ QueueName: name, QueueOwnerAWSAccountId: account })).then((found) => found.QueueUrl!);
      urls.set(arn!, url);
    }
    return url;
  };
}

/** The one source queue a `byQueue` RedriveAllowPolicy names, if it names exactly one. */
function onlyAllowedSource(policy: string | undefined): string | undefined {
  if (policy === undefined) return undefined;
  const { redrivePermission, sourceQueueArns } = JSON.parse(policy) as { redrivePermission?: string; sourceQueueArns?: string[] };
  return redrivePermission === 'byQueue' && sourceQueueArns?.length === 1 ? sourceQueueArns[0] : undefined;
}

/** Whether `consumer` claimed `key` for this very body; always false without a consumer. */
function claimReader(options: DeadLetterRedriveOptions): RunState['committed'] {
  const { consumer } = options;
  if (consumer === undefined || options.session === undefined) return async () => false;
  const session = sessionOf(options.session, 'session');
  const sql = CLAIM_HASH_SQL(inboxTables(options.schema ?? 'inbox').consumed);
  return async (key, body) => {
    const [row] = (await session.execute(sql, { consumer, key })).rows;
    const stored = row?.payload_sha256;
    return stored instanceof Uint8Array && hex(stored) === hex(payloadHash(body));
  };
}

async function receive(sqs: typeof ClientSqs, options: DeadLetterRedriveOptions, count: number): Promise<Message[]> {
  const { Messages } = await options.client.send(
    new sqs.ReceiveMessageCommand({
      QueueUrl: options.deadLetterQueueUrl,
      MaxNumberOfMessages: count,
      VisibilityTimeout: options.visibilityTimeoutSeconds ?? 60,
      WaitTimeSeconds: options.waitTimeSeconds ?? 2,
      MessageSystemAttributeNames: ['All'],
      MessageAttributeNames: ['All'],
    }),
  );
  return Messages ?? [];
}

async function deleteMessage(sqs: typeof ClientSqs, options: DeadLetterRedriveOptions, message: Message): Promise<void> {
  await options.client.send(new sqs.DeleteMessageCommand({ QueueUrl: options.deadLetterQueueUrl, ReceiptHandle: message.ReceiptHandle! }));
}

function clientSqs(): Promise<typeof ClientSqs> {
  return importPeer(
    '@aws-sdk/client-sqs',
    () => import('@aws-sdk/client-sqs'),
    (cause) => new PeerDependencyError('sqs-inbox/operations', '@aws-sdk/client-sqs', 'npm install @aws-sdk/client-sqs', cause),
  );
}

function checkOptions(options: DeadLetterRedriveOptions): void {
  if (typeof options.client?.send !== 'function') {
    throw new InboxConfigError('client', `must be an SQS client: new SQSClient({}) from @aws-sdk/client-sqs; got ${described(options.client)}`);
  }
  for (const option of ['deadLetterQueueUrl', 'destinationQueueUrl'] as const) {
    const url = options[option];
    if ((option === 'deadLetterQueueUrl' || url !== undefined) && (typeof url !== 'string' || !QUEUE_URL.test(url))) {
      throw new InboxConfigError(option, `must be a queue URL, https://sqs.<region>.amazonaws.com/<account>/<name>; got ${described(url)}`);
    }
  }
  if ((options.consumer === undefined) !== (options.session === undefined)) {
    throw new InboxConfigError(
      options.consumer === undefined ? 'session' : 'consumer',
      'comes with the other: give consumer and session to skip the messages whose effect committed, or neither',
    );
  }
  // A dead-letter queue may serve several source queues; one consumer's claims say only what committed on the
  // queue it consumes. Sent to that queue, a message it claimed for the same body is its duplicate; bound for
  // another queue, it is another consumer's message, and skipping it would delete it unapplied.
  if (options.consumer !== undefined && options.destinationQueueUrl === undefined) {
    throw new InboxConfigError(
      'destinationQueueUrl',
      `must name the queue consumer "${options.consumer}" consumes when consumer is given (--to with --consumer): its claims say nothing of a message another queue dead-lettered here`,
    );
  }
  if (options.max !== undefined && (!Number.isSafeInteger(options.max) || options.max < 1)) {
    throw new InboxConfigError('max', `must be a whole number of at least 1; got ${described(options.max)}`);
  }
  const wait = options.waitTimeSeconds;
  if (wait !== undefined && (!Number.isSafeInteger(wait) || wait < 0 || wait > 20)) {
    throw new InboxConfigError('waitTimeSeconds', `must be a whole number of seconds from 0 to 20; got ${described(wait)}`);
  }
  const visibility = options.visibilityTimeoutSeconds;
  if (visibility !== undefined && (!Number.isSafeInteger(visibility) || visibility < 1 || visibility > 43_200)) {
    throw new InboxConfigError('visibilityTimeoutSeconds', `must be a whole number of seconds from 1 to 43200; got ${described(visibility)}`);
  }
}

function text(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
