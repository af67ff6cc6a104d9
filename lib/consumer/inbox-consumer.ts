import { Annotations, Duration, Token } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import type * as iam from 'aws-cdk-lib/aws-iam';
import type * as kinesis from 'aws-cdk-lib/aws-kinesis';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type * as rds from 'aws-cdk-lib/aws-rds';
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
import { validateConsumerName } from './consumer-name.js';
import { InboxFunction } from './inbox-function.js';
import { DEFAULT_POSTGRES_POOL_SIZE, checkManagedInstances, managedInstancesFacts, sqsThroughputWarning } from './managed-instances.js';
import { connectionCeiling } from '../sources/sqs-pollers.js';
import { addInvariants, checkConsumerNameUnique } from '../invariants.js';
import type { InvariantViolation } from '../invariants.js';
import { outboxRelayViolations } from '../outbox/inbox-outbox-relay.js';
import { destinationEnvironment, distinctQueues, grantSendMessage, validateDestinations } from '../outbox/outbox-destinations.js';
import { sourceBinder } from '../sources/source.js';
import type { BoundSource, InboxSource } from '../sources/source.js';
import { INBOX_ENV, METRIC_NAMESPACE } from '../../lambda/inbox/contract.js';
import { InboxConstructError } from '../errors.js';

/** Props for {@link InboxConsumer}: its source, the database, the handler. */
export interface InboxConsumerProps {
  /** The database whose inbox table records what this consumer has applied. */
  readonly database: InboxDatabase;
  /**
   * What the consumer reads, with that source's settings: `InboxSources.sqs(queue, {...})`, `.kinesis(stream, {...})`,
   * `.dynamoDb(table, {...})`, `.msk(clusterArn, {...})` or `.selfManagedKafka(bootstrapServers, {...})`. A second
   * source needs a second consumer, with its own `consumerName`.
   */
  readonly source: InboxSource;
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
   * Node.js runtime: nodejs24.x or nodejs22.x, the two the runtime code is tested on.
   * @default lambda.Runtime.NODEJS_24_X
   */
  readonly runtime?: lambda.Runtime | undefined;
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
   * Run the function on Lambda Managed Instances, on this capacity provider's instances: one execution
   * environment then runs many invocations at once in one process. Synth checks that the database connections
   * stay bounded and fit (see `managedInstances`, `postgresPoolSize`), and warns when the SQS source's fixed
   * 5 MB/s on Managed Instances is less than a second's batch.
   * @default - Lambda's default compute: one invocation per execution environment
   */
  readonly capacityProvider?: lambda.CapacityProvider | undefined;
  /**
   * How the function runs on `capacityProvider` (`capacityProvider.addFunction`'s options): set
   * `perExecutionEnvironmentMaxConcurrency` and `latestPublishedScalingConfig.maxExecutionEnvironments`, which
   * bound the database connections.
   * @default - Lambda's defaults, which synth refuses when the connections are then unbounded
   */
  readonly managedInstances?: lambda.CapacityProviderFunctionOptions | undefined;
  /**
   * With `proxy` and `capacityProvider`: the connections the handler's pool opens in one execution environment
   * (`postgresFromEnvironment({ max })`), which that environment's concurrent invocations share.
   * @default 2 (postgresFromEnvironment's default)
   */
  readonly postgresPoolSize?: number | undefined;
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
  readonly destinations?: Readonly<Record<string, sqs.IQueue>> | undefined;
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

/**
 * Your handler as a Lambda function that applies each message exactly once through the inbox, triggered by one
 * `source` made by {@link InboxSources}: an SQS queue, a Kinesis stream, a DynamoDB table's stream or a Kafka topic
 * (MSK or self-managed). Every source reports failed records back (partial batch responses; for Kafka in
 * provisioned mode); a stream also bisects a failing batch, retries it a bounded number of times and keeps what it
 * discards in an on-failure queue. The function signs in to `database` as its own PostgreSQL role (`databaseRole`,
 * with `databaseGrants` for its effect) through the Data API and nothing more, and is told where the inbox lives and
 * what it reads through its environment (`INBOX_RESOURCE_ARN`, `INBOX_SECRET_ARN` = the role's secret,
 * `INBOX_DATABASE`, `INBOX_CONSUMER`, `INBOX_SOURCE`; for Kafka `INBOX_REPORT_BATCH_ITEM_FAILURES`; with
 * `destinations`, `INBOX_DESTINATIONS`, and `sqs:SendMessage` on each of those queues).
 *
 * @example
 * const queue = new InboxQueue(this, 'Orders');
 * const database = new InboxDatabase(this, 'Db');
 * new InboxConsumer(this, 'OrderWorker', {
 *   database,
 *   source: InboxSources.sqs(queue.queue, { deadLetterQueue: queue.deadLetterQueue, maxConcurrency: 5 }),
 *   consumerName: 'order-worker', // set as INBOX_CONSUMER, which inbox() reads when `consumer` is unset
 *   entry: 'src/order-worker.ts', // exports `handler = inbox({ apply: async (tx, message) => { ... } })`
 *   databaseGrants: [{ table: 'public.orders', privileges: ['SELECT', 'INSERT', 'UPDATE'] }],
 * });
 *
 * @example
 * // An outbox: tx.send({ to: 'invoices', ... }) in the handler; the relay sends what a crash leaves behind.
 * const invoices = new InboxQueue(this, 'Invoices');
 * const shipper = new InboxConsumer(this, 'Shipper', {
 *   database, source: InboxSources.sqs(queue.queue), consumerName: 'shipper', entry: 'src/shipper.ts',
 *   destinations: { invoices: invoices.queue },
 * });
 * new InboxOutboxRelay(this, 'OutboxRelay', { database, consumers: [shipper] });
 *
 * @example
 * // A Kinesis stream: TRIM_HORIZON, partial batch responses, bisect, 10 retries, an on-failure queue.
 * new InboxConsumer(this, 'Clicks', {
 *   database,
 *   source: InboxSources.kinesis(new kinesis.Stream(this, 'ClickStream', { encryption: kinesis.StreamEncryption.MANAGED })),
 *   consumerName: 'clicks',
 *   entry: 'src/clicks.ts', // exports `handler = kinesisInbox({ apply: ... })`
 * });
 */
export class InboxConsumer extends Construct {
  /** The consumer's function. */
  public readonly function: nodejs.NodejsFunction;
  /** The function's log group. */
  public readonly logGroup: logs.LogGroup;
  /** What it consumes, as given; its `kind` is the handler's `INBOX_SOURCE` and its metrics' `source`. */
  public readonly source: InboxSource;
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
  /** The database of its inbox table. */
  public readonly database: InboxDatabase;
  /**
   * SQS: the dead-letter queue of its queue (the source's `deadLetterQueue`, or the one configured on a queue defined
   * in this app). Streams: the on-failure queue of the event source mapping (none when `onFailure` is not a queue).
   */
  public readonly deadLetterQueue?: sqs.IQueue;
  /** Whether the handler reports failed records in its response (Kafka: the source's `reportBatchItemFailures`). */
  public readonly reportBatchItemFailures: boolean;
  /** The consumer's own database role and its secret. */
  public readonly databaseRole: InboxDatabaseRole;
  /**
   * The privileges the consumer's database role holds for its effect (`databaseGrants`), besides claiming rows
   * in the inbox. Give them to the local scenario, `runScenario({ databaseGrants: worker.databaseGrants })`, so
   * the handler under test runs as a role made by the same code with the same grants before you deploy.
   */
  public readonly databaseGrants: readonly InboxTableGrant[];
  /** The Data API actions the function may call (none behind a `proxy`). */
  public readonly dataApiActions: readonly DataApiAction[];
  /** The RDS Proxy it reaches the database through, when not the Data API. */
  public readonly proxy?: InboxDatabaseProxy;
  /** Its security group, when it runs in the proxy's VPC: egress to the proxy's port only. */
  public readonly securityGroup?: ec2.ISecurityGroup;
  /** The queues its outbox may send to, by name (`INBOX_DESTINATIONS`); empty when it sends nothing. */
  public readonly destinations: Readonly<Record<string, sqs.IQueue>>;
  readonly #bound: BoundSource;

