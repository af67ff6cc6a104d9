import { GetQueueAttributesCommand, SendMessageCommand, SetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { createQueue, errorOf, post, useSqs } from './helpers.js';

const sqs = useSqs();

async function attributes(url: string): Promise<Record<string, string>> {
  const { Attributes = {} } = await sqs.client.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['All'] }));
  return Attributes;
}

describe('queue attributes', () => {
  // SQS reads boolean attributes in any case and reports them lowercase: localstack's provider does so
  // after AWS (localstack-core/localstack/services/sqs/models.py, get_queue_attributes); CloudFormation
  // and Python callers send "True" (localstack PR #2364).
  it('accepts "True" for boolean attributes and reports them lowercase', async () => {
    const url = await createQueue(sqs.client, 'capital.fifo', { FifoQueue: 'True', ContentBasedDeduplication: 'True' });
    expect(await attributes(url)).toMatchObject({ FifoQueue: 'true', ContentBasedDeduplication: 'true' });
    // Content-based deduplication is on: no MessageDeduplicationId needed.
    const sent = await sqs.client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'b', MessageGroupId: 'g' }));
    expect(sent.SequenceNumber).toMatch(/^\d+$/);
    // The same queue again, in the other case, is the same queue.
    expect(await createQueue(sqs.client, 'capital.fifo', { FifoQueue: 'true', ContentBasedDeduplication: 'TRUE' })).toBe(url);
  });

  // Recorded: "DeduplicationScope": "queue" for a FIFO queue created without it (localstack
  // tests/aws/services/sqs/test_sqs.snapshot.json, test_fifo_set_content_based_deduplication_strategy);
  // the values are messageGroup and queue (API reference, SetQueueAttributes).
  it('defaults DeduplicationScope to queue, accepts queue, and refuses other values', async () => {
    const url = await createQueue(sqs.client, 'scope.fifo', { FifoQueue: 'true' });
    expect(await attributes(url)).toMatchObject({ DeduplicationScope: 'queue', FifoThroughputLimit: 'perQueue' });
    await createQueue(sqs.client, 'scope-queue.fifo', { FifoQueue: 'true', DeduplicationScope: 'queue' });
    const error = await errorOf(createQueue(sqs.client, 'scope-bad.fifo', { FifoQueue: 'true', DeduplicationScope: 'messageQueue' }));
    expect([error.name, error.message]).toEqual(['InvalidAttributeValue', 'Invalid value for the parameter DeduplicationScope.']);
  });

  // A standard queue has no FifoQueue attribute. The text is AWS's answer to FifoQueue on a standard queue
  // (recorded: localstack test_sqs.snapshot.json, test_set_unsupported_attribute_fifo, invalid-attr-name-1);
  // that CreateQueue answers FifoQueue=false with it is what Inqnuam/local-aws-sqs test/create-queue.test.ts
  // expects from AWS ("with invalid FIFO Queue Attribute").
  it('refuses FifoQueue=false when creating a standard queue with InvalidAttributeName', async () => {
    const error = await errorOf(createQueue(sqs.client, 'plain', { FifoQueue: 'false' }));
    expect([error.name, error.message]).toEqual(['InvalidAttributeName', 'Unknown Attribute FifoQueue.']);
  });

  // Recorded: localstack test_sqs.snapshot.json, test_set_unsupported_attribute_fifo (14-11-2023).
  it('treats FifoQueue in SetQueueAttributes as AWS does: unknown on standard, a no-op when true, refused when false', async () => {
    const standard = await createQueue(sqs.client, 'standard');
    const onStandard = await errorOf(sqs.client.send(new SetQueueAttributesCommand({ QueueUrl: standard, Attributes: { FifoQueue: 'true' } })));
    expect([onStandard.name, onStandard.message]).toEqual(['InvalidAttributeName', 'Unknown Attribute FifoQueue.']);

    const fifo = await createQueue(sqs.client, 'typed.fifo', { FifoQueue: 'true' });
    await sqs.client.send(new SetQueueAttributesCommand({ QueueUrl: fifo, Attributes: { FifoQueue: 'true' } }));
    expect((await attributes(fifo)).FifoQueue).toBe('true');
    const toStandard = await errorOf(sqs.client.send(new SetQueueAttributesCommand({ QueueUrl: fifo, Attributes: { FifoQueue: 'false' } })));
    expect([toStandard.name, toStandard.message]).toEqual([
      'InvalidAttributeValue',
      'Invalid value for the parameter FifoQueue. Reason: Modifying queue type is not supported.',
    ]);
  });

  // Recorded: "SqsManagedSseEnabled": "true" on a queue created without it (test_create_and_update_queue_attributes),
  // and InvalidAttributeName for KMS and SQS SSE together (test_sse_kms_and_sqs_are_mutually_exclusive).
  it('reports SqsManagedSseEnabled true by default and refuses KMS and SQS encryption together', async () => {
    const url = await createQueue(sqs.client, 'sse');
    expect((await attributes(url)).SqsManagedSseEnabled).toBe('true');
    const error = await errorOf(
      sqs.client.send(new SetQueueAttributesCommand({ QueueUrl: url, Attributes: { KmsMasterKeyId: 'testKeyId', SqsManagedSseEnabled: 'true' } })),
    );
    expect([error.name, error.message]).toEqual([
      'InvalidAttributeName',
      'You can use one type of server-side encryption (SSE) at one time. You can either enable KMS SSE or SQS SSE.',
    ]);
  });

  // A name is an attribute only if SQS has it, not because a JavaScript object inherits it: AWS answers
  // "Unknown Attribute <name>." (InvalidAttributeName, recorded in localstack's test_sqs.snapshot.json).
  // Raw requests: the SDK's own serializer drops an attribute named __proto__ before sending it.
  it.each(['constructor', 'toString', '__proto__', 'hasOwnProperty'])(
    'refuses the attribute name %s as unknown, in every call that takes names',
    async (name) => {
      const unknown = { __type: 'com.amazonaws.sqs#InvalidAttributeName', message: `Unknown Attribute ${name}.` };
      const attributesNamed = `{${JSON.stringify(name)}:"1"}`;
      const created = await post(sqs.f.sqs.endpoint, 'CreateQueue', `{"QueueName":"inherited-names","Attributes":${attributesNamed}}`);
      expect([created.status, JSON.parse(created.text)]).toEqual([400, unknown]);
      const url = await createQueue(sqs.client, 'inherited');
      const set = await post(sqs.f.sqs.endpoint, 'SetQueueAttributes', `{"QueueUrl":${JSON.stringify(url)},"Attributes":${attributesNamed}}`);
      expect([set.status, JSON.parse(set.text)]).toEqual([400, unknown]);
      const got = await post(sqs.f.sqs.endpoint, 'GetQueueAttributes', { QueueUrl: url, AttributeNames: [name] });
      expect([got.status, JSON.parse(got.text)]).toEqual([400, unknown]);
      expect(Object.keys(await attributes(url))).not.toContain(name);
    },
  );
});
