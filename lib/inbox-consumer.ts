import { Duration, Token } from 'aws-cdk-lib';
import type * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { InboxDatabase } from './inbox-database.js';
import { InboxFunction } from './inbox-function.js';
import {
  FIFO_MAX_BATCH_SIZE,
  addInvariants,
  checkConsumerNameUnique,
  checkFifoBatchSize,
  checkFifoBatchingWindow,
  checkFifoDeadLetterQueue,
  checkVisibilityTimeout,
  durationSeconds,
  queueFacts,
  redeliveryWindowSeconds,
} from './invariants.js';
import type { InvariantViolation } from './invariants.js';

/** The metric namespace the runtime's embedded metrics use. */
export const INBOX_METRICS_NAMESPACE = 'SqsInbox';

/** Props for {@link InboxConsumer}. */
export interface InboxConsumerProps {
  /** The database whose inbox table records what this consumer has applied. */
  readonly database: InboxDatabase;
  /** The queue to consume. */
  readonly queue: sqs.IQueue;
  /**
   * The consumer's name: part of every inbox key, so it must be unique per table and must never change
   * once messages were processed (a new name would process them again).
   */
  readonly consumerName: string;
  /** Path to your handler's TypeScript entry file, bundled with esbuild. */
  readonly entry: string;
  /**
   * Name of the exported handler in `entry`.
   * @default 'handler'
   */
  readonly handler?: string;
  /**
   * Function timeout. The queue's visibility timeout must be at least 6 x this.
   * @default Duration.seconds(30)
   */
  readonly timeout?: Duration;
  /**
   * Function memory in MiB.
   * @default 512
   */
  readonly memorySize?: number;
  /**
   * Node.js runtime.
   * @default lambda.Runtime.NODEJS_22_X
   */
  readonly runtime?: lambda.Runtime;
  /**
   * Records per batch (at most 10 on a FIFO queue).
   * @default 10
   */
  readonly batchSize?: number;
  /**
   * Most concurrent invocations the event source starts (2 to 1000). Keeps a burst from
   * exhausting the database's capacity.
   * @default 5
   */
  readonly maxConcurrency?: number;
  /**
   * How long the event source waits to fill a batch. Standard queues only.
   * @default - no batching window
   */
  readonly maxBatchingWindow?: Duration;
  /**
   * The longest time after sending that the queue can still deliver a message to this consumer.
   * The cleanup's retention must exceed it.
   * @default - the queue's retention plus its dead-letter queue's, read from the queue when it is defined in
   * this app; 28 days (SQS's maxima) for an imported queue
   */
  readonly redeliveryWindow?: Duration;
  /**
   * Extra environment variables for your handler.
   * @default {}
   */
  readonly environment?: Readonly<Record<string, string>>;
  /**
   * Retention of the function's log group.
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly logRetention?: logs.RetentionDays;
}

/**
 * Your SQS handler as a Lambda function that applies each message exactly once through the inbox:
 * bundled from `entry`, triggered by `queue` with partial batch responses, allowed to use the
 * Data API on `database` and nothing more, and told where the inbox lives through its environment
 * (`INBOX_RESOURCE_ARN`, `INBOX_SECRET_ARN`, `INBOX_DATABASE`, `INBOX_CONSUMER`).
 *
 * @example
 * const queue = new InboxQueue(this, 'Orders');
 * const database = new InboxDatabase(this, 'Db');
 * new InboxConsumer(this, 'OrderWorker', {
 *   database,
 *   queue: queue.queue,
 *   consumerName: 'order-worker',
 *   entry: 'src/order-worker.ts', // exports `handler = inbox({ apply: ... })`
 *   maxConcurrency: 5,
 * });
 */
export class InboxConsumer extends Construct {
  /** The consumer's function. */
  public readonly function: nodejs.NodejsFunction;
  /** The function's log group. */
  public readonly logGroup: logs.LogGroup;
  /** The SQS event source of the function. */
  public readonly eventSource: SqsEventSource;
  /** The consumer name (the `service` dimension of its metrics). */
  public readonly consumerName: string;
  /** The queue it consumes. */
  public readonly queue: sqs.IQueue;
  /** The database of its inbox table. */
  public readonly database: InboxDatabase;
  /** The dead-letter queue of `queue`, when it is defined in this app. */
  public readonly deadLetterQueue?: sqs.IQueue;
  readonly #redeliveryWindow: Duration | undefined;