  constructor(scope: Construct, id: string, props: InboxConsumerProps) {
    super(scope, id);
    const subject = `InboxConsumer ${this.node.path}`;
    validateConsumerName(subject, props.consumerName);
    validateDestinations(subject, props.destinations, props.environment);
    const source = sourceBinder(subject, props.source);
    validateProxy(this.node.path, props);
    this.source = source;
    this.consumerName = props.consumerName;
    this.database = props.database;
    if (source.queue !== undefined) this.queue = source.queue;
    if (source.stream !== undefined) this.stream = source.stream;
    if (source.table !== undefined) this.table = source.table;
    this.reportBatchItemFailures = source.reportBatchItemFailures;
    this.destinations = { ...props.destinations };
    const timeout = props.timeout ?? Duration.seconds(30);

    this.databaseGrants = [...(props.databaseGrants ?? [])];
    this.databaseRole = new InboxDatabaseRole(this, 'DatabaseRole', {
      database: props.database,
      roleName: props.databaseRole ?? defaultConsumerRole(props.consumerName),
      purpose: 'consumer',
      label: `consumer ${props.consumerName}`,
      grants: this.databaseGrants,
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
        ...source.environment(),
        ...destinationEnvironment(this, this.destinations),
        [INBOX_ENV.METRICS_NAMESPACE]: METRIC_NAMESPACE,
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

    const bound = (this.#bound = source.bind({
      consumer: this,
      subject,
      fn: this.function,
      consumerName: props.consumerName,
      timeout,
      cluster: props.database.cluster,
    }));
    this.eventSource = bound.eventSource;
    this.eventSourceMapping = bound.eventSourceMapping;
    if (bound.deadLetterQueue !== undefined) this.deadLetterQueue = bound.deadLetterQueue;

    if (props.capacityProvider !== undefined) {
      props.capacityProvider.addFunction(this.function, props.managedInstances);
      const batchSize = this.queue === undefined ? undefined : this.eventSourceMapping.batchSize;
      const warning = sqsThroughputWarning(batchSize === undefined || Token.isUnresolved(batchSize) ? undefined : batchSize);
      if (warning !== undefined) Annotations.of(this).addWarningV2('sqs-inbox:ManagedInstancesSqsThroughput', warning);
    }

    // Checked at synth, not now, so that later changes (escape hatches on the queue or the mapping) are seen too.
    addInvariants(this, () => [
      ...bound.violations(),
      ...this.#nameViolations(),
      ...outboxRelayViolations(subject, this),
      ...this.#managedInstancesViolations(props),
    ]);
  }

