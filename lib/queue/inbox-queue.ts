import { Duration } from 'aws-cdk-lib';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { InboxConstructError } from '../errors.js';

/** Props for {@link InboxQueue}. */
export interface InboxQueueProps {
  /**
   * An existing queue to consume instead of creating one. Its settings (dead-letter queue, retention,
   * visibility timeout, encryption) stay as they are, so the props for new queues are refused next to it;
   * only `deadLetterQueue` may accompany it.
   * @default - a new queue is created
   */
  readonly queue?: sqs.IQueue | undefined;
  /**
   * The dead-letter queue of an existing `queue`, so that alarms can watch it. Only used with `queue`.
   * @default - none (with `queue`); a new dead-letter queue otherwise
   */
  readonly deadLetterQueue?: sqs.IQueue | undefined;
  /**
   * Whether the new queues are FIFO. FIFO keeps the order within a message group.
   * @default true
   */
  readonly fifo?: boolean | undefined;
  /**
   * For a FIFO queue, deduplicate on a SHA-256 of the body when the sender gives no deduplication id.
   * @default false (senders pass `MessageDeduplicationId`)
   */
  readonly contentBasedDeduplication?: boolean | undefined;
  /**
   * How many receives before a message moves to the dead-letter queue. AWS recommends at least 5 so
   * throttling does not send messages there early.
   * @default 5
   */
  readonly maxReceiveCount?: number | undefined;
  /**
   * How long the queue keeps a message.
   * @default Duration.days(4)
   */
  readonly retentionPeriod?: Duration | undefined;
  /**
   * How long the dead-letter queue keeps a message: the time operators have to redrive it.
   * @default Duration.days(14)
   */
  readonly deadLetterRetentionPeriod?: Duration | undefined;
  /**
   * Visibility timeout of the queue. Keep it at least 6 x the consumer's timeout.
   * @default Duration.minutes(3) (6 x a 30-second consumer)
   */
  readonly visibilityTimeout?: Duration | undefined;
  /**
   * Server-side encryption of both queues.
   * @default sqs.QueueEncryption.SQS_MANAGED
   */
  readonly encryption?: sqs.QueueEncryption | undefined;
}

/** Props that configure queues created here: meaningless next to an existing `queue`. */
const NEW_QUEUE_PROPS = [
  'fifo',
  'contentBasedDeduplication',
  'maxReceiveCount',
  'retentionPeriod',
  'deadLetterRetentionPeriod',
  'visibilityTimeout',
  'encryption',
] as const satisfies ReadonlyArray<keyof InboxQueueProps>;

/**
 * The queue an inbox consumer reads: by default a FIFO queue with a FIFO dead-letter queue,
 * redrive after `maxReceiveCount` receives, server-side encryption and TLS enforced on both.
 *
 * @example
 * const orders = new InboxQueue(this, 'Orders', { maxReceiveCount: 5 });
 * orders.queue.grantSendMessages(producerFunction);
 *
 * @example
 * // Bring your own queue
 * const existing = new InboxQueue(this, 'Existing', {
 *   queue: sqs.Queue.fromQueueArn(this, 'Q', 'arn:aws:sqs:eu-west-1:123456789012:orders.fifo'),
 * });
 */
export class InboxQueue extends Construct {
  /** The queue consumers read. */
  public readonly queue: sqs.IQueue;
  /** The dead-letter queue, when one was created or given. */
  public readonly deadLetterQueue?: sqs.IQueue;

  constructor(scope: Construct, id: string, props: InboxQueueProps = {}) {
    super(scope, id);
    if (props.queue !== undefined) {
      const ignored = NEW_QUEUE_PROPS.filter((key) => props[key] !== undefined);
      if (ignored.length > 0) {
        throw InboxConstructError.of(
          `InboxQueue ${this.node.path}`,
          [
            `${ignored.map((key) => `\`${key}\``).join(', ')} only apply to new queues, ` +
              'but an existing `queue` was given. Fix: configure the existing queue (and its dead-letter queue) directly ' +
              'and remove these props, or remove `queue` to create new queues with them.',
          ],
          'line',
        );
      }
      this.queue = props.queue;
      if (props.deadLetterQueue !== undefined) this.deadLetterQueue = props.deadLetterQueue;
      return;
    }
    if (props.deadLetterQueue !== undefined) {
      throw InboxConstructError.of(
        `InboxQueue ${this.node.path}`,
        [
          `\`deadLetterQueue\` is only used with an existing \`queue\`. ` +
            'Fix: remove `deadLetterQueue` to get a new one, or pass the existing `queue` it belongs to.',
        ],
        'line',
      );
    }
    const fifo = props.fifo ?? true;
    const encryption = props.encryption ?? sqs.QueueEncryption.SQS_MANAGED;
    const deadLetterQueue = new sqs.Queue(this, 'DeadLetterQueue', {
      fifo: fifo || undefined,
      retentionPeriod: props.deadLetterRetentionPeriod ?? Duration.days(14),
      encryption,
      enforceSSL: true,
    });
    this.deadLetterQueue = deadLetterQueue;
    this.queue = new sqs.Queue(this, 'Queue', {
      fifo: fifo || undefined,
      contentBasedDeduplication: fifo ? (props.contentBasedDeduplication ?? false) : undefined,
      retentionPeriod: props.retentionPeriod ?? Duration.days(4),
      visibilityTimeout: props.visibilityTimeout ?? Duration.minutes(3),
      encryption,
      enforceSSL: true,
      deadLetterQueue: { queue: deadLetterQueue, maxReceiveCount: props.maxReceiveCount ?? 5 },
    });
  }
}
