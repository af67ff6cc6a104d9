import { type Duration, Token } from 'aws-cdk-lib';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { IConstruct } from 'constructs';

/**
 * One broken invariant: what is wrong, and the change that fixes it.
 *
 * Invariants are collected with `node.addValidation()`, so CDK gathers every problem in the app
 * and throws them together at synth ("Validation failed with the following errors").
 */
export interface InvariantViolation {
  /** What is wrong, naming the prop and the values. */
  readonly problem: string;
  /** The change that fixes it. */
  readonly fix: string;
}

/** SQS caps both a queue's and a dead-letter queue's retention at 14 days. */
export const SQS_MAX_RETENTION_SECONDS = 14 * 24 * 3600;
const SQS_DEFAULT_RETENTION_SECONDS = 4 * 24 * 3600;
const SQS_DEFAULT_VISIBILITY_TIMEOUT_SECONDS = 30;
/** AWS guidance: visibility timeout at least six times the function timeout. */
export const VISIBILITY_TIMEOUT_FACTOR = 6;
/** Lambda's SQS event source takes at most 10 records per batch from a FIFO queue. */
export const FIFO_MAX_BATCH_SIZE = 10;

/**
 * What can be known at synth about a queue. `undefined` means "an unresolved token": checks that
 * need the value are skipped.
 */
export interface QueueFacts {
  /** True when the queue is imported, so its settings are not in this app. */
  readonly imported: boolean;
  readonly fifo: boolean;
  readonly visibilityTimeoutSeconds: number | undefined;
  readonly retentionSeconds: number | undefined;
  /** The dead-letter queue configured on the source queue (only known for queues defined in this app). */
  readonly deadLetter?: QueueFacts | undefined;
}

/** Reads a queue's settings from its CloudFormation resource, when the queue is defined in this app. */
export function queueFacts(queue: sqs.IQueue): QueueFacts {
  if (!(queue instanceof sqs.Queue)) {
    return { imported: true, fifo: queue.fifo, visibilityTimeoutSeconds: undefined, retentionSeconds: undefined };
  }
  const cfn = queue.node.defaultChild as sqs.CfnQueue;
  const deadLetter = queue.deadLetterQueue?.queue;
  return {
    imported: false,
    fifo: queue.fifo,
    visibilityTimeoutSeconds: resolvedNumber(cfn.visibilityTimeout, SQS_DEFAULT_VISIBILITY_TIMEOUT_SECONDS),
    retentionSeconds: resolvedNumber(cfn.messageRetentionPeriod, SQS_DEFAULT_RETENTION_SECONDS),
    ...(deadLetter === undefined ? {} : { deadLetter: queueFacts(deadLetter) }),
  };
}

/**
 * The longest time after a message was first sent that SQS can still deliver it to the consumer:
 * the queue's retention, plus the dead-letter queue's when a redrive back to the source is possible
 * (FIFO resets the enqueue timestamp on the move to the dead-letter queue).
 * An imported queue's settings are unknown, so it is assumed to use SQS's maxima with a dead-letter queue.
 *
 * @returns seconds, or `undefined` when a retention is an unresolved token.
 */
export function redeliveryWindowSeconds(facts: QueueFacts): number | undefined {
  if (facts.imported) return 2 * SQS_MAX_RETENTION_SECONDS;
  if (facts.retentionSeconds === undefined) return undefined;
  if (facts.deadLetter === undefined) return facts.retentionSeconds;
  const deadLetterRetention = facts.deadLetter.imported ? SQS_MAX_RETENTION_SECONDS : facts.deadLetter.retentionSeconds;
  if (deadLetterRetention === undefined) return undefined;
  return facts.retentionSeconds + deadLetterRetention;
}

/** Seconds of a Duration, or `undefined` when it is an unresolved token. */
export function durationSeconds(duration: Duration | undefined): number | undefined {
  if (duration === undefined || duration.isUnresolved()) return undefined;
  return duration.toSeconds({ integral: false });
}