  /**
   * The longest time after sending that the source can still deliver a message to this consumer, in seconds;
   * `undefined` when a retention is an unresolved token.
   */
  public get redeliveryWindowSeconds(): number | undefined {
    return this.#bound.redeliveryWindowSeconds();
  }

  /** The Kafka consumer group the mapping joins, for a Kafka source. */
  public get kafkaConsumerGroupId(): string | undefined {
    return this.#bound.kafkaConsumerGroupId;
  }

  /**
   * Lets another principal sign in as this consumer's role (for example a function that replays its parked
   * messages): the same Data API actions, this role's secret, this role's privileges.
   */
  public grantDataApiAccess(grantee: iam.IGrantable): void {
    this.databaseRole.grantDataApi(grantee, this.dataApiActions);
  }

  /** The connections' bounds on Managed Instances (managed-instances.ts). */
  #managedInstancesViolations(props: InboxConsumerProps): InvariantViolation[] {
    if (props.capacityProvider === undefined) {
      return props.managedInstances === undefined
        ? []
        : [
            {
              problem: "`managedInstances` is set, but `capacityProvider` is not: the function runs on Lambda's default compute.",
              fix: 'pass `capacityProvider`, or remove `managedInstances`.',
            },
          ];
    }
    const pool = props.proxy?.targetGroup.connectionPoolConfigurationInfo as
      | rds.CfnDBProxyTargetGroup.ConnectionPoolConfigurationInfoFormatProperty
      | undefined;
    return checkManagedInstances(
      managedInstancesFacts(props.managedInstances, {
        poolSize: props.proxy === undefined ? undefined : (props.postgresPoolSize ?? DEFAULT_POSTGRES_POOL_SIZE),
        connectionCeiling: connectionCeiling(props.database.cluster),
        proxyPercent: pool?.maxConnectionsPercent,
      }),
    );
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
