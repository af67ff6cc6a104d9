import { Duration, Token } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import type * as iam from 'aws-cdk-lib/aws-iam';
import type * as kinesis from 'aws-cdk-lib/aws-kinesis';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import type { ProvisionedPollerConfig } from 'aws-cdk-lib/aws-lambda-event-sources';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { TRANSACTION_ACTIONS } from '../database/data-api-access.js';
import type { DataApiAction } from '../database/data-api-access.js';
import { defaultConsumerRole } from '../database/database-grants.js';
import type { InboxTableGrant } from '../database/database-grants.js';
import type { InboxDatabase } from '../database/inbox-database.js';
import type { InboxDatabaseProxy } from '../database/inbox-database-proxy.js';
import { InboxDatabaseRole } from '../database/inbox-database-role.js';
import { PROXY_PORT } from '../database/inbox-database-proxy.js';
import { InboxFunction } from './inbox-function.js';
import { addInvariants, checkConsumerNameUnique, durationSeconds } from '../invariants.js';
import type { InvariantViolation, RedeliveryWindowSource } from '../invariants.js';
import { destinationEnvironment, distinctQueues, grantSendMessage, outboxRelayViolations, validateDestinations } from '../outbox/outbox-destinations.js';
import type { OutboxDestinations } from '../outbox/outbox-destinations.js';
import { dynamoDbSource } from '../sources/dynamodb.js';
import { kafkaMode, kafkaSource } from '../sources/kafka.js';
import type { InboxKafkaSource, KafkaMode } from '../sources/kafka.js';
import { kinesisSource } from '../sources/kinesis.js';
import { mappingOf, streamSettings } from '../sources/source.js';
import type { ConsumerSource } from '../sources/source.js';
import { sqsSource } from '../sources/sqs.js';
import {
  checkBatchFitsTimeout,
  checkFailedRecordsKept,
  checkKafkaConsumerGroupUnique,
  checkKafkaProvisionedMode,
  checkKafkaTimeout,
  checkPartialBatchResponse,
  checkUnboundedStreamRetries,
  mappingFacts,
} from '../sources/stream-invariants.js';
import type { InboxSourceKind } from '../sources/stream-invariants.js';
import { CONSUMER_NAME_PATTERN, CONSUMER_NAME_RULE, INBOX_ENV, METRIC_NAMESPACE } from '../../lambda/inbox/contract.js';
import { InboxConstructError } from '../errors.js';

/** The metric namespace the runtime's embedded metrics use. */
export const INBOX_METRICS_NAMESPACE = METRIC_NAMESPACE;

/**
 * The least time one record of a stream batch is assumed to take: the four Data API calls of a per-record
 * transaction (BeginTransaction, claim, effect, CommitTransaction) at 10 ms each, an optimistic floor.
 */
export const DEFAULT_MIN_RECORD_DURATION = Duration.millis(40);

