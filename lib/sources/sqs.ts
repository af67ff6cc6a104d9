import type { Duration } from 'aws-cdk-lib';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { ProvisionedPollerConfig } from 'aws-cdk-lib/aws-lambda-event-sources';
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
import { warnConsoleRedrive } from './redrive-warning.js';
import { checkSqsProvisionedPollers, connectionCeiling, reservedConcurrency } from './sqs-pollers.js';
import { SourceBinder } from './source.js';
import type { AttachedSource, SourceTarget } from './source.js';
import { InboxConstructError } from '../errors.js';

/** Options of {@link InboxSources.sqs}: how Lambda polls the queue. */
export interface InboxSqsSourceOptions {
  /**
   * Records per batch (at most 10 on a FIFO queue).
   * @default 10
   */
  readonly batchSize?: number | undefined;
  /**
   * Most concurrent invocations the event source starts (2 to 1000). Keeps a burst from exhausting the database's
   * capacity. Not with `provisionedPollers`, whose ceiling is `maximumPollers` x 10.
   * @default 5 (none in provisioned mode)
   */
  readonly maxConcurrency?: number | undefined;
  /**
   * Provisioned mode, dedicated event pollers that stay ready (billed per poller), instead of `maxConcurrency`,
   * which Lambda does not take beside it. Each poller runs up to 10 concurrent invocations, so `maximumPollers` x 10
   * is the ceiling that protects the database: it must be set, and synth checks it against the function's reserved
   * concurrency and the cluster's connections (each invocation holds up to 10 transactions). `minimumPollers` 2 to
   * 200 (default 2), `maximumPollers` 2 to 2,000.
   * @example { minimumPollers: 2, maximumPollers: 4 } // at most 40 concurrent invocations
   * @default - standard mode, with `maxConcurrency`
   */
  readonly provisionedPollers?: ProvisionedPollerConfig | undefined;
  /**
   * How long the event source waits to fill a batch. Standard queues only: Lambda takes none on a FIFO queue.
   * @default - no batching window
   */
  readonly maxBatchingWindow?: Duration | undefined;
  /**
   * The dead-letter queue of the queue, for the dead-letter alarm and the FIFO check. Pass it when the queue is
   * imported (e.g. `InboxQueue({ queue, deadLetterQueue }).deadLetterQueue`): an imported queue's redrive policy is
   * not visible at synth.
   * @default - the dead-letter queue configured on the queue when it is a `sqs.Queue` defined in this app, else none
   */
  readonly deadLetterQueue?: sqs.IQueue | undefined;
  /**
   * The longest time after sending that SQS can still deliver a message to this consumer: the cleanup's retention
   * must exceed it.
   * @default - the queue's retention plus its dead-letter queue's, read from the queue when it is defined in this
   * app; 28 days (SQS's maxima) for an imported queue
   */
  readonly redeliveryWindow?: Duration | undefined;
}

/**
 * An SQS queue as the consumer's source: partial batch responses, a batch size and a maximum concurrency (or
 * provisioned pollers), and the queue's own invariants (FIFO limits, visibility timeout), read from the queue at synth.
 */
export class SqsSource extends SourceBinder {
  readonly kind = 'sqs' as const;
  readonly window = QUEUE_REDELIVERY_WINDOW;
  override readonly queue: sqs.IQueue;
  readonly #options: InboxSqsSourceOptions;
  /** The dead-letter queue passed in, or the one configured on the queue. */
  readonly #deadLetterQueue: sqs.IQueue | undefined;

  constructor(queue: sqs.IQueue, options: InboxSqsSourceOptions) {
    super();
    this.queue = queue;
    this.#options = options;
    const configured = (queue as Partial<sqs.Queue>).deadLetterQueue?.queue;
    if (options.deadLetterQueue !== undefined && configured !== undefined && options.deadLetterQueue !== configured) {
      throw InboxConstructError.of(
        'InboxSources.sqs',
        [
          '`deadLetterQueue` is not the dead-letter queue configured on the queue. ' +
            'Fix: remove `deadLetterQueue` (it is read from the queue), or pass the one the queue redrives to.',
        ],
        'line',
      );
    }
    this.#deadLetterQueue = options.deadLetterQueue ?? configured;
  }

  protected attach(target: SourceTarget): AttachedSource {
    const options = this.#options;
    const deadLetterQueue = this.#deadLetterQueue;
    const facts = (): QueueFacts => {
      const own = queueFacts(this.queue);
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
            reservedConcurrency: atSynth ? reservedConcurrency(target.fn) : undefined,
            connectionCeiling: atSynth && target.cluster !== undefined ? connectionCeiling(target.cluster) : undefined,
          });

    // An invalid FIFO or poller setting is reported with its fix by the invariants at synth (so synth still fails);
    // keep CDK's own eager checks from throwing first, alone and without the fix.
    const eventSource = new SqsEventSource(this.queue, {
      batchSize: fifo ? Math.min(batchSize, FIFO_MAX_BATCH_SIZE) : batchSize,
      ...(pollers === undefined
        ? { maxConcurrency: options.maxConcurrency ?? 5 }
        : pollerViolations(false).length === 0
          ? { provisionedPollerConfig: pollers }
          : {}),
      reportBatchItemFailures: true,
      ...(options.maxBatchingWindow !== undefined && !fifo ? { maxBatchingWindow: options.maxBatchingWindow } : {}),
    });
    target.fn.addEventSource(eventSource);
    if (deadLetterQueue !== undefined) warnConsoleRedrive(target.consumer, deadLetterQueue);

    return {
      eventSource,
      deadLetterQueue,
      redeliveryWindowSeconds: () => (options.redeliveryWindow !== undefined ? durationSeconds(options.redeliveryWindow) : redeliveryWindowSeconds(facts())),
      // Read at synth, not now, so that later changes to the queue (escape hatches) are seen too.
      violations: () => {
        const queue = facts();
        return [
          ...checkFifoDeadLetterQueue(queue),
          ...checkFifoBatchSize({ fifo: queue.fifo, batchSize }),
          ...checkFifoBatchingWindow({ fifo: queue.fifo, maxBatchingWindow: options.maxBatchingWindow }),
          ...checkVisibilityTimeout({
            visibilityTimeoutSeconds: queue.visibilityTimeoutSeconds,
            functionTimeoutSeconds: durationSeconds(target.timeout),
            batchingWindowSeconds: queue.fifo ? 0 : (durationSeconds(options.maxBatchingWindow) ?? 0),
          }),
          ...pollerViolations(true),
        ];
      },
    };
  }
}
