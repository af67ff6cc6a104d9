import { Duration, Token } from 'aws-cdk-lib';
import type * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { TRANSACTION_ACTIONS } from './data-api-access.js';
import type { DataApiAction } from './data-api-access.js';
import { defaultConsumerRole } from './database-grants.js';
import type { InboxTableGrant } from './database-grants.js';
import type { InboxDatabase } from './inbox-database.js';
import { InboxDatabaseRole } from './inbox-database-role.js';
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
import type { InvariantViolation, QueueFacts } from './invariants.js';

/** The metric namespace the runtime's embedded metrics use. */
export const INBOX_METRICS_NAMESPACE = 'SqsInbox';

/** The consumer names the runtime's `inbox()` accepts. */
const CONSUMER_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

/** Props for {@link InboxConsumer}. */
export interface InboxConsumerProps {
  /** The database whose inbox table records what this consumer has applied. */
  readonly database: InboxDatabase;
  /** The queue to consume. */
  readonly queue: sqs.IQueue;
  /**
   * The dead-letter queue of `queue`, for the dead-letter alarm and the FIFO check. Pass it when `queue` is
   * imported (e.g. `InboxQueue({ queue, deadLetterQueue }).deadLetterQueue`): an imported queue's redrive
   * policy is not visible at synth.
   * @default - the dead-letter queue configured on `queue` when it is a `sqs.Queue` defined in this app, else none
   */
  readonly deadLetterQueue?: sqs.IQueue | undefined;
  /**
   * The consumer's name: part of every inbox key, so it must be unique per table and must never change
   * once messages were processed (a new name would process them again). 1 to 128 characters: letters,
   * digits, `.`, `_`, `:` or `-`, starting with a letter or digit (what the runtime accepts).
   * It reaches the handler as `INBOX_CONSUMER`, which `inbox()` uses when its `consumer` option is unset.
   */
  readonly consumerName: string;
  /** Path to your handler's TypeScript entry file, bundled with esbuild. */
  readonly entry: string;
  /**
   * Name of the exported handler in `entry`.
   * @default 'handler'
   */
  readonly handler?: string | undefined;
  /**
   * Function timeout. The queue's visibility timeout must be at least 6 x this.
   * @default Duration.seconds(30)
   */
  readonly timeout?: Duration | undefined;
  /**
   * Function memory in MiB.
   * @default 512
   */
  readonly memorySize?: number | undefined;
  /**
   * Node.js runtime.
   * @default lambda.Runtime.NODEJS_22_X
   */
  readonly runtime?: lambda.Runtime | undefined;
  /**
   * Records per batch (at most 10 on a FIFO queue).
   * @default 10
   */
  readonly batchSize?: number | undefined;
  /**
   * Most concurrent invocations the event source starts (2 to 1000). Keeps a burst from
   * exhausting the database's capacity.
   * @default 5
   */
  readonly maxConcurrency?: number | undefined;
  /**
   * How long the event source waits to fill a batch. Standard queues only.
   * @default - no batching window
   */
  readonly maxBatchingWindow?: Duration | undefined;
  /**
   * The longest time after sending that the queue can still deliver a message to this consumer.
   * The cleanup's retention must exceed it.
   * @default - the queue's retention plus its dead-letter queue's, read from the queue when it is defined in
   * this app; 28 days (SQS's maxima) for an imported queue
   */
  readonly redeliveryWindow?: Duration | undefined;
  /**
   * The consumer's own PostgreSQL role, which its function signs in as (through its own secret). It may
   * claim rows in the inbox (SELECT, INSERT on the inbox and parked tables) plus `databaseGrants`; it cannot
   * drop, alter or create anything, or touch another table. Unique per cluster.
   * @default 'inbox_consumer_' + `consumerName` in lower case, with characters other than letters, digits and '_' as '_'
   */
  readonly databaseRole?: string | undefined;
  /**
   * What the consumer's effect needs on your own tables, granted to its role at deploy (and anything not
   * listed revoked). The tables must exist by then: create them in InboxDatabase `migrations`, or make
   * `consumer.databaseRole.resource` depend on your own migration.
   * @example [{ table: 'public.orders', privileges: ['SELECT', 'INSERT', 'UPDATE'] }]
   * @default [] (the inbox tables only)
   */
  readonly databaseGrants?: readonly InboxTableGrant[] | undefined;
  /**
   * Also allow `rds-data:BatchExecuteStatement`, for a handler that sends statements in batches. Off, the
   * function may call only what one transaction per record needs: BeginTransaction, ExecuteStatement,
   * CommitTransaction and RollbackTransaction.
   * @default false
   */
  readonly batchExecute?: boolean | undefined;
  /**
   * Extra environment variables for your handler.
   * @default {}
   */
  readonly environment?: Readonly<Record<string, string>> | undefined;
  /**
   * Retention of the function's log group.
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly logRetention?: logs.RetentionDays | undefined;
}

/**
 * Your SQS handler as a Lambda function that applies each message exactly once through the inbox:
 * bundled from `entry`, triggered by `queue` with partial batch responses, signing in to `database` as its
 * own PostgreSQL role (`databaseRole`, with `databaseGrants` for its effect) through the Data API and
 * nothing more, and told where the inbox lives through its environment (`INBOX_RESOURCE_ARN`,
 * `INBOX_SECRET_ARN` = the role's secret, `INBOX_DATABASE`, `INBOX_CONSUMER`).
 *
 * @example
 * const queue = new InboxQueue(this, 'Orders');
 * const database = new InboxDatabase(this, 'Db');
 * new InboxConsumer(this, 'OrderWorker', {
 *   database,
 *   queue: queue.queue,
 *   deadLetterQueue: queue.deadLetterQueue,
 *   consumerName: 'order-worker', // set as INBOX_CONSUMER, which inbox() reads when `consumer` is unset
 *   entry: 'src/order-worker.ts', // exports `handler = inbox({ apply: async (tx, message) => { ... } })`
 *   databaseGrants: [{ table: 'public.orders', privileges: ['SELECT', 'INSERT', 'UPDATE'] }],
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
  /** The dead-letter queue of `queue`: the one passed in, or the one configured on a `queue` defined in this app. */
  public readonly deadLetterQueue?: sqs.IQueue;
  /** The consumer's own database role and its secret. */
  public readonly databaseRole: InboxDatabaseRole;
  /** The Data API actions the function may call. */
  public readonly dataApiActions: readonly DataApiAction[];
  readonly #redeliveryWindow: Duration | undefined;

