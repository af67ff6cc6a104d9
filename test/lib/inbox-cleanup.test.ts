import { Duration } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as events from 'aws-cdk-lib/aws-events';
import { describe, expect, it } from 'vitest';
import { InboxCleanup, InboxDatabase } from '../../lib/index.js';
import { logicalId, synthError, testStack } from './support.js';

function cleanupStack(props: Partial<ConstructorParameters<typeof InboxCleanup>[2]> = {}) {
  const stack = testStack();
  const database = new InboxDatabase(stack, 'Db');
  const cleanup = new InboxCleanup(stack, 'Cleanup', { database, ...props });
  return { stack, database, cleanup, template: Template.fromStack(stack) };
}

describe('InboxCleanup', () => {
  it('runs the purge hourly from an EventBridge rule, with no extra role', () => {
    const { template, stack, cleanup } = cleanupStack();
    template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(1 hour)',
      State: 'ENABLED',
      Targets: [
        Match.objectLike({
          Arn: { 'Fn::GetAtt': [logicalId(stack, cleanup.function), 'Arn'] },
          RetryPolicy: { MaximumRetryAttempts: 2, MaximumEventAgeInSeconds: 3600 },
        }),
      ],
    });
    template.hasResourceProperties('AWS::Lambda::Permission', {
      Action: 'lambda:InvokeFunction',
      Principal: 'events.amazonaws.com',
    });
    template.resourceCountIs('AWS::Scheduler::Schedule', 0);
  });

  it('tells the purge the table, the retention in seconds and its metric identity', () => {
    const { template, stack, cleanup } = cleanupStack({ retention: Duration.days(45), purgeBatchSize: 500 });
    const env = template.toJSON().Resources[logicalId(stack, cleanup.function)].Properties.Environment.Variables;
    expect(env).toEqual({
      INBOX_RESOURCE_ARN: expect.objectContaining({ 'Fn::Join': expect.anything() }),
      INBOX_SECRET_ARN: { Ref: stack.getLogicalId(cleanup.databaseRole!.secret.node.defaultChild as never) },
      INBOX_DATABASE: 'inbox',
      INBOX_RETENTION_SECONDS: String(45 * 86400),
      INBOX_PURGE_BATCH_SIZE: '500',
      POWERTOOLS_METRICS_NAMESPACE: 'SqsInbox',
      POWERTOOLS_SERVICE_NAME: cleanup.serviceName,
    });
    expect(cleanup.serviceName).toMatch(/^inbox-cleanup-Test-Cleanup-[A-F0-9]{8}$/);
  });

  it('gives every cleanup its own metric service name, even under equal construct ids in other stacks', () => {
    const a = cleanupStack();
    const stack = testStack('Other');
    const b = new InboxCleanup(stack, 'Cleanup', { database: new InboxDatabase(stack, 'Db') });
    const c = new InboxCleanup(stack, 'Cleanup2', { database: new InboxDatabase(stack, 'Db2') });
    const names = [a.cleanup.serviceName, b.serviceName, c.serviceName];
    expect(new Set(names).size).toBe(3);
    const env = Template.fromStack(stack).toJSON().Resources[logicalId(stack, c.function)].Properties.Environment.Variables;
    expect(env.POWERTOOLS_SERVICE_NAME).toBe(c.serviceName);
  });

  it('refuses a timeout under 2 minutes: the runtime keeps 65 seconds of it for its metrics', () => {
    const stack = testStack();
    new InboxCleanup(stack, 'Cleanup', { database: new InboxDatabase(stack, 'Db'), timeout: Duration.seconds(119) });
    expect(synthError(stack)).toMatch(
      /InboxCleanup `timeout` is 119 seconds, but the purge keeps 65 seconds of it .* Fix: set `timeout` to at least 2 minutes/,
    );
    const ok = testStack();
    new InboxCleanup(ok, 'Cleanup', { database: new InboxDatabase(ok, 'Db'), timeout: Duration.minutes(2) });
    expect(() => Template.fromStack(ok)).not.toThrow();
  });

  it('keeps rows 30 days by default and leaves the batch size to the runtime', () => {
    const { template, stack, cleanup } = cleanupStack();
    const env = template.toJSON().Resources[logicalId(stack, cleanup.function)].Properties.Environment.Variables;
    expect(env.INBOX_RETENTION_SECONDS).toBe(String(30 * 86400));
    expect(env).not.toHaveProperty('INBOX_PURGE_BATCH_SIZE');
  });

  it('runs as an ARM64 Node.js 24 function outside the VPC with a 5-minute timeout and its own log group', () => {
    const { template, stack, cleanup } = cleanupStack();
    const fn = template.toJSON().Resources[logicalId(stack, cleanup.function)].Properties;
    expect(fn).toMatchObject({
      Runtime: 'nodejs24.x',
      Architectures: ['arm64'],
      Handler: 'index.handler',
      Timeout: 300,
      LoggingConfig: { LogGroup: { Ref: stack.getLogicalId(cleanup.logGroup.node.defaultChild as never) } },
    });
    expect(fn.VpcConfig).toBeUndefined();
  });

  it('takes another schedule', () => {
    const { template } = cleanupStack({ schedule: events.Schedule.cron({ minute: '15', hour: '3' }) });
    template.hasResourceProperties('AWS::Events::Rule', { ScheduleExpression: 'cron(15 3 * * ? *)' });
  });

  it('refuses a retention that is not a whole number of seconds, and a non-positive batch size', () => {
    const stack = testStack();
    const database = new InboxDatabase(stack, 'Db');
    expect(() => new InboxCleanup(stack, 'A', { database, retention: Duration.millis(1500) })).toThrow(
      /`retention` must be a whole number of seconds, got 1\.5\. Fix: /,
    );
    expect(() => new InboxCleanup(stack, 'B', { database, purgeBatchSize: 0 })).toThrow(/`purgeBatchSize` must be a positive integer, got 0\. Fix: /);
  });
});
