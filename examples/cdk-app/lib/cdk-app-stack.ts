// lib/cdk-app-stack.ts: the same stack in the CommonJS app `cdk init app --language typescript` makes
import * as path from 'node:path';
import * as cdk from 'aws-cdk-lib/core';
import type { Construct } from 'constructs';
import { InboxAlarms, InboxCleanup, InboxConsumer, InboxDatabase, InboxQueue, InboxSources } from 'sqs-inbox/cdk';

export class CdkAppStack extends cdk.Stack {
  constructor(scope: Construct, id: string, props?: cdk.StackProps) {
    super(scope, id, props);
    const queue = new InboxQueue(this, 'Payments', { visibilityTimeout: cdk.Duration.minutes(6) });
    const database = new InboxDatabase(this, 'Inbox', { autoPause: cdk.Duration.minutes(10) });
    const worker = new InboxConsumer(this, 'PaymentsWorker', {
      database,
      source: InboxSources.sqs(queue.queue, { deadLetterQueue: queue.deadLetterQueue }),
      consumerName: 'payments',
      // The worker signs in as its own database role, which may touch only the inbox until granted more.
      // public.payments must exist before the deploy creates the role (your own migration).
      databaseGrants: [{ table: 'public.payments', privileges: ['INSERT'] }],
      // CommonJS has no import.meta: __dirname is this file's folder.
      entry: path.join(__dirname, '../src/payments-worker.ts'),
      timeout: cdk.Duration.minutes(1),
    });
    const cleanup = new InboxCleanup(this, 'Cleanup', { database, retention: cdk.Duration.days(30) });
    new InboxAlarms(this, 'Alarms', { consumers: [worker], cleanup, createTopic: true });
  }
}
