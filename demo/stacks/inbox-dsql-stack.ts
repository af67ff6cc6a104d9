import { CfnOutput, Stack } from 'aws-cdk-lib';
import type { StackProps } from 'aws-cdk-lib';
import type * as sns from 'aws-cdk-lib/aws-sns';
import * as cloudwatchActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { Construct } from 'constructs';
import { InboxDsqlConsumer } from '../../lib/dsql/inbox-dsql-consumer.js';
import { InboxDsqlDatabase } from '../../lib/dsql/inbox-dsql-database.js';
import type { InboxDsqlMultiRegion } from '../../lib/dsql/inbox-dsql-database.js';
import { createAlarmTopic } from '../../lib/alarms/alarm-topic.js';
import { InboxAlarms } from '../../lib/alarms/index.js';
import { InboxQueue } from '../../lib/queue/inbox-queue.js';
import { InboxSources } from '../../lib/sources/inbox-sources.js';
import { InboxCleanup } from '../../lib/purge/inbox-cleanup.js';
import { InboxOutboxRelay } from '../../lib/outbox/inbox-outbox-relay.js';
import { EXAMPLE_ORDER_MIGRATIONS } from '../functions/example-migrations.js';

/** Props for {@link InboxDsqlStack}. */
export interface InboxDsqlStackProps extends StackProps {
  /** The order worker's entry: `export const handler = inbox({ database: dsqlFromEnvironment(), apply })`. */
  readonly entry: string;
  /**
   * Deletion protection of the cluster.
   * @default true
   */
  readonly deletionProtection?: boolean | undefined;
  /**
   * Make the cluster one of a multi-Region pair.
   * @default - a single-Region cluster
   */
  readonly multiRegion?: InboxDsqlMultiRegion | undefined;
}

/**
 * The example on Aurora DSQL: the order queue, a DSQL cluster whose schema (the inbox's tables and the example's
 * `orders`) is applied at deploy, the order worker, the hourly purge and the outbox sweeper, each signing in as its
 * own role (mapped to its IAM role at deploy, `dsql:DbConnect` only; only the schema function holds
 * `dsql:DbConnectAdmin`), and their alarms and the cluster's on an encrypted topic.
 *
 * @example
 * new InboxDsqlStack(new App(), 'InboxDsqlStack', { entry: 'src/order-worker-dsql.ts' });
 */
export class InboxDsqlStack extends Stack {
  /** The order queue and its dead-letter queue. */
  public readonly queue: InboxQueue;
  /** The DSQL cluster. */
  public readonly database: InboxDsqlDatabase;
  /** The order worker. */
  public readonly consumer: InboxDsqlConsumer;
  /** The hourly purge of old inbox rows. */
  public readonly cleanup: InboxCleanup;
  /** The outbox sweeper. */
  public readonly outboxRelay: InboxOutboxRelay;
  /** The consumer's, the purge's and the sweeper's alarms, and their dashboard. */
  public readonly alarms: InboxAlarms;
  /** The alarm topic: encrypted, TLS only, publishable by this account's alarms. */
  public readonly alarmTopic: sns.Topic;

  constructor(scope: Construct, id: string, props: InboxDsqlStackProps) {
    super(scope, id, { description: 'sqs-inbox: the transactional inbox on Aurora DSQL', ...props });
    this.queue = new InboxQueue(this, 'Orders');
    this.database = new InboxDsqlDatabase(this, 'Dsql', {
      ...(props.deletionProtection === undefined ? {} : { deletionProtection: props.deletionProtection }),
      ...(props.multiRegion === undefined ? {} : { multiRegion: props.multiRegion }),
      // The worker's `orders` table, applied before its grant on it.
      migrations: [EXAMPLE_ORDER_MIGRATIONS],
    });
    this.consumer = new InboxDsqlConsumer(this, 'OrderWorker', {
      database: this.database,
      source: InboxSources.sqs(this.queue.queue, { deadLetterQueue: this.queue.deadLetterQueue }),
      consumerName: 'order-worker',
      entry: props.entry,
      databaseGrants: [{ table: 'public.orders', privileges: ['SELECT', 'INSERT', 'UPDATE'] }],
    });
    this.cleanup = new InboxCleanup(this, 'Cleanup', { database: this.database });
    this.outboxRelay = new InboxOutboxRelay(this, 'OutboxRelay', { database: this.database, consumers: [] });
    this.alarmTopic = createAlarmTopic(this).topic;
    // The alarms as on Aurora: the consumer's (its queue, dead-letter queue, function and inbox metrics), the purge's,
    // the sweeper's; and the cluster's.
    this.alarms = new InboxAlarms(this, 'ConsumerAlarms', {
      consumers: [this.consumer],
      cleanup: this.cleanup,
      outboxRelay: this.outboxRelay,
      topic: this.alarmTopic,
      dashboardName: `${this.stackName}-inbox`,
    });
    for (const alarm of [this.database.occConflictsAlarm, this.database.queryTimeoutsAlarm])
      alarm.addAlarmAction(new cloudwatchActions.SnsAction(this.alarmTopic));
    new CfnOutput(this, 'QueueUrl', { value: this.queue.queue.queueUrl, description: 'Send orders here (FIFO).' });
    new CfnOutput(this, 'DsqlEndpoint', { value: this.database.endpoint, description: 'INBOX_DSQL_ENDPOINT of the order worker' });
  }
}