/** Props for {@link InboxConsumer}: one source (`queue`, `stream`, `table` or `kafka`), the database, the handler. */
export interface InboxConsumerProps {
  /** The database whose inbox table records what this consumer has applied. */
  readonly database: InboxDatabase;
  /**
   * An SQS queue to consume. Exactly one of `queue`, `stream`, `table` and `kafka`.
   * @default - none
   */
  readonly queue?: sqs.IQueue | undefined;
  /**
   * A Kinesis data stream to consume. Exactly one of `queue`, `stream`, `table` and `kafka`.
   * @default - none
   */
  readonly stream?: kinesis.IStream | undefined;
  /**
   * A DynamoDB table whose stream to consume; it must have a stream. Exactly one of `queue`, `stream`, `table`
   * and `kafka`.
   * @default - none
   */
  readonly table?: dynamodb.ITable | undefined;
  /**
   * A Kafka topic to consume, on Amazon MSK or self-managed brokers. Exactly one of `queue`, `stream`, `table`
   * and `kafka`.
   * @default - none
   */
  readonly kafka?: InboxKafkaSource | undefined;
  /**
   * SQS: the dead-letter queue of `queue`, for the dead-letter alarm and the FIFO check. Pass it when `queue` is
   * imported (e.g. `InboxQueue({ queue, deadLetterQueue }).deadLetterQueue`): an imported queue's redrive policy is
   * not visible at synth.
   * Streams (`stream`, `table`, `kafka`): the queue that receives the records the event source mapping discards
   * (its on-failure destination), watched by the dead-letter alarm.
   * @default - SQS: the dead-letter queue configured on `queue` when it is a `sqs.Queue` defined in this app, else
   * none; streams: a new queue, encrypted, TLS only, keeping messages 14 days, unless `onFailure` names another destination
   */
  readonly deadLetterQueue?: sqs.IQueue | undefined;
  /**
   * Streams only: an on-failure destination other than a queue (`S3OnFailureDestination`, which also keeps the
   * records themselves, `SnsDlq`, or `KafkaDlq` for Kafka). Not watched by the dead-letter alarm.
   * @default - the `deadLetterQueue`
   */
  readonly onFailure?: lambda.IEventSourceDlq | undefined;
  /**
   * The consumer's name: part of every inbox key, so it must be unique per table and must never change
   * once messages were processed (a new name would process them again). 1 to 128 characters: letters,
   * digits, `.`, `_`, `:` or `-`, starting with a letter or digit (what the runtime accepts).
   * It reaches the handler as `INBOX_CONSUMER`, which `inbox()` uses when its `consumer` option is unset.
   * The consumer's database role sees and writes only this name's claims and parked messages (row-level
   * security), so a handler whose `consumer` option names another consumer has every claim refused.
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
   * Function timeout. An SQS queue's visibility timeout must be at least 6 x this; Kafka allows at most 14 minutes.
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
   * Records per batch (at most 10 on a FIFO queue, 10,000 on a stream).
   * @default 10 for SQS; 100 for streams (Lambda's default)
   */
  readonly batchSize?: number | undefined;
  /**
   * SQS only: most concurrent invocations the event source starts (2 to 1000). Keeps a burst from exhausting the
   * database's capacity. A stream's concurrency is its shards x `parallelizationFactor`, or a Kafka topic's partitions.
   * Not with `provisionedPollers`, whose ceiling is `maximumPollers` x 10.
   * @default 5 (none in provisioned mode)
   */
  readonly maxConcurrency?: number | undefined;
  /**
   * SQS only: provisioned mode, dedicated event pollers that stay ready (billed per poller), instead of
   * `maxConcurrency`, which Lambda does not take beside it. Each poller runs up to 10 concurrent invocations, so
   * `maximumPollers` x 10 is the ceiling that protects the database: it must be set, and synth checks it against the
   * function's reserved concurrency and the cluster's connections (each invocation holds up to 10 transactions).
   * `minimumPollers` 2 to 200 (default 2), `maximumPollers` 2 to 2,000.
   * @example { minimumPollers: 2, maximumPollers: 4 } // at most 40 concurrent invocations
   * @default - standard mode, with `maxConcurrency`
   */
  readonly provisionedPollers?: ProvisionedPollerConfig | undefined;
  /**
   * How long the event source waits to fill a batch. Standard queues and streams only.
   * @default - no batching window (Kafka: Lambda's 500 ms)
   */
  readonly maxBatchingWindow?: Duration | undefined;
  /**
   * The longest time after sending that the source can still deliver a message to this consumer.
   * The cleanup's retention must exceed it. Not for `kafka`, whose window is `kafka.topicRetention`.
   * @default - SQS: the queue's retention plus its dead-letter queue's, read from the queue when it is defined in
   * this app, 28 days (SQS's maxima) for an imported queue; Kinesis: the stream's retention period, 365 days
   * (Kinesis' maximum) for an imported stream; DynamoDB Streams: 24 hours
   */
  readonly redeliveryWindow?: Duration | undefined;
  /**
   * Streams only: where a new event source mapping starts reading.
   * @default lambda.StartingPosition.TRIM_HORIZON: every record the stream holds, none skipped
   */
  readonly startingPosition?: lambda.StartingPosition | undefined;
  /**
   * Kinesis and Kafka only: the Unix time in seconds to start from with `StartingPosition.AT_TIMESTAMP`.
   * @default - none
   */
  readonly startingPositionTimestamp?: number | undefined;
  /**
   * Streams only: retries of a failing batch (from its first failed record) before its records go to the
   * on-failure destination. -1 retries without bound, until the stream drops the record.
   * @default 10: the bound Lambda itself applies to Kafka with an on-failure destination; the destination keeps
   * what is discarded, and the inbox makes a replay from the stream safe
   */
  readonly retryAttempts?: number | undefined;
  /**
   * Streams only: split a batch in two when the invocation fails as a whole (a crash or a timeout), to isolate
   * the record that causes it.
   * @default true
   */
  readonly bisectBatchOnError?: boolean | undefined;
  /**
   * Streams only: records older than this are discarded to the on-failure destination (60 seconds to 7 days).
   * @default - no limit
   */
  readonly maxRecordAge?: Duration | undefined;
  /**
   * Kinesis and DynamoDB Streams only: batches of one shard processed at once (1 to 10); records of one partition
   * key stay in order.
   * @default 1
   */
  readonly parallelizationFactor?: number | undefined;
  /**
   * Streams only: the least time one record takes to claim and apply, used to check at synth that a full batch
   * of one shard or partition, whose records run one after another, can start within the function timeout.
   * @default Duration.millis(40): the four Data API calls of a per-record transaction at 10 ms each
   */
  readonly minRecordDuration?: Duration | undefined;
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
   * PostgreSQL's `statement_timeout` for every session of the consumer's role: the server-side bound on one
   * statement, which the Data API has no per-call setting for. Keep it below the handler's `callTimeoutMs`
   * (10 s by default): a single-statement mode statement (`statement`, `statementBatch`) held on the server
   * past the client's timeout would otherwise still commit after its record was reported failed (on a FIFO
   * queue, possibly after the group's next message). The transaction modes bound their own statements too.
   * @default Duration.seconds(8)
   */
  readonly databaseStatementTimeout?: Duration | undefined;
  /**
   * Reach the database over the PostgreSQL wire through this RDS Proxy instead of the Data API. The function then
   * runs in the proxy's VPC with a security group that may reach the proxy's port and nothing else, may
   * `rds-db:connect` through the proxy as its own `databaseRole` only (IAM authentication, TLS required), and is
   * told where to connect as `INBOX_PG_HOST`, `INBOX_PG_PORT`, `INBOX_PG_DATABASE`, `INBOX_PG_USER` and
   * `INBOX_PG_IAM_AUTH=true`, which `postgresFromEnvironment()` from `sqs-inbox/postgres` reads. It gets no Data API
   * permission and cannot read its role's secret (the proxy signs in with it).
   * @default - the Data API
   */
  readonly proxy?: InboxDatabaseProxy | undefined;
  /**
   * Also allow `rds-data:BatchExecuteStatement`, for a handler that sends statements in batches. Off, the
   * function may call only what one transaction per record needs: BeginTransaction, ExecuteStatement,
   * CommitTransaction and RollbackTransaction.
   * @default false
   */
  readonly batchExecute?: boolean | undefined;
  /**
   * The queues the handler's outbox may send to, by the name `tx.send({ to: name })` uses (`sqsOutbox()` from
   * `sqs-inbox/outbox`). The function may `sqs:SendMessage` to each (and use its customer managed KMS key to encrypt),
   * nothing more, and is told the names as `INBOX_DESTINATIONS` (JSON of name -> queue URL). A name is any non-empty
   * string that is not a URL (the runtime sends a `to` starting with `https://` as it is). Any mix of standard and
   * FIFO queues, in any account the queue's own policy admits, the consumer's own queue included.
   * The rows a crashed invocation leaves unsent are sent by an {@link InboxOutboxRelay} that lists this consumer in
   * its `consumers`: synth fails without one.
   * @example { invoices: invoicesQueue.queue }
   * @default {} (no INBOX_DESTINATIONS, no SQS send permission)
   */
  readonly destinations?: OutboxDestinations | undefined;
  /**
   * Extra environment variables for your handler. `INBOX_DESTINATIONS` is refused: pass `destinations`, which
   * also grants the sends.
   * @default {}
   */
  readonly environment?: Readonly<Record<string, string>> | undefined;
  /**
   * Retention of the function's log group.
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly logRetention?: logs.RetentionDays | undefined;
}

/** The props each source reads: refused next to the others, so a prop never silently does nothing. */
const SOURCE_PROPS = ['queue', 'stream', 'table', 'kafka'] as const satisfies ReadonlyArray<keyof InboxConsumerProps>;
const SQS_ONLY_PROPS = ['maxConcurrency', 'provisionedPollers'] as const satisfies ReadonlyArray<keyof InboxConsumerProps>;
const STREAM_ONLY_PROPS = [
  'onFailure',
  'startingPosition',
  'startingPositionTimestamp',
  'retryAttempts',
  'bisectBatchOnError',
  'maxRecordAge',
  'parallelizationFactor',
  'minRecordDuration',
] as const satisfies ReadonlyArray<keyof InboxConsumerProps>;

/**
 * Your handler as a Lambda function that applies each message exactly once through the inbox, triggered by one
 * source: an SQS `queue`, a Kinesis `stream`, a DynamoDB `table`'s stream or a `kafka` topic (MSK or self-managed).
 * Every source reports failed records back (partial batch responses; for Kafka in provisioned mode); a stream also
 * bisects a failing batch, retries it a bounded number of times and keeps what it discards in an on-failure queue.
 * The function signs in to `database` as its own PostgreSQL role (`databaseRole`, with `databaseGrants` for its
 * effect) through the Data API and nothing more, and is told where the inbox lives and what it reads through its
 * environment (`INBOX_RESOURCE_ARN`, `INBOX_SECRET_ARN` = the role's secret, `INBOX_DATABASE`, `INBOX_CONSUMER`,
 * `INBOX_SOURCE`; for Kafka `INBOX_REPORT_BATCH_ITEM_FAILURES`; with `destinations`, `INBOX_DESTINATIONS`, and
 * `sqs:SendMessage` on each of those queues).
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
 *
 * @example
 * // An outbox: tx.send({ to: 'invoices', ... }) in the handler; the relay sends what a crash leaves behind.
 * const invoices = new InboxQueue(this, 'Invoices');
 * const shipper = new InboxConsumer(this, 'Shipper', {
 *   database, queue: queue.queue, consumerName: 'shipper', entry: 'src/shipper.ts',
 *   destinations: { invoices: invoices.queue },
 * });
 * new InboxOutboxRelay(this, 'OutboxRelay', { database, consumers: [shipper] });
 *
 * @example
 * // A Kinesis stream: TRIM_HORIZON, partial batch responses, bisect, 10 retries, an on-failure queue.
 * new InboxConsumer(this, 'Clicks', {
 *   database,
 *   stream: new kinesis.Stream(this, 'ClickStream', { encryption: kinesis.StreamEncryption.MANAGED }),
 *   consumerName: 'clicks',
 *   entry: 'src/clicks.ts', // exports `handler = kinesisInbox({ apply: ... })`
 * });
 */
export class InboxConsumer extends Construct {
  /** The consumer's function. */
  public readonly function: nodejs.NodejsFunction;
  /** The function's log group. */
  public readonly logGroup: logs.LogGroup;
  /** What it consumes: `sqs`, `kinesis`, `dynamodb` or `kafka` (its `INBOX_SOURCE`, and its metrics' `source`). */
  public readonly source: InboxSourceKind;
  /** The event source of the function. */
  public readonly eventSource: lambda.IEventSource;
  /** The event source mapping's CloudFormation resource (an escape hatch; the invariants read it at synth). */
  public readonly eventSourceMapping: lambda.CfnEventSourceMapping;
  /** The consumer name (the `service` dimension of its metrics). */
  public readonly consumerName: string;
  /** The queue it consumes, when its source is SQS. */
  public readonly queue?: sqs.IQueue;
  /** The Kinesis stream it consumes. */
  public readonly stream?: kinesis.IStream;
  /** The DynamoDB table whose stream it consumes. */
  public readonly table?: dynamodb.ITable;
  /** The Kafka topic it consumes. */
  public readonly kafka?: InboxKafkaSource;
  /** The database of its inbox table. */
  public readonly database: InboxDatabase;
  /**
   * SQS: the dead-letter queue of `queue` (the one passed in, or the one configured on a `queue` defined in this
   * app). Streams: the on-failure queue of the event source mapping (none when `onFailure` names another destination).
   */
  public readonly deadLetterQueue?: sqs.IQueue;
  /** Whether the handler reports failed records in its response (Kafka: `kafka.reportBatchItemFailures`). */
  public readonly reportBatchItemFailures: boolean;
  /** The consumer's own database role and its secret. */
  public readonly databaseRole: InboxDatabaseRole;
  /** The Data API actions the function may call (none behind a `proxy`). */
  public readonly dataApiActions: readonly DataApiAction[];
  /** The RDS Proxy it reaches the database through, when not the Data API. */
  public readonly proxy?: InboxDatabaseProxy;
  /** Its security group, when it runs in the proxy's VPC: egress to the proxy's port only. */
  public readonly securityGroup?: ec2.ISecurityGroup;
  /** The queues its outbox may send to, by name (`INBOX_DESTINATIONS`); empty when it sends nothing. */
  public readonly destinations: OutboxDestinations;
  readonly #source: ConsumerSource;
  readonly #kafkaMode: KafkaMode | undefined;

