import { Stack, Token } from 'aws-cdk-lib';
import type * as iam from 'aws-cdk-lib/aws-iam';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { IConstruct } from 'constructs';
import { INBOX_ENV } from '../../lambda/inbox/contract.js';
import { InboxConstructError } from '../errors.js';
import type { InvariantViolation } from '../invariants.js';

/**
 * The queues a consumer's `tx.send({ to: name })` may name, by name. The function gets them as `INBOX_DESTINATIONS`
 * (the JSON of name -> queue URL), which `sqsOutbox()` reads when its `destinations` option is unset.
 */
export type OutboxDestinations = Readonly<Record<string, sqs.IQueue>>;

/**
 * A name the runtime would take for a URL rather than look up: `tx.send({ to })` sends to any `to` that starts with
 * `http://` or `https://` as it is. Any other scheme is refused too: it can only be a URL passed where a name belongs.
 */
const URL_LIKE = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;

/** Every problem with a `destinations` prop, each naming the entry and the fix; none for tokens. */
export function destinationProblems(destinations: unknown): string[] {
  if (destinations === undefined) return [];
  if (destinations === null || typeof destinations !== 'object' || Array.isArray(destinations)) {
    return ['`destinations` must map names to queues, e.g. `{ invoices: invoicesQueue }`. Fix: pass an object of name -> sqs.IQueue.'];
  }
  const problems: string[] = [];
  for (const [name, queue] of Object.entries(destinations as Record<string, unknown>)) {
    if (!Token.isUnresolved(name)) {
      if (name.length === 0) {
        problems.push("`destinations` has an empty name, which `tx.send({ to })` can never name. Fix: give the queue a name, e.g. 'invoices'.");
      } else if (URL_LIKE.test(name)) {
        problems.push(
          `\`destinations\` name '${name}' looks like a URL: \`tx.send({ to: '${name}' })\` would send to it as a URL, never look it up. ` +
            "Fix: use a plain name such as 'invoices' and pass the queue as its value.",
        );
      }
    }
    const grantable = queue as Partial<sqs.IQueue> | null | undefined;
    if (grantable === null || typeof grantable !== 'object' || typeof grantable.grant !== 'function' || grantable.queueUrl === undefined) {
      problems.push(`\`destinations.${name}\` must be an sqs.IQueue. Fix: pass the queue itself, or import it with sqs.Queue.fromQueueArn().`);
    }
  }
  return problems;
}

/** `INBOX_DESTINATIONS`: the JSON of name -> queue URL, names sorted, the URLs resolved by CloudFormation at deploy. */
export function destinationsJson(scope: IConstruct, destinations: OutboxDestinations): string {
  const urls = Object.fromEntries(
    Object.keys(destinations)
      .sort()
      .map((name) => [name, destinations[name]!.queueUrl]),
  );
  return Stack.of(scope).toJsonString(urls);
}

/** Each queue once, in first-seen order. */
export function distinctQueues(queues: Iterable<sqs.IQueue>): sqs.IQueue[] {
  return [...new Set(queues)];
}

/**
 * Grants exactly what sending to `queue` with SendMessageBatch needs: `sqs:SendMessage` (which authorises the batch
 * action; SQS has no separate permission for it) and, when a customer managed KMS key encrypts the queue,
 * `kms:GenerateDataKey` and `kms:Decrypt` on that key. Not `queue.grantSendMessages()`, which adds
 * `sqs:GetQueueAttributes`, `sqs:GetQueueUrl`, `kms:Encrypt` and `kms:ReEncrypt*`, none of which a send needs,
 * and `kms:GenerateDataKey*`, a wildcard cdk-nag flags. A queue encrypted with the AWS managed key (`alias/aws/sqs`)
 * needs no KMS grant: that key's policy lets every principal of the account use it through SQS.
 */
export function grantSendMessage(grantee: iam.IGrantable, queue: sqs.IQueue): void {
  queue.grant(grantee, 'sqs:SendMessage');
  queue.encryptionMasterKey?.grant(grantee, 'kms:GenerateDataKey', 'kms:Decrypt');
}

