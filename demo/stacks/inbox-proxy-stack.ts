import { CfnOutput, Stack } from 'aws-cdk-lib';
import type { StackProps } from 'aws-cdk-lib';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { Construct } from 'constructs';
import { InboxAlarms } from '../../lib/alarms/index.js';
import { InboxCleanup } from '../../lib/purge/inbox-cleanup.js';
import { InboxConsumer } from '../../lib/consumer/inbox-consumer.js';
import { InboxDatabase } from '../../lib/database/inbox-database.js';
import { InboxDatabaseProxy } from '../../lib/database/inbox-database-proxy.js';
import { InboxQueue } from '../../lib/queue/inbox-queue.js';
import { InboxSources } from '../../lib/sources/inbox-sources.js';
import { runtimeFile } from '../../lib/runtime-files.js';
import { EXAMPLE_ORDER_MIGRATIONS } from '../functions/example-migrations.js';

/** Props for {@link InboxProxyStack}. */
export interface InboxProxyStackProps extends StackProps {
  /**
   * Deletion protection of the database cluster.
   * @default true
   */
  readonly deletionProtection?: boolean | undefined;
}

/**
 * The example on the PostgreSQL wire: the order queue, the Aurora database with its schema and the example's
 * `orders` table (migrated, like the roles, through the Data API at deploy), RDS Proxy in front of it with IAM
 * authentication and TLS required, the order worker in the VPC signing in through the proxy as its own role
 * (demo/functions/order-worker-wire.ts), the hourly purge, alarms (the proxy's failed sign-ins and connection
 * waits among them) and a dashboard.
 *
 * @example
 * new InboxProxyStack(new App(), 'InboxProxyStack');
 */
export class InboxProxyStack extends Stack {
  /** The order queue and its dead-letter queue. */
  public readonly queue: InboxQueue;
  /** The inbox database. */
  public readonly database: InboxDatabase;
  /** RDS Proxy in front of it. */
  public readonly proxy: InboxDatabaseProxy;
  /** The order worker, on the wire. */
  public readonly consumer: InboxConsumer;
  /** The scheduled purge (Data API). */
  public readonly cleanup: InboxCleanup;
  /** Alarms and dashboard. */
  public readonly alarms: InboxAlarms;

  constructor(scope: Construct, id: string, props: InboxProxyStackProps = {}) {
    super(scope, id, { description: 'sqs-inbox: the transactional inbox on Aurora through RDS Proxy (PostgreSQL wire, IAM auth)', ...props });
    this.queue = new InboxQueue(this, 'Orders');
    // No auto-pause: RDS Proxy holds connections to the cluster, which would keep it awake anyway.
    this.database = new InboxDatabase(this, 'Database', {
      migrations: [EXAMPLE_ORDER_MIGRATIONS],
      ...(props.deletionProtection === undefined ? {} : { deletionProtection: props.deletionProtection }),
    });
    this.proxy = new InboxDatabaseProxy(this, 'Proxy', { database: this.database });
    this.consumer = new InboxConsumer(this, 'OrderWorker', {
      database: this.database,
      proxy: this.proxy,
      source: InboxSources.sqs(this.queue.queue, { deadLetterQueue: this.queue.deadLetterQueue, batchSize: 10, maxConcurrency: 5 }),
      consumerName: 'order-worker',
      entry: runtimeFile('../demo/functions/order-worker-wire', 'the example order worker on the wire'),
      databaseGrants: [{ table: 'public.orders', privileges: ['SELECT', 'INSERT', 'UPDATE'] }],
    });
    this.cleanup = new InboxCleanup(this, 'Cleanup', { database: this.database });
    this.alarms = new InboxAlarms(this, 'Alarms', {
      consumers: [this.consumer],
      cleanup: this.cleanup,
      createTopic: true,
      dashboardName: `${this.stackName}-inbox`,
    });
    // The proxy's own alarms go to the same topic as the consumer's.
    const topic = this.alarms.topic;
    if (topic !== undefined) for (const alarm of [this.proxy.failedAuthAlarm, this.proxy.borrowLatencyAlarm]) alarm.addAlarmAction(new SnsAction(topic));
    new CfnOutput(this, 'QueueUrl', { value: this.queue.queue.queueUrl, description: 'Send orders here (FIFO).' });
    new CfnOutput(this, 'ProxyEndpoint', { value: this.proxy.endpoint, description: 'INBOX_PG_HOST of the order worker' });
  }
}