  constructor(scope: Construct, id: string, props: InboxConsumerProps) {
    super(scope, id);
    validateConsumerName(this.node.path, props.consumerName);
    this.consumerName = props.consumerName;
    this.queue = props.queue;
    this.database = props.database;
    this.#redeliveryWindow = props.redeliveryWindow;
    const configured = (props.queue as Partial<sqs.Queue>).deadLetterQueue?.queue;
    if (props.deadLetterQueue !== undefined && configured !== undefined && props.deadLetterQueue !== configured) {
      throw new Error(
        `InboxConsumer ${this.node.path}: \`deadLetterQueue\` is not the dead-letter queue configured on \`queue\`. ` +
          'Fix: remove `deadLetterQueue` (it is read from the queue), or pass the one the queue redrives to.',
      );
    }
    const deadLetterQueue = props.deadLetterQueue ?? configured;
    if (deadLetterQueue !== undefined) this.deadLetterQueue = deadLetterQueue;

    const timeout = props.timeout ?? Duration.seconds(30);
    const batchSize = props.batchSize ?? 10;
    const facts = this.#queueFacts();
    // Checked at synth, not now, so that later changes to the queue (escape hatches) are seen too.
    addInvariants(this, () => {
      const queue = this.#queueFacts();
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

    this.databaseRole = new InboxDatabaseRole(this, 'DatabaseRole', {
      database: props.database,
      roleName: props.databaseRole ?? defaultConsumerRole(props.consumerName),
      purpose: 'consumer',
      label: `consumer ${props.consumerName}`,
      grants: props.databaseGrants ?? [],
    });
    this.dataApiActions = props.batchExecute === true ? [...TRANSACTION_ACTIONS, 'BatchExecuteStatement'] : TRANSACTION_ACTIONS;

    const fn = new InboxFunction(this, 'Handler', {
      entry: props.entry,
      handler: props.handler ?? 'handler',
      timeout,
      memorySize: props.memorySize ?? 512,
      description: `sqs-inbox consumer ${props.consumerName}`,
      environment: {
        ...props.environment,
        INBOX_RESOURCE_ARN: props.database.cluster.clusterArn,
        INBOX_SECRET_ARN: this.databaseRole.secret.secretArn,
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
    this.databaseRole.grantDataApi(this.function, this.dataApiActions);
    // The first batch must find the role there, with its password and grants.
    this.function.node.addDependency(this.databaseRole.resource);

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
    return redeliveryWindowSeconds(this.#queueFacts());
  }

  /** The queue's facts, with the dead-letter queue passed in when the queue itself does not name one. */
  #queueFacts(): QueueFacts {
    const facts = queueFacts(this.queue);
    if (facts.deadLetter !== undefined || this.deadLetterQueue === undefined) return facts;
    return { ...facts, deadLetter: queueFacts(this.deadLetterQueue) };
  }

  /**
   * Lets another principal sign in as this consumer's role (for example a function that replays its parked
   * messages): the same Data API actions, this role's secret, this role's privileges.
   */
  public grantDataApiAccess(grantee: iam.IGrantable): void {
    this.databaseRole.grantDataApi(grantee, this.dataApiActions);
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

/** The runtime refuses other names at cold start; refusing them here moves that failure to synth. */
function validateConsumerName(path: string, name: string): void {
  if (Token.isUnresolved(name) || CONSUMER_NAME_PATTERN.test(name)) return;
  const suggestion = name.replace(/[^A-Za-z0-9._:-]+/g, '-').replace(/^[^A-Za-z0-9]+/, '').slice(0, 128);
  throw new Error(
    `InboxConsumer ${path}: \`consumerName\` ${name.length === 0 ? 'is empty' : `'${name}' is not a valid consumer name`}: ` +
      "it must be 1 to 128 letters, digits, '.', '_', ':' or '-', starting with a letter or digit. " +
      `Fix: use e.g. '${suggestion.length > 0 ? suggestion : 'order-worker'}'.`,
  );
}