/** Where a consumer's redelivery window comes from, and how to shorten it: for the retention check's message. */
export interface RedeliveryWindowSource {
  /** What makes up the window, e.g. "queue retention plus dead-letter queue retention". */
  readonly description: string;
  /** How to shorten it, e.g. "shorten the queues' retention periods". */
  readonly shorten: string;
}

/** An SQS consumer's window: what a message can still be delivered in after it was sent. */
export const QUEUE_REDELIVERY_WINDOW: RedeliveryWindowSource = {
  description: 'queue retention plus dead-letter queue retention',
  shorten: "shorten the queues' retention periods (or pass the SQS source's real `redeliveryWindow` if its queue is imported)",
};

/** Inbox retention must exceed the redelivery window, or a late redelivery finds no row and runs twice. */
export function checkRetentionCoversRedelivery(input: {
  readonly retentionSeconds: number | undefined;
  readonly consumerName: string;
  readonly windowSeconds: number | undefined;
  /** @default QUEUE_REDELIVERY_WINDOW */
  readonly window?: RedeliveryWindowSource | undefined;
}): InvariantViolation[] {
  const { retentionSeconds, windowSeconds, consumerName } = input;
  const window = input.window ?? QUEUE_REDELIVERY_WINDOW;
  if (retentionSeconds === undefined || windowSeconds === undefined) return [];
  if (retentionSeconds > windowSeconds) return [];
  return [
    {
      problem:
        `InboxCleanup \`retention\` (${describeSeconds(retentionSeconds)}) does not exceed the redelivery window of ` +
        `consumer '${consumerName}' (${describeSeconds(windowSeconds)}: ${window.description}). ` +
        'A message redelivered after its inbox row was purged would be applied a second time.',
      fix: `set InboxCleanup \`retention\` to more than ${describeSeconds(windowSeconds)}, or ${window.shorten}.`,
    },
  ];
}

/**
 * Lambda needs the messages hidden for the whole invocation and its retries, and for the batching window it spends
 * gathering them: AWS's guidance is 6 x the function timeout plus `maxBatchingWindow`.
 */
export function checkVisibilityTimeout(input: {
  readonly visibilityTimeoutSeconds: number | undefined;
  readonly functionTimeoutSeconds: number | undefined;
  /** @default 0 */
  readonly batchingWindowSeconds?: number | undefined;
}): InvariantViolation[] {
  const { visibilityTimeoutSeconds, functionTimeoutSeconds } = input;
  const window = input.batchingWindowSeconds ?? 0;
  if (visibilityTimeoutSeconds === undefined || functionTimeoutSeconds === undefined) return [];
  const required = VISIBILITY_TIMEOUT_FACTOR * functionTimeoutSeconds + window;
  if (visibilityTimeoutSeconds >= required) return [];
  const plusWindow = window > 0 ? ` plus its \`maxBatchingWindow\` (${describeSeconds(window)})` : '';
  return [
    {
      problem:
        `the queue's visibility timeout (${describeSeconds(visibilityTimeoutSeconds)}) is less than ` +
        `${VISIBILITY_TIMEOUT_FACTOR} x the consumer's \`timeout\` (${describeSeconds(functionTimeoutSeconds)})${plusWindow}. ` +
        'A message could become visible again while it is still being processed, or be moved to the dead-letter queue early.',
      fix:
        `set the queue's \`visibilityTimeout\` to at least ${describeSeconds(required)}, ` +
        `or lower InboxConsumer \`timeout\` to at most ${describeSeconds(Math.max(0, Math.floor((visibilityTimeoutSeconds - window) / VISIBILITY_TIMEOUT_FACTOR)))}` +
        (window > 0 ? ' (or shorten `maxBatchingWindow`).' : '.'),
    },
  ];
}

