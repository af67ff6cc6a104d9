import { Annotations, CfnOutput, Duration, Stack } from 'aws-cdk-lib';
import type { RemovalPolicy, StackProps } from 'aws-cdk-lib';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import type { Construct } from 'constructs';
import { InboxAlarms } from '../../lib/alarms/index.js';
import { InboxCleanup } from '../../lib/purge/inbox-cleanup.js';
import { InboxConsumer } from '../../lib/consumer/inbox-consumer.js';
import { InboxDatabase } from '../../lib/database/inbox-database.js';
import { InboxOutboxRelay } from '../../lib/outbox/inbox-outbox-relay.js';
import { InboxQueue } from '../../lib/queue/inbox-queue.js';
import { InboxSources } from '../../lib/sources/inbox-sources.js';
import { runtimeFile } from '../../lib/runtime-files.js';
import { EXAMPLE_ORDER_MIGRATIONS } from '../functions/example-migrations.js';

/** Props for {@link InboxStack}. */
export interface InboxStackProps extends StackProps {
  /**
   * Email address that receives alarm notifications (it must confirm the subscription).
   * @default - an alarm topic is created without subscriptions
   */
  readonly alarmEmail?: string | undefined;
  /**
   * Auto-pause the database after this much idle time (scale to 0 ACUs).
   * @default Duration.minutes(10)
   */
  readonly autoPause?: Duration | undefined;
  /**
   * Deletion protection of the database cluster. Turn it off for a throwaway deployment you want
   * `cdk destroy` to remove.
   * @default true
   */
  readonly deletionProtection?: boolean | undefined;
  /**
   * What happens to the database cluster when the stack is deleted.
   * @default RemovalPolicy.SNAPSHOT
   */
  readonly databaseRemovalPolicy?: RemovalPolicy | undefined;
  /**
   * How long inbox rows are kept.
   * @default Duration.days(30)
   */
  readonly retention?: Duration | undefined;
  /**
   * Add a FIFO queue `invoices` (with its dead-letter queue) that the order worker may send to through its outbox,
   * `tx.send({ to: 'invoices', body, groupId })`, and the outbox relay that sends what a crashed invocation left
   * unsent, with its alarms. Off by default: the relay reads the database every minute, which keeps it from ever
   * auto-pausing (synth warns), and the example worker sends nothing until you make it.
   * @default false
   */
  readonly invoices?: boolean | undefined;
}

/**
 * The deployable example: a FIFO order queue, the Aurora Serverless v2 inbox database with its schema
 * (plus the example's `orders` table), the example order worker (demo/functions/order-worker.ts) and the
 * hourly cleanup, each signed in as its own database role, rotated secrets, alarms to an encrypted topic
 * and a dashboard. With `invoices: true`, also a FIFO `invoices` queue the order worker may send to through its
 * outbox, and the outbox relay.
 *
 * @example
 * const app = new App();
 * new InboxStack(app, 'InboxStack', { alarmEmail: 'oncall@example.com' });
 */
export class InboxStack extends Stack {
  /** The order queue and its dead-letter queue. */
  public readonly queue: InboxQueue;
  /** The inbox database. */
  public readonly database: InboxDatabase;
  /** The example order worker. */
  public readonly consumer: InboxConsumer;
  /** The scheduled purge. */
  public readonly cleanup: InboxCleanup;
  /** The invoices queue the order worker may send to, with `invoices: true`. */
  public readonly invoices?: InboxQueue;
  /** The outbox relay, when a consumer of this stack sends through its outbox (`invoices: true`). */
  public readonly outboxRelay?: InboxOutboxRelay;
  /** Alarms and dashboard. */
  public readonly alarms: InboxAlarms;

