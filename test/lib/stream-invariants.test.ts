import { Duration } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as kinesis from 'aws-cdk-lib/aws-kinesis';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { describe, expect, it } from 'vitest';
import { InboxCleanup, InboxConsumer, InboxDatabase, InboxSources } from '../../lib/index.js';
import { MSK_CLUSTER_ARN, STREAM_KINDS, streamConsumer } from './stream-support.js';
import { FIXTURE_HANDLER, synthError, testStack } from './support.js';

describe('synth-time invariants of stream consumers', () => {
  it.each(STREAM_KINDS)('%s: accepts the defaults, with the default cleanup', (kind) => {
    const { stack, database } = streamConsumer(kind);
    new InboxCleanup(stack, 'Cleanup', { database });
    expect(() => Template.fromStack(stack)).not.toThrow();
  });

  it("refuses an inbox retention that does not exceed a Kinesis stream's retention, DynamoDB Streams' 24 hours, or a topic's", () => {
    // Arrange: a stream keeping records 7 days, DynamoDB's fixed 24 hours, a topic keeping them 7 days.
    const kinesisStack = testStack();
    const kinesisDatabase = new InboxDatabase(kinesisStack, 'Db');
    const retained = new kinesis.Stream(kinesisStack, 'Week', { retentionPeriod: Duration.days(7) });
    new InboxConsumer(kinesisStack, 'Clicks', {
      database: kinesisDatabase,
      source: InboxSources.kinesis(retained),
      consumerName: 'clicks',
      entry: FIXTURE_HANDLER,
    });
    new InboxCleanup(kinesisStack, 'Cleanup', { database: kinesisDatabase, retention: Duration.days(5) });
    const dynamoCase = streamConsumer('dynamodb');
    new InboxCleanup(dynamoCase.stack, 'Cleanup', { database: dynamoCase.database, retention: Duration.hours(12) });
    const kafkaCase = streamConsumer('msk');
    new InboxCleanup(kafkaCase.stack, 'Cleanup', { database: kafkaCase.database, retention: Duration.days(7) });

    // Act + Assess
    expect(synthError(kinesisStack)).toContain(
      "[Test/Cleanup] InboxCleanup `retention` (5 days) does not exceed the redelivery window of consumer 'clicks' (7 days: the Kinesis " +
        "stream's retention period: a replay from the trim horizon delivers every record the stream still holds). A message redelivered " +
        'after its inbox row was purged would be applied a second time. Fix: set InboxCleanup `retention` to more than 7 days, or shorten ' +
        "the stream's `retentionPeriod`",
    );
    expect(synthError(dynamoCase.stack)).toContain(
      "InboxCleanup `retention` (12 hours) does not exceed the redelivery window of consumer 'stream-worker' (1 day: DynamoDB Streams " +
        'keeps stream records 24 hours',
    );
    expect(synthError(kafkaCase.stack)).toContain(
      "InboxCleanup `retention` (7 days) does not exceed the redelivery window of consumer 'stream-worker' (7 days: the topic's retention " +
        '(`topicRetention`): a consumer group that starts over from the earliest offset re-reads every record the topic holds). ' +
        'A message redelivered after its inbox row was purged would be applied a second time. Fix: set InboxCleanup `retention` to more ' +
        "than 7 days, or lower the topic's retention.ms, and the source's `topicRetention` with it.",
    );
  });

  it.each(STREAM_KINDS)('%s: refuses a mapping that stopped reading the partial batch responses the handler returns', (kind) => {
    const { stack, consumer } = streamConsumer(kind);
    consumer.eventSourceMapping.functionResponseTypes = undefined;
    expect(synthError(stack)).toContain(
      "[Test/Worker] the consumer's event source mapping does not have ReportBatchItemFailures in `FunctionResponseTypes`, but its handler " +
        'reports failed records in its response: Lambda would take such a response for a full success, and the failed records would be lost. Fix:',
    );
  });

  it('refuses an SQS mapping without partial batch responses too', () => {
    const stack = testStack();
    const queue = new sqs.Queue(stack, 'Q', { visibilityTimeout: Duration.minutes(3) });
    const consumer = new InboxConsumer(stack, 'Queue', {
      database: new InboxDatabase(stack, 'Db'),
      source: InboxSources.sqs(queue),
      consumerName: 'q',
      entry: FIXTURE_HANDLER,
    });
    consumer.eventSourceMapping.functionResponseTypes = [];
    expect(synthError(stack)).toContain("[Test/Queue] the consumer's event source mapping does not have ReportBatchItemFailures");
  });

  it('refuses a Kafka mapping whose partial batch responses disagree with what the handler was told', () => {
    const { stack, consumer } = streamConsumer('msk', {}, { reportBatchItemFailures: false });
    expect(consumer.reportBatchItemFailures).toBe(false);
    consumer.eventSourceMapping.functionResponseTypes = ['ReportBatchItemFailures'];
    expect(synthError(stack)).toContain(
      "[Test/Worker] the consumer's Kafka event source mapping has ReportBatchItemFailures, but its handler was told " +
        '(INBOX_REPORT_BATCH_ITEM_FAILURES=false) to fail the whole invocation instead: the environment and the mapping disagree. ' +
        "Fix: set the Kafka source's `reportBatchItemFailures` instead of changing the mapping, so both follow it.",
    );
  });

  it.each(STREAM_KINDS)('%s: refuses unbounded retries without an on-failure destination', (kind) => {
    const { stack, consumer } = streamConsumer(kind, { retryAttempts: -1, maxRecordAge: Duration.hours(1) });
    consumer.eventSourceMapping.destinationConfig = undefined;
    const lane = kind === 'kinesis' || kind === 'dynamodb' ? 'shard until the stream' : 'partition until the topic';
    expect(synthError(stack)).toContain(
      "[Test/Worker] the consumer's event source mapping retries without bound (`retryAttempts` -1) and has no on-failure destination: " +
        `a record that keeps failing blocks its ${lane} drops it, and then it is gone without a trace. ` +
        "Fix: bound the source's `retryAttempts` (the default is 10) and keep an on-failure destination (`onFailure`).",
    );
  });

  it('refuses bounded retries without an on-failure destination too: discarded records would leave no trace', () => {
    const { stack, consumer } = streamConsumer('dynamodb');
    consumer.eventSourceMapping.destinationConfig = undefined;
    expect(synthError(stack)).toContain(
      "[Test/Worker] the consumer's event source mapping has no on-failure destination: a record discarded after its retries or past " +
        '`maxRecordAge` is gone without a trace, so nobody can replay it. Fix:',
    );
  });

  it('refuses unbounded Kinesis and DynamoDB retries unless a maxRecordAge shorter than the retention bounds them', () => {
    for (const kind of ['kinesis', 'dynamodb'] as const) {
      expect(synthError(streamConsumer(kind, { retryAttempts: -1 }).stack)).toContain(
        "[Test/Worker] the consumer retries without bound (`retryAttempts` -1) and no `maxRecordAge` shorter than the stream's retention stops it",
      );
      expect(synthError(streamConsumer(kind, { retryAttempts: -1, maxRecordAge: Duration.days(1) }).stack)).toContain('no `maxRecordAge` shorter than');
      expect(() => Template.fromStack(streamConsumer(kind, { retryAttempts: -1, maxRecordAge: Duration.hours(6) }).stack)).not.toThrow();
    }
    // Kafka with an on-failure destination: Lambda itself caps unbounded retries at 10.
    expect(() => Template.fromStack(streamConsumer('msk', { retryAttempts: -1 }).stack)).not.toThrow();
  });

  it('refuses Kafka partial batch responses and error handling controls without provisioned mode', () => {
    const explicit = streamConsumer('self-managed-kafka', { retryAttempts: 5 }, { provisionedPollers: false, reportBatchItemFailures: true });
    expect(synthError(explicit.stack)).toContain(
      "[Test/Worker] the consumer's Kafka event source mapping sets ReportBatchItemFailures, `retryAttempts` in on-demand mode, " +
        'but Lambda supports partial batch responses and the other error handling controls for Kafka only in provisioned mode: a partial batch ' +
        "response would be ignored and its failed records lost. Fix: keep provisioned mode (the Kafka source's `provisionedPollers`, the default), " +
        'or for on-demand mode set its `reportBatchItemFailures: false` and leave `retryAttempts`, `bisectBatchOnError` and `maxRecordAge` unset.',
    );
    // Through an escape hatch too: provisioned mode removed from a mapping that reads partial batch responses.
    const hatch = streamConsumer('msk');
    hatch.consumer.eventSourceMapping.provisionedPollerConfig = undefined;
    expect(synthError(hatch.stack)).toContain(
      "the consumer's Kafka event source mapping sets ReportBatchItemFailures, `retryAttempts`, `bisectBatchOnError` in on-demand mode",
    );
    expect(() => Template.fromStack(streamConsumer('msk', {}, { provisionedPollers: false }).stack)).not.toThrow();
  });

  it('refuses a Kafka consumer whose timeout exceeds the 14 minutes Kafka mappings allow', () => {
    expect(synthError(streamConsumer('msk', {}, {}, { timeout: Duration.minutes(15) }).stack)).toContain(
      "[Test/Worker] the consumer's `timeout` is 15 minutes, but Lambda's Kafka event source mappings support functions with a timeout of at most " +
        '14 minutes. Fix: set `timeout` to 14 minutes or less.',
    );
    expect(() => Template.fromStack(streamConsumer('kinesis', { batchSize: 100 }, {}, { timeout: Duration.minutes(15) }).stack)).not.toThrow();
  });

  it.each(STREAM_KINDS)('%s: refuses a batch whose records cannot all start before the function times out', (kind) => {
    // 1000 records x 40 ms = 40 s, but a 30 s timeout leaves the runtime 15 s to start records.
    expect(synthError(streamConsumer(kind, { batchSize: 1000 }).stack)).toContain(
      `[Test/Worker] a full batch of 1000 records from one ${kind === 'kinesis' || kind === 'dynamodb' ? 'shard' : 'partition'} needs at least 40 seconds ` +
        '(40 ms each, one after another), but a 30 seconds `timeout` leaves the runtime 15 seconds to start records: the rest of every batch ' +
        'would fail unstarted, use up `retryAttempts` and be discarded without ever running. Fix: lower `batchSize` to 375 or less, or raise ' +
        "`timeout` to at least 1 minute, or set the source's `minRecordDuration` if your handler claims records faster (e.g. a batch mode).",
    );
    expect(() => Template.fromStack(streamConsumer(kind, { batchSize: 1000 }, {}, { timeout: Duration.minutes(1) }).stack)).not.toThrow();
    expect(() => Template.fromStack(streamConsumer(kind, { batchSize: 1000, minRecordDuration: Duration.millis(10) }).stack)).not.toThrow();
  });

  it('refuses two Kafka consumers in one consumer group, once', () => {
    const { stack, database } = streamConsumer('msk');
    new InboxConsumer(stack, 'Second', {
      database,
      consumerName: 'other',
      entry: FIXTURE_HANDLER,
      source: InboxSources.msk(MSK_CLUSTER_ARN, { topic: 'payments', topicRetention: Duration.days(7), consumerGroupId: 'stream-worker' }),
    });
    const message = synthError(stack);
    expect(message).toContain(
      "[Test/Second] the Kafka consumer group 'stream-worker' is already used by the event source mapping " +
        'Test/Worker/Handler/Function/KafkaEventSource:orders: Lambda requires a consumer group id to be unique ' +
        'among all Kafka event sources, and two mappings in one group would each get only part of the topic. Fix:',
    );
    expect(message.match(/is already used by/g)).toHaveLength(1);
  });
});