/** Marks an InboxOutboxRelay without importing it, so that the consumer's invariant can find relays. */
export const OUTBOX_RELAY = Symbol.for('sqs-inbox.InboxOutboxRelay');

/** What a consumer's invariant needs to know of a relay. */
export interface OutboxRelayMark {
  readonly [OUTBOX_RELAY]: true;
  /** The inbox table (and its outbox) the relay sweeps: `InboxDatabase.tableKey`. */
  readonly tableKey: string;
  /** Whether the relay may send to every destination of `consumer` (it lists it in `consumers`). */
  relays(consumer: IConstruct): boolean;
}

/** Every InboxOutboxRelay in the app of `scope`. */
export function outboxRelaysIn(scope: IConstruct): Array<OutboxRelayMark & IConstruct> {
  return scope.node.root.node.findAll().filter((c): c is OutboxRelayMark & IConstruct => (c as Partial<OutboxRelayMark>)[OUTBOX_RELAY] === true);
}

/**
 * A consumer's `destinations` and `environment` as synth must refuse them, all at once: names the runtime could
 * never look up, values that are not queues, and `INBOX_DESTINATIONS` set by hand (its queues would be neither
 * granted nor known to the relay). `owner` names the construct, e.g. `InboxConsumer App/Worker`.
 */
export function validateDestinations(owner: string, destinations: unknown, environment: Readonly<Record<string, string>> | undefined): void {
  const problems = destinationProblems(destinations);
  if (environment?.[INBOX_ENV.DESTINATIONS] !== undefined) {
    problems.push(
      '`environment.INBOX_DESTINATIONS` is set by the construct from `destinations`. Fix: remove it and pass the queues as ' +
        '`destinations: { name: queue }` (import one with sqs.Queue.fromQueueArn()), so that the function and the outbox ' +
        'relay may send to them.',
    );
  }
  if (problems.length > 0) throw InboxConstructError.of(owner, problems);
}

/** The consumer function's `INBOX_DESTINATIONS`, or nothing when it sends nowhere. */
export function destinationEnvironment(scope: IConstruct, destinations: OutboxDestinations): Record<string, string> {
  return Object.keys(destinations).length > 0 ? { [INBOX_ENV.DESTINATIONS]: destinationsJson(scope, destinations) } : {};
}

/** A consumer that may send through its outbox: InboxConsumer or InboxDsqlConsumer. */
export interface OutboxSender extends IConstruct {
  readonly consumerName: string;
  readonly destinations: OutboxDestinations;
  readonly database: { readonly tableKey: string; readonly tableDescription: string };
}

/**
 * A consumer that sends needs a relay over its table that may send to its destinations: the handler sends its
 * rows after its commits, but the rows an invocation that crashed or timed out left behind are sent by the
 * relay's sweeper only, and without one they would never be. `owner` names the consumer, e.g. `InboxConsumer App/Worker`.
 */
export function outboxRelayViolations(owner: string, consumer: OutboxSender): InvariantViolation[] {
  const names = Object.keys(consumer.destinations);
  if (names.length === 0) return [];
  const overTable = outboxRelaysIn(consumer).filter((relay) => relay.tableKey === consumer.database.tableKey);
  if (overTable.some((relay) => relay.relays(consumer))) return [];
  const sends = `${owner} sends to ${names.map((name) => `'${name}'`).join(', ')} through its outbox`;
  if (overTable.length === 0) {
    return [
      {
        problem:
          `${sends}, but no InboxOutboxRelay sweeps ${consumer.database.tableDescription}: the messages an invocation that crashed ` +
          'or timed out after its commit left unsent would never be sent.',
        fix: "add `new InboxOutboxRelay(this, 'OutboxRelay', { database, consumers: [consumer] })` (InboxStack does this for its consumers).",
      },
    ];
  }
  return [
    {
      problem:
        `${sends}, but the InboxOutboxRelay over its table (${overTable.map((relay) => relay.node.path).join(', ')}) does not list it ` +
        "in `consumers`, so its sweeper may not send to this consumer's destinations: what it leaves unsent would fail to send.",
      fix: "add the consumer to that relay's `consumers`.",
    },
  ];
}