/** SQS rejects a standard dead-letter queue on a FIFO queue (and the reverse). */
export function checkFifoDeadLetterQueue(facts: QueueFacts): InvariantViolation[] {
  if (facts.deadLetter === undefined || facts.deadLetter.fifo === facts.fifo) return [];
  const [source, target] = facts.fifo ? ['a FIFO', 'a standard'] : ['a standard', 'a FIFO'];
  return [
    {
      problem: `the consumer's queue is ${source} queue but its dead-letter queue is ${target} queue.`,
      fix: `create the dead-letter queue with \`fifo: ${facts.fifo}\` (InboxQueue does this for you).`,
    },
  ];
}

/** Lambda takes at most 10 records per batch from a FIFO queue. */
export function checkFifoBatchSize(input: { readonly fifo: boolean; readonly batchSize: number }): InvariantViolation[] {
  if (!input.fifo || Token.isUnresolved(input.batchSize) || input.batchSize <= FIFO_MAX_BATCH_SIZE) return [];
  return [
    {
      problem: `the SQS source's \`batchSize\` is ${input.batchSize}, but a FIFO queue delivers at most ${FIFO_MAX_BATCH_SIZE} records per batch.`,
      fix: `set \`batchSize\` to ${FIFO_MAX_BATCH_SIZE} or less.`,
    },
  ];
}

/** Lambda does not support a batching window on FIFO queues. */
export function checkFifoBatchingWindow(input: { readonly fifo: boolean; readonly maxBatchingWindow: Duration | undefined }): InvariantViolation[] {
  if (!input.fifo || input.maxBatchingWindow === undefined) return [];
  return [
    {
      problem: "the SQS source's `maxBatchingWindow` is set, but Lambda does not support a batching window on a FIFO queue.",
      fix: 'remove `maxBatchingWindow` (FIFO batches are filled without waiting).',
    },
  ];
}

/** The consumer name is part of the inbox key: two consumers sharing it would swallow each other's messages. */
export function checkConsumerNameUnique(input: {
  readonly consumerName: string;
  readonly table: string;
  readonly otherConsumerPaths: readonly string[];
}): InvariantViolation[] {
  if (input.otherConsumerPaths.length === 0) return [];
  return [
    {
      problem:
        `InboxConsumer \`consumerName\` '${input.consumerName}' is already used on ${input.table} by ` +
        `${input.otherConsumerPaths.join(', ')}. Both would claim the same inbox rows, so each would skip messages the other processed.`,
      fix: 'give every InboxConsumer on one database a distinct `consumerName`.',
    },
  ];
}

/**
 * Registers invariants on a construct. They run when the app is synthesized, after every construct
 * exists, so cross-construct checks see the whole app and all problems are reported together.
 */
export function addInvariants(scope: IConstruct, check: () => InvariantViolation[]): void {
  scope.node.addValidation({ validate: () => check().map(formatViolation) });
}

/** `<problem> Fix: <fix>` */
export function formatViolation(violation: InvariantViolation): string {
  return `${violation.problem} Fix: ${violation.fix}`;
}

/** Human-readable seconds: "18 days", "3 minutes", "90 seconds". */
export function describeSeconds(seconds: number): string {
  const units: Array<[number, string]> = [
    [86400, 'day'],
    [3600, 'hour'],
    [60, 'minute'],
  ];
  for (const [size, name] of units) {
    if (seconds >= size && seconds % size === 0) {
      const n = seconds / size;
      return `${n} ${name}${n === 1 ? '' : 's'}`;
    }
  }
  return `${seconds} second${seconds === 1 ? '' : 's'}`;
}

/** Seconds between runs of a `rate()` schedule expression; `undefined` for `cron()` or a token. */
export function rateSeconds(expression: string): number | undefined {
  const match = /^rate\((\d+) (minute|hour|day)s?\)$/.exec(expression);
  if (match === null) return undefined;
  const unit = { minute: 60, hour: 3600, day: 86400 }[match[2] as 'minute' | 'hour' | 'day'];
  return Number(match[1]) * unit;
}

function resolvedNumber(value: number | undefined, fallback: number): number | undefined {
  if (value === undefined) return fallback;
  return Token.isUnresolved(value) ? undefined : value;
}