  constructor(scope: Construct, id: string, props: InboxStackProps = {}) {
    super(scope, id, {
      description: 'sqs-inbox: exactly-once SQS processing with the transactional inbox on Aurora (RDS Data API)',
      ...props,
    });

    this.queue = new InboxQueue(this, 'Orders');
    if (props.invoices === true) this.invoices = new InboxQueue(this, 'Invoices');
    this.database = new InboxDatabase(this, 'Database', {
      autoPause: props.autoPause ?? Duration.minutes(10),
      migrations: [EXAMPLE_ORDER_MIGRATIONS],
      ...(props.deletionProtection === undefined ? {} : { deletionProtection: props.deletionProtection }),
      ...(props.databaseRemovalPolicy === undefined ? {} : { removalPolicy: props.databaseRemovalPolicy }),
    });
    this.consumer = new InboxConsumer(this, 'OrderWorker', {
      database: this.database,
      source: InboxSources.sqs(this.queue.queue, { deadLetterQueue: this.queue.deadLetterQueue, batchSize: 10, maxConcurrency: 5 }),
      consumerName: 'order-worker',
      entry: runtimeFile('../demo/functions/order-worker', 'the example order worker'),
      // The upsert of demo/functions/order-worker.ts: INSERT ... ON CONFLICT DO UPDATE reads and updates the row.
      databaseGrants: [{ table: 'public.orders', privileges: ['SELECT', 'INSERT', 'UPDATE'] }],
      timeout: Duration.seconds(30),
      ...(this.invoices === undefined ? {} : { destinations: { invoices: this.invoices.queue } }),
    });
    // The order worker keys on the messageId when the producer sets no idempotency-key: its dead-letter queue is
    // redriven with `npx sqs-inbox dlq redrive`, never from the console (docs/operations.md).
    Annotations.of(this.consumer).acknowledgeWarning(
      'sqs-inbox:dlq-console-redrive',
      'the dead-letter queue is redriven with npx sqs-inbox dlq redrive, which keeps each message key',
    );
    this.cleanup = new InboxCleanup(this, 'Cleanup', {
      database: this.database,
      ...(props.retention === undefined ? {} : { retention: props.retention }),
    });
    // Only when a consumer sends: the sweeper runs every minute, and without a sender it would only keep the database awake.
    const senders = [this.consumer].filter((consumer) => Object.keys(consumer.destinations).length > 0);
    if (senders.length > 0) this.outboxRelay = new InboxOutboxRelay(this, 'OutboxRelay', { database: this.database, consumers: senders });
    this.alarms = new InboxAlarms(this, 'Alarms', {
      consumers: [this.consumer],
      cleanup: this.cleanup,
      ...(this.outboxRelay === undefined ? {} : { outboxRelay: this.outboxRelay }),
      createTopic: true,
      dashboardName: `${this.stackName}-inbox`,
    });
    if (props.alarmEmail !== undefined && this.alarms.topic instanceof sns.Topic) {
      this.alarms.topic.addSubscription(new subscriptions.EmailSubscription(props.alarmEmail));
    }

    new CfnOutput(this, 'QueueUrl', { value: this.queue.queue.queueUrl, description: 'Send orders here (FIFO).' });
    if (this.queue.deadLetterQueue !== undefined) {
      new CfnOutput(this, 'DeadLetterQueueUrl', { value: this.queue.deadLetterQueue.queueUrl });
    }
    if (this.invoices !== undefined) {
      new CfnOutput(this, 'InvoicesQueueUrl', { value: this.invoices.queue.queueUrl, description: "The order worker's outbox destination 'invoices' (FIFO)." });
    }
    new CfnOutput(this, 'ClusterArn', { value: this.database.cluster.clusterArn, description: 'INBOX_RESOURCE_ARN' });
    new CfnOutput(this, 'SecretArn', {
      value: this.database.secret.secretArn,
      description: "The master user (the migration function's): for administration only",
    });
    new CfnOutput(this, 'OrderWorkerSecretArn', {
      value: this.consumer.databaseRole.secret.secretArn,
      description: 'INBOX_SECRET_ARN of the order worker: its own role',
    });
    new CfnOutput(this, 'DatabaseName', { value: this.database.databaseName, description: 'INBOX_DATABASE' });
    new CfnOutput(this, 'OrderWorkerLogGroup', { value: this.consumer.logGroup.logGroupName });
    if (this.alarms.topic !== undefined) new CfnOutput(this, 'AlarmTopicArn', { value: this.alarms.topic.topicArn });
  }
}
