import { Stack, Token } from 'aws-cdk-lib';
import type * as iam from 'aws-cdk-lib/aws-iam';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { IConstruct } from 'constructs';
import { INBOX_ENV } from '../../lambda/inbox/contract.js';
import { InboxConstructError } from '../errors.js';

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
