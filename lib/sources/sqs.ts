import type { Duration } from 'aws-cdk-lib';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { ProvisionedPollerConfig } from 'aws-cdk-lib/aws-lambda-event-sources';
import type * as rds from 'aws-cdk-lib/aws-rds';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import {
  FIFO_MAX_BATCH_SIZE,
  QUEUE_REDELIVERY_WINDOW,
  checkFifoBatchSize,
  checkFifoBatchingWindow,
  checkFifoDeadLetterQueue,
  checkVisibilityTimeout,
  durationSeconds,
  queueFacts,
  redeliveryWindowSeconds,
} from '../invariants.js';
import type { QueueFacts } from '../invariants.js';
import { checkSqsProvisionedPollers, connectionCeiling, reservedConcurrency } from './sqs-pollers.js';
import type { ConsumerSource } from './source.js';
import { InboxConstructError } from '../errors.js';

/** What an SQS consumer is given. */
export interface SqsSourceOptions {
  readonly path: string;
  readonly queue: sqs.IQueue;
  readonly deadLetterQueue?: sqs.IQueue | undefined;
  readonly batchSize?: number | undefined;
  readonly maxConcurrency?: number | undefined;
  readonly provisionedPollers?: ProvisionedPollerConfig | undefined;
  readonly maxBatchingWindow?: Duration | undefined;
  readonly redeliveryWindow?: Duration | undefined;
  readonly timeout: Duration;
  /**
   * The inbox's Aurora cluster, whose capacity bounds the connections provisioned pollers may need; none on Aurora
   * DSQL, which has no instance size to bound them.
   */
  readonly cluster?: rds.IDatabaseCluster | undefined;
}

/**
 * An SQS queue as the consumer's source: partial batch responses, a batch size and a maximum concurrency (or
 * provisioned pollers), and the queue's own invariants (FIFO limits, visibility timeout), read from the queue at synth.
 */
export function sqsSource(fn: lambda.Function, options: SqsSourceOptions): ConsumerSource {
  const configured = (options.queue as Partial<sqs.Queue>).deadLetterQueue?.queue;
  if (options.deadLetterQueue !== undefined && configured !== undefined && options.deadLetterQueue !== configured) {
    throw InboxConstructError.of(
      `InboxConsumer ${options.path}`,
      [
        `\`deadLetterQueue\` is not the dead-letter queue configured on \`queue\`. ` +
          'Fix: remove `deadLetterQueue` (it is read from the queue), or pass the one the queue redrives to.',
      ],
      'line',
    );
  }
  const deadLetterQueue = options.deadLetterQueue ?? configured;
  const facts = (): QueueFacts => {
    const own = queueFacts(options.queue);
    if (own.deadLetter !== undefined || deadLetterQueue === undefined) return own;
    return { ...own, deadLetter: queueFacts(deadLetterQueue) };
  };
  const batchSize = options.batchSize ?? 10;
  const fifo = facts().fifo;

  const pollers = options.provisionedPollers;
  const pollerViolations = (atSynth: boolean) =>
    pollers === undefined
      ? []
      : checkSqsProvisionedPollers({
          pollers,
          maxConcurrency: options.maxConcurrency,
          batchSize,
          reservedConcurrency: atSynth ? reservedConcurrency(fn) : undefined,
          connectionCeiling: atSynth && options.cluster !== undefined ? connectionCeiling(options.cluster) : undefined,
        });

  // An invalid FIFO or poller setting is reported with its fix by the invariants at synth (so synth still fails);
  // keep CDK's own eager checks from throwing first, alone and without the fix.
  const eventSource = new SqsEventSource(options.queue, {
    batchSize: fifo ? Math.min(batchSize, FIFO_MAX_BATCH_SIZE) : batchSize,
    ...(pollers === undefined
      ? { maxConcurrency: options.maxConcurrency ?? 5 }
      : pollerViolations(false).length === 0
        ? { provisionedPollerConfig: pollers }
        : {}),
    reportBatchItemFailures: true,
    ...(options.maxBatchingWindow !== undefined && !fifo ? { maxBatchingWindow: options.maxBatchingWindow } : {}),
  });
  fn.addEventSource(eventSource);

  return {
    kind: 'sqs',
    eventSource,
    deadLetterQueue,
    window: QUEUE_REDELIVERY_WINDOW,
    redeliveryWindowSeconds: () => (options.redeliveryWindow !== undefined ? durationSeconds(options.redeliveryWindow) : redeliveryWindowSeconds(facts())),
    // Checked at synth, not now, so that later changes to the queue (escape hatches) are seen too.
    violations: () => {
      const queue = facts();
      return [
        ...checkFifoDeadLetterQueue(queue),
        ...checkFifoBatchSize({ fifo: queue.fifo, batchSize }),
        ...checkFifoBatchingWindow({ fifo: queue.fifo, maxBatchingWindow: options.maxBatchingWindow }),
        ...checkVisibilityTimeout({
          visibilityTimeoutSeconds: queue.visibilityTimeoutSeconds,
          functionTimeoutSeconds: durationSeconds(options.timeout),
          batchingWindowSeconds: queue.fifo ? 0 : (durationSeconds(options.maxBatchingWindow) ?? 0),
        }),
        ...pollerViolations(true),
      ];
    },
  };
}
