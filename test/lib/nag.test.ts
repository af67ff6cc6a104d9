import { Duration } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { InboxAlarms, InboxCleanup, InboxConsumer, InboxDatabase, InboxQueue, InboxStack } from '../../lib/index.js';
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
    const queue = new InboxQueue(stack, 'Events', { fifo: false });
    const consumer = new InboxConsumer(stack, 'Worker', {
      database, queue: queue.queue, consumerName: 'events', entry: FIXTURE_HANDLER, maxBatchingWindow: Duration.seconds(2),
    });
    const cleanup = new InboxCleanup(stack, 'Cleanup', { database });
    new InboxAlarms(stack, 'Alarms', { consumers: [consumer], cleanup, topic: new sns.Topic(stack, 'Pager', { enforceSSL: true }) });
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