  constructor(scope: Construct, id: string, props: InboxConsumerProps) {
    super(scope, id);
    validateConsumerName(this.node.path, props.consumerName);
    validateDestinations(`InboxConsumer ${this.node.path}`, props.destinations, props.environment);
    this.source = validateSourceProps(this.node.path, props);
    validateProxy(this.node.path, props);
    this.consumerName = props.consumerName;
    this.database = props.database;
    if (props.queue !== undefined) this.queue = props.queue;
    if (props.stream !== undefined) this.stream = props.stream;
    if (props.table !== undefined) this.table = props.table;
    if (props.kafka !== undefined) this.kafka = props.kafka;
    this.#kafkaMode = props.kafka === undefined ? undefined : kafkaMode(this.node.path, props.kafka, props.consumerName);
    // Kafka tells the handler whether the mapping reads its partial batch responses; every other source always does.
    this.reportBatchItemFailures = this.#kafkaMode?.reportBatchItemFailures ?? true;
    this.destinations = { ...props.destinations };
    const timeout = props.timeout ?? Duration.seconds(30);

    this.databaseRole = new InboxDatabaseRole(this, 'DatabaseRole', {
      database: props.database,
      roleName: props.databaseRole ?? defaultConsumerRole(props.consumerName),
      purpose: 'consumer',
      label: `consumer ${props.consumerName}`,
      grants: props.databaseGrants ?? [],
      // Its claims are scoped to the name its handler claims under (INBOX_CONSUMER).
      consumerName: props.consumerName,
      statementTimeout: props.databaseStatementTimeout ?? Duration.seconds(8),
    });
    this.dataApiActions =
      props.proxy !== undefined ? [] : props.batchExecute === true ? [...TRANSACTION_ACTIONS, 'BatchExecuteStatement'] : TRANSACTION_ACTIONS;
    if (props.proxy !== undefined) {
      this.proxy = props.proxy;
      this.securityGroup = new ec2.SecurityGroup(this, 'SecurityGroup', {
        vpc: props.proxy.vpc,
        allowAllOutbound: false,
        description: `sqs-inbox consumer ${props.consumerName}: egress to its RDS Proxy only`,
      });
    }

    const fn = new InboxFunction(this, 'Handler', {
      entry: props.entry,
      handler: props.handler ?? 'handler',
      timeout,
      memorySize: props.memorySize ?? 512,
      description: `sqs-inbox consumer ${props.consumerName}`,
      environment: {
        ...props.environment,
        ...(props.proxy === undefined
          ? {
              [INBOX_ENV.RESOURCE_ARN]: props.database.cluster.clusterArn,
              [INBOX_ENV.SECRET_ARN]: this.databaseRole.secret.secretArn,
              [INBOX_ENV.DATABASE]: props.database.databaseName,
            }
          : {
              [INBOX_ENV.PG_HOST]: props.proxy.endpoint,
              [INBOX_ENV.PG_PORT]: String(PROXY_PORT),
              [INBOX_ENV.PG_DATABASE]: props.database.databaseName,
              [INBOX_ENV.PG_USER]: this.databaseRole.roleName,
              [INBOX_ENV.PG_IAM_AUTH]: 'true',
            }),
        [INBOX_ENV.CONSUMER]: props.consumerName,
        [INBOX_ENV.SOURCE]: this.source,
        ...(this.source === 'kafka' ? { [INBOX_ENV.REPORT_BATCH_ITEM_FAILURES]: String(this.reportBatchItemFailures) } : {}),
        ...destinationEnvironment(this, this.destinations),
        [INBOX_ENV.METRICS_NAMESPACE]: INBOX_METRICS_NAMESPACE,
        [INBOX_ENV.SERVICE_NAME]: props.consumerName,
      },
      ...(props.runtime === undefined ? {} : { runtime: props.runtime }),
      ...(props.logRetention === undefined ? {} : { logRetention: props.logRetention }),
      ...(props.proxy === undefined ? {} : { vpc: props.proxy.vpc, vpcSubnets: props.proxy.vpcSubnets, securityGroups: [this.securityGroup!] }),
    });
    this.function = fn.function;
    this.logGroup = fn.logGroup;
    if (props.proxy === undefined) {
      this.databaseRole.grantDataApi(this.function, this.dataApiActions);
    } else {
      // The proxy signs in to the cluster with the role's secret; the function proves who it is with IAM alone.
      props.proxy.addSecret(this.databaseRole.secret);
      props.proxy.grantConnect(this.function, this.databaseRole.roleName);
      props.proxy.allowFrom(this.securityGroup!);
    }
    // The first batch must find the role there, with its password and grants.
    this.function.node.addDependency(this.databaseRole.resource);
    for (const queue of distinctQueues(Object.values(this.destinations))) grantSendMessage(this.function, queue);

    this.#source = this.#bindSource(props, timeout);
    this.eventSource = this.#source.eventSource;
    this.eventSourceMapping = mappingOf(this.function);
    if (this.#source.deadLetterQueue !== undefined) this.deadLetterQueue = this.#source.deadLetterQueue;

    // Checked at synth, not now, so that later changes (escape hatches on the queue or the mapping) are seen too.
    const recordSeconds = durationSeconds(props.minRecordDuration ?? DEFAULT_MIN_RECORD_DURATION);
    addInvariants(this, () => {
      const facts = mappingFacts(this.source, this.eventSourceMapping);
      return [
        ...this.#source.violations(),
        ...checkPartialBatchResponse(facts, this.reportBatchItemFailures),
        ...checkFailedRecordsKept(facts),
        ...checkUnboundedStreamRetries(facts, this.#source.redeliveryWindowSeconds()),
        ...checkKafkaProvisionedMode(facts),
        ...checkKafkaTimeout(this.source, durationSeconds(timeout)),
        ...checkBatchFitsTimeout({ source: this.source, batchSize: facts.batchSize, timeoutSeconds: durationSeconds(timeout), recordSeconds }),
        ...this.#nameViolations(),
        ...this.#consumerGroupViolations(),
        ...outboxRelayViolations(`InboxConsumer ${this.node.path}`, this),
      ];
    });
  }

  /**
   * The longest time after sending that the source can still deliver a message to this consumer, in seconds;
   * `undefined` when a retention is an unresolved token.
   */
  public get redeliveryWindowSeconds(): number | undefined {
    return this.#source.redeliveryWindowSeconds();
  }

  /** What makes up the redelivery window, and how to shorten it: for the cleanup's retention check. */
  public get redeliveryWindowSource(): RedeliveryWindowSource {
    return this.#source.window;
  }

  /** The Kafka consumer group the mapping joins, for a Kafka source. */
  public get kafkaConsumerGroupId(): string | undefined {
    return this.#kafkaMode?.consumerGroupId;
  }

  /**
   * Lets another principal sign in as this consumer's role (for example a function that replays its parked
   * messages): the same Data API actions, this role's secret, this role's privileges.
   */
  public grantDataApiAccess(grantee: iam.IGrantable): void {
    this.databaseRole.grantDataApi(grantee, this.dataApiActions);
  }

  #bindSource(props: InboxConsumerProps, timeout: Duration): ConsumerSource {
    const fn = this.function;
    if (props.queue !== undefined) {
      return sqsSource(fn, {
        path: this.node.path,
        queue: props.queue,
        deadLetterQueue: props.deadLetterQueue,
        batchSize: props.batchSize,
        maxConcurrency: props.maxConcurrency,
        provisionedPollers: props.provisionedPollers,
        cluster: props.database.cluster,
        maxBatchingWindow: props.maxBatchingWindow,
        redeliveryWindow: props.redeliveryWindow,
        timeout,
      });
    }
    const settings = streamSettings(this, props, this.#kafkaMode !== undefined && this.#kafkaMode.pollers === undefined);
    if (props.stream !== undefined) return kinesisSource(fn, props.stream, settings, props.redeliveryWindow);
    if (props.table !== undefined) return dynamoDbSource(this.node.path, fn, props.table, settings, props.redeliveryWindow);
    return kafkaSource(fn, props.kafka!, this.#kafkaMode!, settings);
  }

  /** Only the later consumer of a clashing pair reports, so each clash appears once. */
  #nameViolations(): InvariantViolation[] {
    if (Token.isUnresolved(this.consumerName)) return [];
    const earlier: string[] = [];
    for (const other of this.node.root.node.findAll()) {
      if (other === this) break;
      if (other instanceof InboxConsumer && other.consumerName === this.consumerName && other.database.tableKey === this.database.tableKey) {
        earlier.push(other.node.path);
      }
    }
    return checkConsumerNameUnique({
      consumerName: this.consumerName,
      table: this.database.tableDescription,
      otherConsumerPaths: earlier,
    });
  }

  /** Kafka consumer group ids are unique among all Kafka event sources; the later of a clashing pair reports. */
  #consumerGroupViolations(): InvariantViolation[] {
    const group = this.kafkaConsumerGroupId;
    if (group === undefined || Token.isUnresolved(group)) return [];
    const earlier: string[] = [];
    for (const other of this.node.root.node.findAll()) {
      if (other === this) break;
      if (other instanceof InboxConsumer && other.kafkaConsumerGroupId === group) earlier.push(other.node.path);
    }
    return checkKafkaConsumerGroupUnique({ consumerGroupId: group, otherConsumerPaths: earlier });
  }
}

/** Exactly one source, and no prop another source reads: each refused with its fix, all at once. */
function validateSourceProps(path: string, props: InboxConsumerProps): InboxSourceKind {
  const given = SOURCE_PROPS.filter((key) => props[key] !== undefined);
  const named = SOURCE_PROPS.map((key) => `\`${key}\``).join(', ');
  if (given.length !== 1) {
    throw InboxConstructError.of(
      `InboxConsumer ${path}`,
      [
        `${given.length === 0 ? 'no source was given' : `${given.map((key) => `\`${key}\``).join(' and ')} were both given`}; ` +
          `a consumer reads exactly one of ${named}. Fix: pass exactly one ` +
          '(a second source needs a second InboxConsumer, with its own `consumerName`).',
      ],
      'line',
    );
  }
  const source: InboxSourceKind = props.queue !== undefined ? 'sqs' : props.stream !== undefined ? 'kinesis' : props.table !== undefined ? 'dynamodb' : 'kafka';
  const problems: string[] = [];
  const list = (keys: readonly string[]) => keys.map((key) => `\`${key}\``).join(', ');
  if (source === 'sqs') {
    const streamOnly = STREAM_ONLY_PROPS.filter((key) => props[key] !== undefined);
    if (streamOnly.length > 0) {
      problems.push(`${list(streamOnly)} only apply to a stream (\`stream\`, \`table\` or \`kafka\`), but \`queue\` was given. Fix: remove them.`);
    }
  } else {
    const sqsOnly = SQS_ONLY_PROPS.filter((key) => props[key] !== undefined);
    if (sqsOnly.length > 0) {
      problems.push(
        `${list(sqsOnly)} only ${sqsOnly.length === 1 ? 'applies' : 'apply'} to \`queue\`: a stream's concurrency is its shards x ` +
          "`parallelizationFactor` (Kafka: the topic's partitions, and its pollers `kafka.provisionedPollers`). Fix: remove " +
          `${sqsOnly.length === 1 ? 'it' : 'them'}.`,
      );
    }
    if (props.deadLetterQueue !== undefined && props.onFailure !== undefined) {
      problems.push('`deadLetterQueue` and `onFailure` both name the on-failure destination. Fix: pass one of them.');
    }
  }
  if (source === 'kafka') {
    if (props.parallelizationFactor !== undefined) {
      problems.push('`parallelizationFactor` applies to Kinesis and DynamoDB Streams only; Kafka runs one batch per partition at a time. Fix: remove it.');
    }
    if (props.redeliveryWindow !== undefined) {
      problems.push("`redeliveryWindow` is `kafka.topicRetention` for a Kafka source. Fix: remove it and pass the topic's retention there.");
    }
  }
  if (source === 'dynamodb' && props.startingPositionTimestamp !== undefined) {
    problems.push('`startingPositionTimestamp` applies to Kinesis and Kafka only: DynamoDB Streams cannot start at a timestamp. Fix: remove it.');
  }
  if (problems.length > 0) throw InboxConstructError.of(`InboxConsumer ${path}`, problems);
  return source;
}

/** The runtime refuses other names at cold start; refusing them here moves that failure to synth. */
export function validateConsumerName(path: string, name: string): void {
  if (Token.isUnresolved(name) || CONSUMER_NAME_PATTERN.test(name)) return;
  const suggestion = name
    .replace(/[^A-Za-z0-9._:-]+/g, '-')
    .replace(/^[^A-Za-z0-9]+/, '')
    .slice(0, 128);
  throw InboxConstructError.of(
    `InboxConsumer ${path}`,
    [
      `\`consumerName\` ${name.length === 0 ? 'is empty' : `'${name}' is not a valid consumer name`}: ` +
        `it must be ${CONSUMER_NAME_RULE}. ` +
        `Fix: use e.g. '${suggestion.length > 0 ? suggestion : 'order-worker'}'.`,
    ],
    'line',
  );
}

/** A proxy in front of another database, and what only the Data API path reads, refused with the fix. */
function validateProxy(path: string, props: InboxConsumerProps): void {
  const proxy = props.proxy;
  if (proxy === undefined) return;
  const problems: string[] = [];
  if (proxy.database !== props.database) {
    problems.push(
      `\`proxy\` ${proxy.node.path} fronts the cluster of ${proxy.database.node.path}, not \`database\` ${props.database.node.path}: the ` +
        'consumer would claim in one database and have its role provisioned in another. Fix: pass the proxy of `database`.',
    );
  }
  if (props.batchExecute !== undefined) {
    problems.push('`batchExecute` grants a Data API action, and a consumer behind `proxy` calls none. Fix: remove it.');
  }
  if (props.destinations !== undefined && Object.keys(props.destinations).length > 0) {
    problems.push(
      "`destinations` need the function to reach SQS, but behind `proxy` its security group reaches the proxy's port only. " +
        'Fix: send from a consumer on the Data API, or leave `destinations` out.',
    );
  }
  if (problems.length > 0) throw InboxConstructError.of(`InboxConsumer ${path}`, problems);
}
