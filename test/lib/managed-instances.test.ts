import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { describe, expect, it } from 'vitest';
import { InboxConsumer, InboxDatabase, InboxDatabaseProxy, InboxQueue, InboxSources } from '../../lib/index.js';
import type { InboxConsumerProps } from '../../lib/index.js';
import { FIXTURE_HANDLER, synthError, testStack } from './support.js';

/** A consumer of an SQS queue on a capacity provider in the database's VPC, optionally behind RDS Proxy. */
function managedStack(overrides: Partial<InboxConsumerProps> & { readonly viaProxy?: boolean; readonly batchSize?: number } = {}) {
  const { viaProxy, batchSize, ...props } = overrides;
  const stack = testStack();
  const queue = new InboxQueue(stack, 'Orders');
  const database = new InboxDatabase(stack, 'Db');
  const securityGroup = new ec2.SecurityGroup(stack, 'InstancesSg', { vpc: database.vpc! });
  const capacityProvider = new lambda.CapacityProvider(stack, 'Capacity', {
    securityGroups: [securityGroup],
    subnets: [...database.vpc!.privateSubnets, ...database.vpc!.isolatedSubnets],
    architectures: [lambda.Architecture.ARM_64],
  });
  const consumer = new InboxConsumer(stack, 'Worker', {
    database,
    source: InboxSources.sqs(queue.queue, batchSize === undefined ? {} : { batchSize }),
    consumerName: 'order-worker',
    entry: FIXTURE_HANDLER,
    capacityProvider,
    ...(viaProxy ? { proxy: new InboxDatabaseProxy(stack, 'Proxy', { database }) } : {}),
    ...props,
  });
  return { stack, consumer, capacityProvider };
}

const BOUNDED = { perExecutionEnvironmentMaxConcurrency: 8, latestPublishedScalingConfig: { maxExecutionEnvironments: 4 } };

describe('InboxConsumer on Lambda Managed Instances', () => {
  it('runs the function on the capacity provider, with the concurrency and scaling it is given', () => {
    const { stack, capacityProvider } = managedStack({ managedInstances: BOUNDED, batchSize: 4 });
    const template = Template.fromStack(stack);
    template.hasResourceProperties('AWS::Lambda::Function', {
      Runtime: 'nodejs24.x',
      CapacityProviderConfig: {
        LambdaManagedInstancesCapacityProviderConfig: {
          CapacityProviderArn: Match.anyValue(),
          PerExecutionEnvironmentMaxConcurrency: 8,
        },
      },
      FunctionScalingConfig: { MaxExecutionEnvironments: 4 },
    });
    expect(capacityProvider.capacityProviderArn).toBeDefined();
    Annotations.fromStack(stack).hasNoWarning('*', Match.stringLikeRegexp('5 MB/s'));
  });

  it('refuses unbounded environments: nothing would bound the database connections', () => {
    const { stack } = managedStack({ managedInstances: { perExecutionEnvironmentMaxConcurrency: 8 }, batchSize: 4 });
    expect(synthError(stack)).toContain(
      '`managedInstances.latestPublishedScalingConfig.maxExecutionEnvironments` is not set, so nothing bounds the execution environments, ' +
        'nor the database connections they hold (a transaction per record at once, in each invocation). Fix: set `maxExecutionEnvironments`',
    );
  });

  it("refuses more Data API transactions at once than the cluster's connections, naming the environments that fit", () => {
    // 100 environments x 8 invocations x 10 records: 8,000 transactions, beyond 2 ACUs' connections.
    const { stack } = managedStack({
      managedInstances: { perExecutionEnvironmentMaxConcurrency: 8, latestPublishedScalingConfig: { maxExecutionEnvironments: 100 } },
      batchSize: 4,
    });
    expect(synthError(stack)).toMatch(
      /100 execution environments x 80 connections each may hold 8000 connections, more than the at most \d+ the cluster's maximum capacity gives: .* Fix: lower `maxExecutionEnvironments` to \d+, `perExecutionEnvironmentMaxConcurrency`, or raise InboxDatabase `maxCapacity`\./,
    );
  });

  it("behind RDS Proxy, counts each environment's pool against the proxy's share of the cluster's connections", () => {
    const { stack } = managedStack({
      viaProxy: true,
      postgresPoolSize: 8,
      managedInstances: { perExecutionEnvironmentMaxConcurrency: 8, latestPublishedScalingConfig: { maxExecutionEnvironments: 200 } },
      batchSize: 4,
    });
    expect(synthError(stack)).toMatch(
      /200 execution environments x 8 connections each may hold 1600 connections, more than the at most \d+ the proxy may open \(its `maxConnectionsPercent` of the cluster's\)/,
    );
  });

  it('behind RDS Proxy, refuses a pool smaller than the invocations of one environment', () => {
    const { stack } = managedStack({ viaProxy: true, managedInstances: BOUNDED, batchSize: 4 });
    expect(synthError(stack)).toContain(
      '`managedInstances.perExecutionEnvironmentMaxConcurrency` (8) lets one process run 8 invocations at once, but `postgresPoolSize` is 2',
    );
    const sized = managedStack({ viaProxy: true, postgresPoolSize: 8, managedInstances: BOUNDED, batchSize: 4 });
    expect(() => Template.fromStack(sized.stack)).not.toThrow();
  });

  it('warns when a batch of the largest messages is more than a second of the SQS source’s fixed 5 MB/s', () => {
    const { stack } = managedStack({ managedInstances: BOUNDED, batchSize: 10 });
    Annotations.fromStack(stack).hasWarning(
      '/Test/Worker',
      Match.stringLikeRegexp(
        'On Lambda Managed Instances the SQS event source delivers at most 5 MB/s.*a batch of 10 messages of up to 1 MiB each is 10.5 MB.*Fix: keep batchSize x the largest message under 5 MB \\(batchSize 4 for 1 MiB messages',
      ),
    );
  });

  it('refuses `managedInstances` without a capacity provider', () => {
    const { stack } = managedStack({ capacityProvider: undefined, managedInstances: BOUNDED });
    expect(synthError(stack)).toContain('`managedInstances` is set, but `capacityProvider` is not');
  });
});