  constructor(scope: Construct, id: string, props: InboxConsumerProps) {
    super(scope, id);
    if (props.consumerName.length === 0 && !Token.isUnresolved(props.consumerName)) {
      throw new Error(`InboxConsumer ${this.node.path}: \`consumerName\` is empty. Fix: name the consumer, e.g. 'order-worker'.`);
    }
    this.consumerName = props.consumerName;
    this.queue = props.queue;
    this.database = props.database;
    this.#redeliveryWindow = props.redeliveryWindow;
    const deadLetterQueue = (props.queue as Partial<sqs.Queue>).deadLetterQueue?.queue;
    if (deadLetterQueue !== undefined) this.deadLetterQueue = deadLetterQueue;

    const timeout = props.timeout ?? Duration.seconds(30);
    const batchSize = props.batchSize ?? 10;
    const facts = queueFacts(props.queue);
    // Checked at synth, not now, so that later changes to the queue (escape hatches) are seen too.
    addInvariants(this, () => {
      const queue = queueFacts(props.queue);
      return [
        ...checkFifoDeadLetterQueue(queue),
        ...checkFifoBatchSize({ fifo: queue.fifo, batchSize }),
        ...checkFifoBatchingWindow({ fifo: queue.fifo, maxBatchingWindow: props.maxBatchingWindow }),
        ...checkVisibilityTimeout({
          visibilityTimeoutSeconds: queue.visibilityTimeoutSeconds,
          functionTimeoutSeconds: durationSeconds(timeout),
        }),
        ...this.#nameViolations(),
      ];
    });

    const fn = new InboxFunction(this, 'Handler', {
      entry: props.entry,
      handler: props.handler ?? 'handler',
      timeout,
      memorySize: props.memorySize ?? 512,
      description: `sqs-inbox consumer ${props.consumerName}`,
      environment: {
        ...props.environment,
        INBOX_RESOURCE_ARN: props.database.cluster.clusterArn,
        INBOX_SECRET_ARN: props.database.secret.secretArn,
        INBOX_DATABASE: props.database.databaseName,
        INBOX_CONSUMER: props.consumerName,
        POWERTOOLS_METRICS_NAMESPACE: INBOX_METRICS_NAMESPACE,
        POWERTOOLS_SERVICE_NAME: props.consumerName,
      },
      ...(props.runtime === undefined ? {} : { runtime: props.runtime }),
      ...(props.logRetention === undefined ? {} : { logRetention: props.logRetention }),
    });
    this.function = fn.function;
    this.logGroup = fn.logGroup;
    props.database.grantDataApiAccess(this.function);

    // An invalid FIFO setting is reported with its fix by the invariants at synth (so synth still fails);
    // keep CDK's own eager checks from throwing first, alone and without the fix.
    this.eventSource = new SqsEventSource(props.queue, {
      batchSize: facts.fifo ? Math.min(batchSize, FIFO_MAX_BATCH_SIZE) : batchSize,
      maxConcurrency: props.maxConcurrency ?? 5,
      reportBatchItemFailures: true,
      ...(props.maxBatchingWindow !== undefined && !facts.fifo ? { maxBatchingWindow: props.maxBatchingWindow } : {}),
    });
    this.function.addEventSource(this.eventSource);
  }

  /**
   * The longest time after sending that the queue can still deliver a message to this consumer, in seconds;
   * `undefined` when a retention is an unresolved token.
   */
  public get redeliveryWindowSeconds(): number | undefined {
    if (this.#redeliveryWindow !== undefined) return durationSeconds(this.#redeliveryWindow);
    return redeliveryWindowSeconds(queueFacts(this.queue));
  }

  /**
   * Grants the Data API on this consumer's database to another principal (for example a function
   * that reads what the consumer wrote).
   */
  public grantDataApiAccess(grantee: iam.IGrantable): void {
    this.database.grantDataApiAccess(grantee);
  }

  /** Only the later consumer of a clashing pair reports, so each clash appears once. */
  #nameViolations(): InvariantViolation[] {
    if (Token.isUnresolved(this.consumerName)) return [];
    const earlier: string[] = [];
    for (const other of this.node.root.node.findAll()) {
      if (other === this) break;
      if (
        other instanceof InboxConsumer &&
        other.consumerName === this.consumerName &&
        other.database.tableKey === this.database.tableKey
      ) {
        earlier.push(other.node.path);
      }
    }
    return checkConsumerNameUnique({
      consumerName: this.consumerName,
      table: this.database.tableDescription,
      otherConsumerPaths: earlier,
    });
  }
}
