import { CfnParameter, Duration } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as rds from 'aws-cdk-lib/aws-rds';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { describe, expect, it } from 'vitest';
import { InboxCleanup, InboxConsumer, InboxDatabase, InboxQueue, InboxSources } from '../../lib/index.js';
import type { InboxSqsSourceOptions } from '../../lib/index.js';
import { FIXTURE_HANDLER, synthError, testStack } from './support.js';

/** A consumer of an InboxQueue, with the SQS source's `options`. */
function withConsumer(options: InboxSqsSourceOptions = {}) {
  const stack = testStack();
  const database = new InboxDatabase(stack, 'Db');
  const queue = new InboxQueue(stack, 'Orders').queue;
  new InboxConsumer(stack, 'Worker', { database, consumerName: 'order-worker', entry: FIXTURE_HANDLER, source: InboxSources.sqs(queue, options) });
  return { stack, database };
}

describe('synth-time invariants', () => {
  it('accepts the defaults', () => {
    const { stack, database } = withConsumer();
    new InboxCleanup(stack, 'Cleanup', { database });
    expect(() => Template.fromStack(stack)).not.toThrow();
  });

  it('refuses an inbox retention that does not exceed the redelivery window', () => {
    // Prepare: queue 4 days + dead-letter queue 14 days = 18 days of possible redelivery
    const { stack, database } = withConsumer();

    // Act
    new InboxCleanup(stack, 'Cleanup', { database, retention: Duration.days(18) });

    // Assess
    expect(synthError(stack)).toContain(
      "[Test/Cleanup] InboxCleanup `retention` (18 days) does not exceed the redelivery window of consumer 'order-worker' " +
        '(18 days: queue retention plus dead-letter queue retention). A message redelivered after its inbox row was purged ' +
        "would be applied a second time. Fix: set InboxCleanup `retention` to more than 18 days, or shorten the queues' retention periods",
    );
  });

  it('counts only the queue retention when the queue has no dead-letter queue to redrive from', () => {
    const stack = testStack();
    const database = new InboxDatabase(stack, 'Db');
    const queue = new sqs.Queue(stack, 'Plain', { retentionPeriod: Duration.days(4), visibilityTimeout: Duration.minutes(3) });
    new InboxConsumer(stack, 'Worker', { database, source: InboxSources.sqs(queue), consumerName: 'w', entry: FIXTURE_HANDLER });
    new InboxCleanup(stack, 'Cleanup', { database, retention: Duration.days(5) });
    expect(() => Template.fromStack(stack)).not.toThrow();
  });

  it('checks the retention against consumers of the same table only, wherever they are declared', () => {
    const build = (withConsumerOnThisTable: boolean) => {
      const stack = testStack();
      const database = new InboxDatabase(stack, 'Db');
      const other = new InboxDatabase(stack, 'Other');
      // Cleanup first: the check must still see consumers declared after it.
      new InboxCleanup(stack, 'Cleanup', { database, retention: Duration.days(2) });
      new InboxConsumer(stack, 'Elsewhere', {
        database: other,
        source: InboxSources.sqs(new InboxQueue(stack, 'Q1').queue),
        consumerName: 'x',
        entry: FIXTURE_HANDLER,
      });
      if (withConsumerOnThisTable) {
        new InboxConsumer(stack, 'Here', { database, source: InboxSources.sqs(new InboxQueue(stack, 'Q2').queue), consumerName: 'y', entry: FIXTURE_HANDLER });
      }
      return stack;
    };
    expect(() => Template.fromStack(build(false))).not.toThrow();
    expect(synthError(build(true))).toContain("does not exceed the redelivery window of consumer 'y'");
  });

  it('refuses a visibility timeout below six times the consumer timeout', () => {
    const stack = testStack();
    const database = new InboxDatabase(stack, 'Db');
    const queue = new InboxQueue(stack, 'Orders', { visibilityTimeout: Duration.minutes(2) }).queue;
    new InboxConsumer(stack, 'Worker', { database, source: InboxSources.sqs(queue), consumerName: 'w', entry: FIXTURE_HANDLER, timeout: Duration.seconds(30) });
    expect(synthError(stack)).toContain(
      "[Test/Worker] the queue's visibility timeout (2 minutes) is less than 6 x the consumer's `timeout` (30 seconds). " +
        'A message could become visible again while it is still being processed, or be moved to the dead-letter queue early. ' +
        "Fix: set the queue's `visibilityTimeout` to at least 3 minutes, or lower InboxConsumer `timeout` to at most 20 seconds.",
    );
  });

  it('checks the queue as synthesized, including changes made through escape hatches after the consumer', () => {
    const stack = testStack();
    const database = new InboxDatabase(stack, 'Db');
    const queue = new InboxQueue(stack, 'Orders').queue;
    new InboxConsumer(stack, 'Worker', { database, source: InboxSources.sqs(queue), consumerName: 'w', entry: FIXTURE_HANDLER });
    (queue.node.defaultChild as sqs.CfnQueue).visibilityTimeout = 60;
    expect(synthError(stack)).toContain("[Test/Worker] the queue's visibility timeout (1 minute) is less than 6 x");
  });

  it('refuses a FIFO queue with a standard dead-letter queue', () => {
    const stack = testStack();
    const deadLetterQueue = new sqs.Queue(stack, 'StandardDlq');
    const queue = new sqs.Queue(stack, 'Fifo', {
      fifo: true,
      visibilityTimeout: Duration.minutes(3),
      deadLetterQueue: { queue: deadLetterQueue, maxReceiveCount: 5 },
    });
    const database = new InboxDatabase(stack, 'Db');
    new InboxConsumer(stack, 'Worker', { database, source: InboxSources.sqs(queue), consumerName: 'w', entry: FIXTURE_HANDLER });
    expect(synthError(stack)).toContain(
      "[Test/Worker] the consumer's queue is a FIFO queue but its dead-letter queue is a standard queue. " +
        'Fix: create the dead-letter queue with `fifo: true` (InboxQueue does this for you).',
    );
  });

  it('refuses a batch size above 10 on a FIFO queue', () => {
    const { stack } = withConsumer({ batchSize: 25 });
    expect(synthError(stack)).toContain(
      "[Test/Worker] the SQS source's `batchSize` is 25, but a FIFO queue delivers at most 10 records per batch. Fix: set `batchSize` to 10 or less.",
    );
  });

  it('refuses a batching window on a FIFO queue', () => {
    const { stack } = withConsumer({ maxBatchingWindow: Duration.seconds(10) });
    expect(synthError(stack)).toContain(
      "[Test/Worker] the SQS source's `maxBatchingWindow` is set, but Lambda does not support a batching window on a FIFO queue. " +
        'Fix: remove `maxBatchingWindow` (FIFO batches are filled without waiting).',
    );
  });

  it('refuses two consumers with the same name on one table, and reports the clash once', () => {
    const stack = testStack();
    const database = new InboxDatabase(stack, 'Db');
    new InboxConsumer(stack, 'First', {
      database,
      source: InboxSources.sqs(new InboxQueue(stack, 'Q1').queue),
      consumerName: 'orders',
      entry: FIXTURE_HANDLER,
    });
    new InboxConsumer(stack, 'Second', {
      database,
      source: InboxSources.sqs(new InboxQueue(stack, 'Q2').queue),
      consumerName: 'orders',
      entry: FIXTURE_HANDLER,
    });

    const message = synthError(stack);

    expect(message).toContain(
      "[Test/Second] InboxConsumer `consumerName` 'orders' is already used on the inbox table of database 'inbox' on cluster " +
        'Test/Db/Cluster by Test/First. Both would claim the same inbox rows, so each would skip messages the other processed. ' +
        'Fix: give every InboxConsumer on one database a distinct `consumerName`.',
    );
    expect(message.match(/is already used/g)).toHaveLength(1);
  });

  it('treats two InboxDatabase wrappers of one imported cluster and database as one table', () => {
    const build = (clash: boolean) => {
      const stack = testStack();
      const cluster = (id: string) => rds.DatabaseCluster.fromDatabaseClusterAttributes(stack, id, { clusterIdentifier: 'shared', dataApiEnabled: true });
      const secret = new InboxDatabase(stack, 'Owner').secret;
      const a = new InboxDatabase(stack, 'A', { cluster: cluster('CA'), secret });
      const b = new InboxDatabase(stack, 'B', { cluster: cluster('CB'), secret });
      const c = new InboxDatabase(stack, 'C', { cluster: cluster('CC'), secret, databaseName: 'other' });
      new InboxConsumer(stack, 'One', {
        database: a,
        source: InboxSources.sqs(new InboxQueue(stack, 'Q1').queue),
        consumerName: 'dup',
        entry: FIXTURE_HANDLER,
      });
      // Another database of the same cluster: another table, but roles are per cluster, so another role name.
      new InboxConsumer(stack, 'Three', {
        database: c,
        source: InboxSources.sqs(new InboxQueue(stack, 'Q3').queue),
        consumerName: 'dup',
        entry: FIXTURE_HANDLER,
        databaseRole: 'inbox_consumer_dup_other',
      });
      if (clash) {
        new InboxConsumer(stack, 'Two', {
          database: b,
          source: InboxSources.sqs(new InboxQueue(stack, 'Q2').queue),
          consumerName: 'dup',
          entry: FIXTURE_HANDLER,
          databaseRole: 'inbox_consumer_dup_two',
        });
      }
      return stack;
    };
    expect(() => Template.fromStack(build(false))).not.toThrow();
    expect(synthError(build(true))).toContain(
      "[Test/Two] InboxConsumer `consumerName` 'dup' is already used on the inbox table of database 'inbox' on cluster shared by Test/One.",
    );
  });

  it('collects every broken invariant of the app into one error', () => {
    const stack = testStack();
    const database = new InboxDatabase(stack, 'Db');
    const queue = new InboxQueue(stack, 'Orders', { visibilityTimeout: Duration.seconds(60) }).queue;
    new InboxConsumer(stack, 'Worker', {
      database,
      source: InboxSources.sqs(queue, { batchSize: 20, maxBatchingWindow: Duration.seconds(1) }),
      consumerName: 'w',
      entry: FIXTURE_HANDLER,
    });
    new InboxConsumer(stack, 'Again', { database, source: InboxSources.sqs(queue), consumerName: 'w', entry: FIXTURE_HANDLER, timeout: Duration.seconds(10) });
    new InboxCleanup(stack, 'Cleanup', { database, retention: Duration.days(1) });

    const message = synthError(stack);

    expect(message).toMatch(/^Validation failed with the following errors:/);
    for (const expected of [
      "[Test/Worker] the SQS source's `batchSize` is 20",
      "[Test/Worker] the SQS source's `maxBatchingWindow` is set",
      "[Test/Worker] the queue's visibility timeout (1 minute)",
      "[Test/Again] InboxConsumer `consumerName` 'w' is already used",
      "[Test/Again/DatabaseRole] `databaseRole` 'inbox_consumer_w' of Test/Again/DatabaseRole (consumer w) is also the role of Test/Worker/DatabaseRole (consumer w)",
      "[Test/Cleanup] InboxCleanup `retention` (1 day) does not exceed the redelivery window of consumer 'w'",
    ]) {
      expect(message).toContain(expected);
    }
    expect(message.match(/Fix: /g)).toHaveLength(7);
  });

  it('skips a check whose value is an unresolved token', () => {
    const stack = testStack();
    const visibility = new CfnParameter(stack, 'Visibility', { type: 'Number', default: 10 });
    const retention = new CfnParameter(stack, 'Retention', { type: 'Number', default: 60 });
    const database = new InboxDatabase(stack, 'Db');
    const queue = new InboxQueue(stack, 'Orders', {
      visibilityTimeout: Duration.seconds(visibility.valueAsNumber),
      retentionPeriod: Duration.seconds(retention.valueAsNumber),
    }).queue;
    new InboxConsumer(stack, 'Worker', { database, source: InboxSources.sqs(queue), consumerName: 'w', entry: FIXTURE_HANDLER });
    new InboxCleanup(stack, 'Cleanup', { database, retention: Duration.days(1) });
    expect(() => Template.fromStack(stack)).not.toThrow();
  });
});
