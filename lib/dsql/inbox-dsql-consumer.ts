import { Duration } from 'aws-cdk-lib';
import type { CustomResource } from 'aws-cdk-lib';
import type { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { INBOX_METRICS_NAMESPACE, validateConsumerName } from '../consumer/inbox-consumer.js';
import type { InboxConsumerProps } from '../consumer/inbox-consumer.js';
import { InboxFunction } from '../consumer/inbox-function.js';
import { defaultConsumerRole } from '../database/database-grants.js';
import type { InboxDsqlDatabase } from './inbox-dsql-database.js';
import { addInvariants } from '../invariants.js';
import type { RedeliveryWindowSource } from '../invariants.js';
import type { ConsumerSource } from '../sources/source.js';
import { sqsSource } from '../sources/sqs.js';
import { destinationEnvironment, distinctQueues, grantSendMessage, outboxRelayViolations, validateDestinations } from '../outbox/outbox-destinations.js';
import type { OutboxDestinations } from '../outbox/outbox-destinations.js';
import { INBOX_ENV } from '../../lambda/inbox/contract.js';

/** What an InboxDsqlConsumer takes as InboxConsumer does, with the same meaning and defaults. */
type SharedConsumerProps = Pick<
  InboxConsumerProps,
  | 'consumerName'
  | 'entry'
  | 'handler'
  | 'timeout'
  | 'memorySize'
  | 'runtime'
  | 'batchSize'
  | 'maxConcurrency'
  | 'databaseGrants'
  | 'destinations'
  | 'environment'
  | 'logRetention'
>;

/**
 * Props for {@link InboxDsqlConsumer}: the DSQL cluster and the queue, and what InboxConsumer also takes
 * (`consumerName`, `entry`, `handler`, `timeout`, `memorySize`, `runtime`, `batchSize`, `maxConcurrency`,
 * `databaseGrants`, `destinations`, `environment`, `logRetention`), with the same defaults. A consumer with
 * `destinations` needs an InboxOutboxRelay over the same cluster that lists it in `consumers`, as on Aurora.
 */
export interface InboxDsqlConsumerProps extends SharedConsumerProps {
  /** The DSQL cluster whose inbox table records what this consumer has applied. */
  readonly database: InboxDsqlDatabase;
  /** The SQS queue to consume. */
  readonly queue: sqs.IQueue;
  /**
   * The dead-letter queue of `queue`, for the dead-letter alarm (InboxAlarms). Pass it when `queue` is imported.
   * @default - the dead-letter queue configured on `queue` when it is a `sqs.Queue` defined in this app, else none
   */
  readonly deadLetterQueue?: sqs.IQueue | undefined;
  /**
   * The consumer's own database role, mapped to the function's IAM role: it may claim rows in the inbox plus
   * `databaseGrants`. Unique per cluster.
   * @default 'inbox_consumer_' + `consumerName` in lower case, other characters as '_'
   */
  readonly databaseRole?: string | undefined;
}

/**
 * Your handler on Aurora DSQL: a function on an SQS queue (partial batch responses) that signs in to the
 * cluster as its own database role with an IAM token (`dsql:DbConnect` on this cluster only, never admin), and is
 * told where as `INBOX_DSQL_ENDPOINT`, `INBOX_DSQL_REGION` and `INBOX_DSQL_USER`, which `dsqlFromEnvironment()`
 * from `sqs-inbox/dsql` reads. No VPC: DSQL is reached over its public, IAM-authenticated endpoint.
 *
 * @example
 * new InboxDsqlConsumer(this, 'Worker', { database, queue: queue.queue, consumerName: 'orders', entry: 'src/worker.ts' });
 */
export class InboxDsqlConsumer extends Construct {
  /** The consumer's function. */
  public readonly function: nodejs.NodejsFunction;
  /** The function's log group. */
  public readonly logGroup: logs.LogGroup;
  /** The consumer name. */
  public readonly consumerName: string;
  /** The DSQL cluster it claims in. */
  public readonly database: InboxDsqlDatabase;
  /** Its database role. */
  public readonly databaseRole: string;
  /** The custom resource that maps its role; the function depends on it. */
  public readonly roleMapping: CustomResource;
  /** The event source. */
  public readonly eventSource: SqsEventSource;
  /** What it consumes (InboxAlarms reads it): always `sqs`. */
  public readonly source = 'sqs' as const;
  /** The queue it consumes. */
  public readonly queue: sqs.IQueue;
  /** The dead-letter queue of `queue`, when known. */
  public readonly deadLetterQueue?: sqs.IQueue;
  /** The queues its outbox may send to, by name (`INBOX_DESTINATIONS`); empty when it sends nothing. */
  public readonly destinations: OutboxDestinations;
  readonly #source: ConsumerSource;

  constructor(scope: Construct, id: string, props: InboxDsqlConsumerProps) {
    super(scope, id);
    validateConsumerName(this.node.path, props.consumerName);
    validateDestinations(`InboxDsqlConsumer ${this.node.path}`, props.destinations, props.environment);
    this.destinations = { ...props.destinations };
    this.consumerName = props.consumerName;
    this.database = props.database;
    this.queue = props.queue;
    this.databaseRole = props.databaseRole ?? defaultConsumerRole(props.consumerName);
    const fn = new InboxFunction(this, 'Handler', {
      entry: props.entry,
      handler: props.handler ?? 'handler',
      timeout: props.timeout ?? Duration.seconds(30),
      memorySize: props.memorySize ?? 512,
      description: `sqs-inbox consumer ${props.consumerName} (Aurora DSQL)`,
      environment: {
        ...props.environment,
        ...props.database.connectionEnvironment(this.databaseRole),
        [INBOX_ENV.CONSUMER]: props.consumerName,
        [INBOX_ENV.SOURCE]: 'sqs',
        [INBOX_ENV.METRICS_NAMESPACE]: INBOX_METRICS_NAMESPACE,
        [INBOX_ENV.SERVICE_NAME]: props.consumerName,
        ...destinationEnvironment(this, this.destinations),
      },
      ...(props.runtime === undefined ? {} : { runtime: props.runtime }),
      ...(props.logRetention === undefined ? {} : { logRetention: props.logRetention }),
    });
    this.function = fn.function;
    this.logGroup = fn.logGroup;
    this.roleMapping = props.database.addRole(props.consumerName.replace(/[^A-Za-z0-9]/g, ''), {
      roleName: this.databaseRole,
      grantee: fn.function,
      purpose: 'consumer',
      grants: props.databaseGrants ?? [],
      consumer: props.consumerName,
    });
    // The first batch must find the role mapped to the function's IAM role.
    this.function.node.addDependency(this.roleMapping);
    // The queue's invariants (FIFO limits, visibility timeout, a FIFO dead-letter queue) as on Aurora, at synth.
    const source = (this.#source = sqsSource(this.function, {
      path: this.node.path,
      queue: props.queue,
      deadLetterQueue: props.deadLetterQueue,
      batchSize: props.batchSize,
      maxConcurrency: props.maxConcurrency,
      timeout: props.timeout ?? Duration.seconds(30),
    }));
    this.eventSource = source.eventSource as SqsEventSource;
    if (source.deadLetterQueue !== undefined) this.deadLetterQueue = source.deadLetterQueue;
    for (const queue of distinctQueues(Object.values(this.destinations))) grantSendMessage(this.function, queue);
    addInvariants(this, () => [...source.violations(), ...outboxRelayViolations(`InboxDsqlConsumer ${this.node.path}`, this)]);
  }

  /** How long SQS may still redeliver a message after its first delivery, in seconds: for the cleanup's retention check. */
  public get redeliveryWindowSeconds(): number | undefined {
    return this.#source.redeliveryWindowSeconds();
  }

  /** What makes up the redelivery window, and how to shorten it: for the cleanup's retention check. */
  public get redeliveryWindowSource(): RedeliveryWindowSource {
    return this.#source.window;
  }
}
