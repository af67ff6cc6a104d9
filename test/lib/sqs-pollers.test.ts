import { Duration } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { describe, expect, it } from 'vitest';
import { InboxConsumer, InboxDatabase, InboxQueue, InboxSources } from '../../lib/index.js';
import type { InboxDatabaseProps, InboxSqsSourceOptions } from '../../lib/index.js';
import { FIXTURE_HANDLER, synthError, testStack } from './support.js';

/** An SQS consumer with the source's `options`, on a queue whose visibility timeout fits the default 30-second timeout. */
function sqsConsumer(options: InboxSqsSourceOptions = {}, database: InboxDatabaseProps = {}) {
  const stack = testStack();
  const consumer = new InboxConsumer(stack, 'Worker', {
    database: new InboxDatabase(stack, 'Db', database),
    source: InboxSources.sqs(new InboxQueue(stack, 'Orders').queue, options),
    consumerName: 'order-worker',
    entry: FIXTURE_HANDLER,
  });
  return { stack, consumer };
}

describe('SQS provisioned pollers', () => {
  it('sets provisioned mode on the event source mapping, without a maximum concurrency', () => {
    // Arrange + Act
    const { stack } = sqsConsumer({ provisionedPollers: { minimumPollers: 2, maximumPollers: 4 } });

    // Assess
    Template.fromStack(stack).hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      ProvisionedPollerConfig: { MinimumPollers: 2, MaximumPollers: 4 },
      ScalingConfig: Match.absent(),
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
  });

  it('keeps standard mode with a maximum concurrency of 5 by default', () => {
    const { stack } = sqsConsumer();
    Template.fromStack(stack).hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      ProvisionedPollerConfig: Match.absent(),
      ScalingConfig: { MaximumConcurrency: 5 },
    });
  });

  it('refuses `maxConcurrency` beside provisioned pollers, with the pollers that keep its ceiling', () => {
    expect(synthError(sqsConsumer({ maxConcurrency: 50, provisionedPollers: { maximumPollers: 8 } }).stack)).toContain(
      "[Test/Worker] the SQS source's `maxConcurrency` (50) and `provisionedPollers` are both set, but Lambda takes one or the other: " +
        'in provisioned mode the ceiling is `maximumPollers` x 10 concurrent invocations. ' +
        'Fix: remove `maxConcurrency` and set `provisionedPollers.maximumPollers` to 5 for at most 50 concurrent invocations.',
    );
    expect(synthError(sqsConsumer({ maxConcurrency: 5, provisionedPollers: { maximumPollers: 2 } }).stack)).toContain(
      'Fix: remove `provisionedPollers` to keep at most 5 concurrent invocations: provisioned mode cannot go below 2 pollers, 20 invocations.',
    );
  });

  it("refuses pollers outside SQS's ranges, an unset maximum, a minimum above the maximum and a poller group, all at once", () => {
    // Act
    const tooFew = synthError(sqsConsumer({ provisionedPollers: { minimumPollers: 1, maximumPollers: 2001 } }).stack);
    const unbounded = synthError(sqsConsumer({ provisionedPollers: { minimumPollers: 4, pollerGroupName: 'shared' } }).stack);
    const inverted = synthError(sqsConsumer({ provisionedPollers: { minimumPollers: 6, maximumPollers: 3 } }).stack);

    // Assess
    expect(tooFew).toContain(
      '`provisionedPollers.minimumPollers` is 1, but an SQS event source takes a whole number from 2 to 200. Fix: set `minimumPollers` within 2 to 200.',
    );
    expect(tooFew).toContain('`provisionedPollers.maximumPollers` is 2001, but an SQS event source takes a whole number from 2 to 2000.');
    expect(unbounded).toContain(
      '`provisionedPollers.maximumPollers` is not set, so Lambda uses its default of 200 pollers: up to 2,000 concurrent invocations',
    );
    expect(unbounded).toContain(
      '`provisionedPollers.pollerGroupName` is set, but poller groups are for Amazon MSK and self-managed Kafka only. Fix: remove `pollerGroupName`.',
    );
    expect(inverted).toContain('`provisionedPollers.minimumPollers` (6) exceeds `maximumPollers` (3). Fix: lower `minimumPollers` to at most 3');
  });

  it("refuses more transactions at once than the cluster's maximum capacity has connections for", () => {
    // Arrange: 0.5 to 2 ACUs give at most 450 connections; 5 pollers x 10 invocations x 10 records need 500.
    const refused = sqsConsumer({ provisionedPollers: { maximumPollers: 5 } });
    const fits = sqsConsumer({ provisionedPollers: { maximumPollers: 4 } });
    const larger = sqsConsumer({ provisionedPollers: { maximumPollers: 5 } }, { maxCapacity: 4 });
    const smallBatches = sqsConsumer({ provisionedPollers: { maximumPollers: 5 }, batchSize: 5 });

    // Assess
    expect(synthError(refused.stack)).toContain(
      '[Test/Worker] `provisionedPollers.maximumPollers` (5) allows 500 transactions at once (50 invocations x 10 records each), ' +
        "more than the at most 450 connections the cluster's maximum capacity gives",
    );
    expect(synthError(refused.stack)).toContain('Fix: lower `maximumPollers` to 4, raise InboxDatabase `maxCapacity`');
    for (const { stack } of [fits, larger, smallBatches]) expect(() => Template.fromStack(stack)).not.toThrow();
  });

  it("refuses a poller ceiling above the function's reserved concurrency, which would throttle batches back to the queue", () => {
    // Arrange: reserved concurrency set through an escape hatch, after the consumer.
    const { stack, consumer } = sqsConsumer({ provisionedPollers: { maximumPollers: 3 } });
    (consumer.function.node.defaultChild as lambda.CfnFunction).reservedConcurrentExecutions = 20;

    // Assess
    expect(synthError(stack)).toContain(
      "`provisionedPollers.maximumPollers` (3) lets Lambda start 30 concurrent invocations, but the function's reserved concurrency is 20",
    );
    expect(synthError(stack)).toContain('Fix: set `maximumPollers` to at most 2, or the reserved concurrency to at least 30.');
  });

  it('counts the batching window in the visibility timeout the queue needs', () => {
    // Arrange: 6 x 30 s = 3 minutes would be enough without the window.
    const stack = testStack();
    const queue = new sqs.Queue(stack, 'Events', { visibilityTimeout: Duration.minutes(3) });
    new InboxConsumer(stack, 'Worker', {
      database: new InboxDatabase(stack, 'Db'),
      source: InboxSources.sqs(queue, { maxBatchingWindow: Duration.seconds(20) }),
      consumerName: 'events',
      entry: FIXTURE_HANDLER,
    });

    // Assess
    expect(synthError(stack)).toContain(
      "[Test/Worker] the queue's visibility timeout (3 minutes) is less than 6 x the consumer's `timeout` (30 seconds) plus its " +
        '`maxBatchingWindow` (20 seconds). A message could become visible again while it is still being processed, or be moved to ' +
        "the dead-letter queue early. Fix: set the queue's `visibilityTimeout` to at least 200 seconds, or lower InboxConsumer " +
        '`timeout` to at most 26 seconds (or shorten `maxBatchingWindow`).',
    );
  });
});
