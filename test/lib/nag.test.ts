import { Duration, Validations } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';
import { Template } from 'aws-cdk-lib/assertions';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { InboxAlarms, InboxCleanup, InboxConsumer, InboxDatabase, InboxOutboxRelay, InboxQueue, InboxSources } from '../../lib/index.js';
import { InboxStack } from '../../demo/stacks/inbox-stack.js';
import { InboxStreamsStack } from '../../demo/stacks/inbox-streams-stack.js';
import { FIXTURE_HANDLER, testApp, testStack } from './support.js';

function findings(app: ReturnType<typeof testApp>) {
  return new AwsSolutionsChecks().validateScope(app).violations.map((violation) => ({
    rule: violation.ruleName,
    at: violation.violatingResources.map((resource) => resource.constructPath ?? resource.resourceLogicalId),
  }));
}

describe('cdk-nag AwsSolutions', () => {
  it('finds nothing unacknowledged in InboxStack', () => {
    const app = testApp();
    const stack = new InboxStack(app, 'InboxStack', { alarmEmail: 'oncall@example.com' });
    Template.fromStack(stack);
    expect(findings(app)).toEqual([]);
  });

  it('finds nothing unacknowledged when the constructs wrap a user handler on a standard queue', () => {
    const stack = testStack('Mine');
    const database = new InboxDatabase(stack, 'Db', { autoPause: Duration.minutes(5) });
    const queue = new InboxQueue(stack, 'Events', { fifo: false, visibilityTimeout: Duration.minutes(4) });
    const consumer = new InboxConsumer(stack, 'Worker', {
      database,
      source: InboxSources.sqs(queue.queue, { maxBatchingWindow: Duration.seconds(2) }),
      consumerName: 'events',
      entry: FIXTURE_HANDLER,
    });
    const cleanup = new InboxCleanup(stack, 'Cleanup', { database });
    new InboxAlarms(stack, 'Alarms', { consumers: [consumer], cleanup, topic: new sns.Topic(stack, 'Pager', { enforceSSL: true }) });
    Template.fromStack(stack);
    expect(findings(stack.node.root as ReturnType<typeof testApp>)).toEqual([]);
  });

  it('finds nothing unacknowledged in InboxStreamsStack, and acknowledges only what it must, each with its reason', () => {
    // Arrange + Act
    const app = testApp();
    const inbox = new InboxStack(app, 'InboxStack');
    const streams = new InboxStreamsStack(app, 'InboxStreamsStack', { database: inbox.database, alarmTopic: inbox.alarms.topic });
    Template.fromStack(streams);

    // Assess
    expect(findings(app)).toEqual([]);
    const acknowledged: string[] = [];
    const walk = (construct: IConstruct): void => {
      for (const entry of construct.node.metadata) {
        if (entry.type !== Validations.ACKNOWLEDGED_RULES_METADATA_KEY) continue;
        for (const [id, reason] of Object.entries(entry.data as Record<string, string>)) {
          expect(reason.length, id).toBeGreaterThan(80);
          acknowledged.push(`${id.replace(/^Annotation::/, '')} ${construct.node.path.replace(/^InboxStreamsStack\//, '')}`);
        }
      }
      construct.node.children.forEach(walk);
    };
    walk(streams);
    expect(acknowledged.sort()).toEqual(
      [
        // The on-failure queue of each consumer: cdk-nag does not count an event source mapping's destination as a DLQ.
        'AwsSolutions-SQS3 DynamoDbWorker/DeadLetterQueue',
        'AwsSolutions-SQS3 KafkaWorker/DeadLetterQueue',
        'AwsSolutions-SQS3 KinesisWorker/DeadLetterQueue',
        'AwsSolutions-SQS3 MskWorker/DeadLetterQueue',
        // dynamodb:ListStreams takes no resource; MSK's network interfaces are Lambda's to choose.
        'AwsSolutions-IAM5[Resource::*] DynamoDbWorker/Handler/Role',
        'AwsSolutions-IAM5[Resource::*] MskWorker/Handler/Role',
        // The master secret, imported here, rotates in InboxStack (the roles' secrets rotate here, through its rotation).
        'AwsSolutions-SMG4 MasterSecret',
      ].sort(),
    );
  });

  it('finds nothing unacknowledged in InboxStack with the invoices outbox, and acknowledges nothing on the relay', () => {
    // Arrange + Act
    const app = testApp();
    const stack = new InboxStack(app, 'InboxStack', { invoices: true });
    Template.fromStack(stack);

    // Assess
    expect(findings(app)).toEqual([]);
    const acknowledged = stack
      .outboxRelay!.node.findAll()
      .flatMap((c) =>
        c.node.metadata
          .filter((m) => m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
          .map((m) => [c.node.path, Object.keys(m.data as object).map((id) => id.replace(/^Annotation::/, ''))]),
      );
    expect(acknowledged).toEqual([]);
  });

  it('finds nothing unacknowledged in a consumer sending to a queue under a customer managed key, with its relay and alarms', () => {
    const stack = testStack('Sender');
    const database = new InboxDatabase(stack, 'Db');
    const orders = new InboxQueue(stack, 'Orders');
    const key = new kms.Key(stack, 'InvoiceKey', { enableKeyRotation: true });
    const invoices = new InboxQueue(stack, 'Invoices', { encryption: sqs.QueueEncryption.KMS_MANAGED });
    const audit = new sqs.Queue(stack, 'Audit', {
      encryption: sqs.QueueEncryption.KMS,
      encryptionMasterKey: key,
      enforceSSL: true,
      deadLetterQueue: { queue: invoices.deadLetterQueue!, maxReceiveCount: 5 },
    });
    const consumer = new InboxConsumer(stack, 'Worker', {
      database,
      source: InboxSources.sqs(orders.queue),
      consumerName: 'orders',
      entry: FIXTURE_HANDLER,
      destinations: { invoices: invoices.queue, audit },
    });
    const relay = new InboxOutboxRelay(stack, 'OutboxRelay', { database, consumers: [consumer] });
    new InboxAlarms(stack, 'Alarms', { consumers: [consumer], outboxRelay: relay, createTopic: true });
    Template.fromStack(stack);
    expect(findings(stack.node.root as ReturnType<typeof testApp>)).toEqual([]);
  });

  it('accepts deletion protection turned off on purpose, and only then', () => {
    const app = testApp();
    const stack = new InboxStack(app, 'InboxStack', { deletionProtection: false });
    Template.fromStack(stack);
    expect(findings(app)).toEqual([]);
    const acknowledged = JSON.stringify(stack.database.cluster.node.metadata);
    expect(acknowledged).toContain('AwsSolutions-RDS10');
    expect(JSON.stringify(new InboxStack(testApp(), 'Protected').database.cluster.node.metadata)).not.toContain('AwsSolutions-RDS10');
  });

  it('reports what it should: a queue without TLS enforcement or a dead-letter queue is flagged', () => {
    // Guards the test setup itself: validateScope must see findings when there are some.
    const stack = testStack('Bad');
    new sqs.Queue(stack, 'Plain', { encryption: sqs.QueueEncryption.UNENCRYPTED });
    Template.fromStack(stack);
    const rules = findings(stack.node.root as ReturnType<typeof testApp>).map((f) => f.rule);
    expect(rules).toEqual(expect.arrayContaining(['AwsSolutions-SQS3', 'AwsSolutions-SQS4']));
  });
});
