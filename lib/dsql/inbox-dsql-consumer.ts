import { Duration } from 'aws-cdk-lib';
import type { CustomResource } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as kinesis from 'aws-cdk-lib/aws-kinesis';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { validateConsumerName } from '../consumer/consumer-name.js';
import type { InboxConsumerProps } from '../consumer/inbox-consumer.js';
import { InboxFunction } from '../consumer/inbox-function.js';
import { defaultConsumerRole } from '../database/database-grants.js';
import type { InboxDsqlDatabase } from './inbox-dsql-database.js';
import { addInvariants } from '../invariants.js';
import { outboxRelayViolations } from '../outbox/inbox-outbox-relay.js';
import { destinationEnvironment, distinctQueues, grantSendMessage, validateDestinations } from '../outbox/outbox-destinations.js';
import { sourceBinder } from '../sources/source.js';
import type { BoundSource, InboxSource } from '../sources/source.js';
import { INBOX_ENV, METRIC_NAMESPACE } from '../../lambda/inbox/contract.js';

/**
 * Props for {@link InboxDsqlConsumer}: the DSQL cluster, and what InboxConsumer also takes (`source`,
 * `consumerName`, `entry`, `handler`, `timeout`, `memorySize`, `runtime`, `databaseGrants`, `destinations`,
 * `environment`, `logRetention`), with the same meaning and defaults. A consumer with `destinations` needs an
 * InboxOutboxRelay over the same cluster that lists it in `consumers`, as on Aurora.
 */
export interface InboxDsqlConsumerProps
  extends Pick<
    InboxConsumerProps,
    'source' | 'consumerName' | 'entry' | 'handler' | 'timeout' | 'memorySize' | 'runtime' | 'databaseGrants' | 'destinations' | 'environment' | 'logRetention'
  > {
  /** The DSQL cluster whose inbox table records what this consumer has applied. */
  readonly database: InboxDsqlDatabase;
  /**
   * The consumer's own database role, mapped to the function's IAM role: it may claim rows in the inbox plus
   * `databaseGrants`. Unique per cluster.
   * @default 'inbox_consumer_' + `consumerName` in lower case, other characters as '_'
   */
  readonly databaseRole?: string | undefined;
}

/**
 * Your handler on Aurora DSQL: a function on its `source`, as InboxConsumer binds it (an SQS queue, a stream or a
 * Kafka topic, with the same settings and checks), that signs in to the cluster as its own database role with an IAM
 * token (`dsql:DbConnect` on this cluster only, never admin), and is told where as `INBOX_DSQL_ENDPOINT`,
 * `INBOX_DSQL_REGION` and `INBOX_DSQL_USER`, which `dsqlFromEnvironment()` from `sqs-inbox/dsql` reads. No VPC:
 * DSQL is reached over its public, IAM-authenticated endpoint.
 *
 * @example
 * new InboxDsqlConsumer(this, 'Worker', { database, source: InboxSources.sqs(queue.queue), consumerName: 'orders', entry: 'src/worker.ts' });
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
  /** What it consumes, as given; its `kind` is the handler's `INBOX_SOURCE` and its metrics' `source`. */
  public readonly source: InboxSource;
  /** The event source of the function. */
  public readonly eventSource: lambda.IEventSource;
  /** The event source mapping's CloudFormation resource (an escape hatch; the invariants read it at synth). */
  public readonly eventSourceMapping: lambda.CfnEventSourceMapping;
  /** The queue it consumes, when its source is SQS. */
  public readonly queue?: sqs.IQueue;
  /** The Kinesis stream it consumes. */
  public readonly stream?: kinesis.IStream;
  /** The DynamoDB table whose stream it consumes. */
  public readonly table?: dynamodb.ITable;
  /** The dead-letter queue of its queue when known, or a stream's on-failure queue. */
  public readonly deadLetterQueue?: sqs.IQueue;
  /** Whether the handler reports failed records in its response (Kafka: the source's `reportBatchItemFailures`). */
  public readonly reportBatchItemFailures: boolean;
  /** The queues its outbox may send to, by name (`INBOX_DESTINATIONS`); empty when it sends nothing. */
  public readonly destinations: Readonly<Record<string, sqs.IQueue>>;
  readonly #bound: BoundSource;

  constructor(scope: Construct, id: string, props: InboxDsqlConsumerProps) {
    super(scope, id);
    const subject = `InboxDsqlConsumer ${this.node.path}`;
    validateConsumerName(subject, props.consumerName);
    validateDestinations(subject, props.destinations, props.environment);
    const source = sourceBinder(subject, props.source);
    this.source = source;
    this.destinations = { ...props.destinations };
    this.consumerName = props.consumerName;
    this.database = props.database;
    if (source.queue !== undefined) this.queue = source.queue;
    if (source.stream !== undefined) this.stream = source.stream;
    if (source.table !== undefined) this.table = source.table;
    this.reportBatchItemFailures = source.reportBatchItemFailures;
    this.databaseRole = props.databaseRole ?? defaultConsumerRole(props.consumerName);
    const timeout = props.timeout ?? Duration.seconds(30);
    const fn = new InboxFunction(this, 'Handler', {
      entry: props.entry,
      handler: props.handler ?? 'handler',
      timeout,
      memorySize: props.memorySize ?? 512,
      description: `sqs-inbox consumer ${props.consumerName} (Aurora DSQL)`,
      environment: {
        ...props.environment,
        ...props.database.connectionEnvironment(this.databaseRole),
        [INBOX_ENV.CONSUMER]: props.consumerName,
        ...source.environment(),
        [INBOX_ENV.METRICS_NAMESPACE]: METRIC_NAMESPACE,
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
    // The source's invariants (an SQS queue's FIFO limits and visibility timeout, a stream's retries) as on Aurora.
    const bound = (this.#bound = source.bind({ consumer: this, subject, fn: this.function, consumerName: props.consumerName, timeout }));
    this.eventSource = bound.eventSource;
    this.eventSourceMapping = bound.eventSourceMapping;
    if (bound.deadLetterQueue !== undefined) this.deadLetterQueue = bound.deadLetterQueue;
    for (const queue of distinctQueues(Object.values(this.destinations))) grantSendMessage(this.function, queue);
    addInvariants(this, () => [...bound.violations(), ...outboxRelayViolations(subject, this)]);
  }

  /** How long the source may still deliver a message after it was sent, in seconds: for the cleanup's retention check. */
  public get redeliveryWindowSeconds(): number | undefined {
    return this.#bound.redeliveryWindowSeconds();
  }

  /** The Kafka consumer group the mapping joins, for a Kafka source. */
  public get kafkaConsumerGroupId(): string | undefined {
    return this.#bound.kafkaConsumerGroupId;
  }
}
