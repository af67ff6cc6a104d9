// lib/payments-stack.ts: your CDK app as `cdk init app --language typescript` made it (CommonJS)
import * as path from 'node:path';
import { Duration, Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { InboxAlarms, InboxCleanup, InboxConsumer, InboxDatabase, InboxQueue, InboxSources, MigrationSet } from 'sqs-inbox/cdk';

export class PaymentsStack extends Stack {
  constructor(scope: Construct, id: string, props?: StackProps) {
    super(scope, id, props);
    const queue = new InboxQueue(this, 'Payments', { visibilityTimeout: Duration.minutes(6) });
    const database = new InboxDatabase(this, 'Inbox', {
      autoPause: Duration.minutes(10),
      // Your own tables, applied at deploy after the inbox's: migrations/payments/001_create_payments.sql, 002_...
      migrations: [MigrationSet.fromDirectory(path.join(__dirname, '../migrations/payments'))],
    });
    const worker = new InboxConsumer(this, 'PaymentsWorker', {
      database,
      source: InboxSources.sqs(queue.queue, {
        deadLetterQueue: queue.deadLetterQueue, // watched by the dead-letter alarm
        batchSize: 10, // at most 10 on a FIFO queue
        maxConcurrency: 5,
      }),
      consumerName: 'payments', // part of every inbox key: unique per database, never renamed
      // The worker signs in as its own database role, which may touch only the inbox until granted more;
      // the migrations above run before the role is granted this.
      databaseGrants: [{ table: 'public.payments', privileges: ['INSERT'] }],
      // CommonJS has no import.meta: __dirname is this file's folder (lib/).
      entry: path.join(__dirname, '../src/payments-worker.ts'),
      handler: 'handler',
      timeout: Duration.minutes(1), // the queue's visibility timeout must be at least 6 x this
    });
    const cleanup = new InboxCleanup(this, 'Cleanup', { database, retention: Duration.days(30) });
    new InboxAlarms(this, 'Alarms', { consumers: [worker], cleanup, createTopic: true });
  }
}
