import { Annotations as CdkAnnotations } from 'aws-cdk-lib';
import { Duration } from 'aws-cdk-lib';
import type { Stack } from 'aws-cdk-lib';
import { Annotations, Match } from 'aws-cdk-lib/assertions';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { describe, expect, it } from 'vitest';
import { InboxConsumer, InboxDatabase, InboxQueue, InboxSources } from '../../lib/index.js';
import { CONSOLE_REDRIVE_WARNING } from '../../lib/sources/redrive-warning.js';
import { FIXTURE_HANDLER, testStack } from './support.js';

/** A consumer of `queue`, its warnings as synth reports them. */
function consumerOf(queueIn: (stack: Stack) => sqs.IQueue, options: { acknowledged?: boolean; deadLetterQueue?: (stack: Stack) => sqs.IQueue } = {}) {
  const stack = testStack();
  const queue = queueIn(stack);
  const database = new InboxDatabase(stack, 'Db');
  const consumer = new InboxConsumer(stack, 'Worker', {
    database,
    source: InboxSources.sqs(queue, { deadLetterQueue: options.deadLetterQueue?.(stack) }),
    consumerName: 'order-worker',
    entry: FIXTURE_HANDLER,
  });
  if (options.acknowledged) CdkAnnotations.of(consumer).acknowledgeWarning(CONSOLE_REDRIVE_WARNING, 'keyed on the producer key');
  return Annotations.fromStack(stack).findWarning('*', Match.stringLikeRegexp('can be redriven by SQS'));
}

describe("the consumer's warning against SQS's own dead-letter redrive", () => {
  it('warns a consumer whose queue has a dead-letter queue, naming the command to run instead', () => {
    const warnings = consumerOf((stack) => new InboxQueue(stack, 'Orders').queue);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.id).toBe('/Test/Worker');
    expect(String(warnings[0]!.entry.data)).toMatch(
      /new messageId.*npx sqs-inbox dlq redrive --dlq <its URL>.*acknowledgeWarning\('sqs-inbox:dlq-console-redrive'\)/,
    );
  });

  it('warns for a dead-letter queue given with the source, as for one configured on the queue', () => {
    const warnings = consumerOf((stack) => sqs.Queue.fromQueueArn(stack, 'Imported', 'arn:aws:sqs:us-east-1:123456789012:orders'), {
      deadLetterQueue: (stack) => sqs.Queue.fromQueueArn(stack, 'ImportedDlq', 'arn:aws:sqs:us-east-1:123456789012:orders-dlq'),
    });
    expect(warnings).toHaveLength(1);
  });

  it('says nothing once acknowledged, or for a queue without a dead-letter queue', () => {
    expect(consumerOf((stack) => new InboxQueue(stack, 'Orders').queue, { acknowledged: true })).toEqual([]);
    expect(consumerOf((stack) => new sqs.Queue(stack, 'Plain', { visibilityTimeout: Duration.seconds(180) }))).toEqual([]);
  });
});
