import { Duration } from 'aws-cdk-lib';
import type { CustomResource } from 'aws-cdk-lib';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { INBOX_METRICS_NAMESPACE, validateConsumerName } from '../consumer/inbox-consumer.js';
import { InboxFunction } from '../consumer/inbox-function.js';
import { defaultConsumerRole } from '../database/database-grants.js';
import type { InboxTableGrant } from '../database/database-grants.js';
import type { InboxDsqlDatabase } from './inbox-dsql-database.js';

/** Props for {@link InboxDsqlConsumer}. */
export interface InboxDsqlConsumerProps {
  /** The DSQL cluster whose inbox table records what this consumer has applied. */
  readonly database: InboxDsqlDatabase;
  /** The SQS queue to consume. */
  readonly queue: sqs.IQueue;
  /**
   * The consumer's name: part of every inbox key; unique per table, never changed once messages were processed.
   * It reaches the handler as `INBOX_CONSUMER`.
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
   * Most concurrent invocations (2 to 1000): each opens its own connections, and DSQL accepts 100 new connections
   * per second per cluster.
   * @default 5
   */
  readonly maxConcurrency?: number | undefined;
  /**
   * The consumer's own database role, mapped to the function's IAM role. It may claim rows in the inbox plus
   * `databaseGrants`.
   * @default 'inbox_consumer_' + `consumerName` in lower case, other characters as '_'
   */
  readonly databaseRole?: string | undefined;
  /**
   * What the consumer's effect needs on your own tables.
   * @default []
   */
  readonly databaseGrants?: readonly InboxTableGrant[] | undefined;
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
  /** Its database role. */
  public readonly databaseRole: string;
  /** The custom resource that maps its role; the function depends on it. */
  public readonly roleMapping: CustomResource;
  /** The event source. */
  public readonly eventSource: SqsEventSource;

  constructor(scope: Construct, id: string, props: InboxDsqlConsumerProps) {
    super(scope, id);
    validateConsumerName(this.node.path, props.consumerName);
    this.consumerName = props.consumerName;
    this.databaseRole = props.databaseRole ?? defaultConsumerRole(props.consumerName);
    const fn = new InboxFunction(this, 'Handler', {
      entry: props.entry,
      handler: props.handler ?? 'handler',
      timeout: props.timeout ?? Duration.seconds(30),
      memorySize: props.memorySize ?? 512,
      description: `sqs-inbox consumer ${props.consumerName} (Aurora DSQL)`,
      environment: {
        ...props.environment,
        INBOX_DSQL_ENDPOINT: props.database.endpoint,
        INBOX_DSQL_REGION: props.database.region,
        INBOX_DSQL_USER: this.databaseRole,
        INBOX_CONSUMER: props.consumerName,
        INBOX_SOURCE: 'sqs',
        POWERTOOLS_METRICS_NAMESPACE: INBOX_METRICS_NAMESPACE,
        POWERTOOLS_SERVICE_NAME: props.consumerName,
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
    });
    // The first batch must find the role mapped to the function's IAM role.
    this.function.node.addDependency(this.roleMapping);
    this.eventSource = new SqsEventSource(props.queue, {
      batchSize: props.batchSize ?? 10,
      maxConcurrency: props.maxConcurrency ?? 5,
      reportBatchItemFailures: true,
    });
    this.function.addEventSource(this.eventSource);
  }
}
