import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { bodies, counts, createQueue, errorOf, receive, useSqs } from './helpers.js';

// A FIFO SendMessageBatch with an entry that lacks its group id, or its deduplication id on a queue
// without content-based deduplication, fails as a whole on AWS: HTTP 400, nothing sent. Recorded in
// localstack's tests/aws/services/sqs/test_sqs.snapshot.json (14-11-2023):
// test_send_batch_missing_message_group_id_for_fifo_queue and test_send_batch_missing_deduplication_id_for_fifo_queue.
const sqs = useSqs();

describe('FIFO SendMessageBatch validation', () => {
  it('fails the whole request when one entry lacks its MessageGroupId, and sends none of the others', async () => {
    const url = await createQueue(sqs.client, 'groups.fifo', { FifoQueue: 'true', ContentBasedDeduplication: 'false' });
    const error = await errorOf(
      sqs.client.send(
        new SendMessageBatchCommand({
          QueueUrl: url,
          Entries: [
            { Id: 'ok', MessageBody: 'messageBody', MessageGroupId: 'test-group', MessageDeduplicationId: 'dedup-1' },
            { Id: 'no-group', MessageBody: 'messageBody', MessageDeduplicationId: 'dedup-2' },
          ],
        }),
      ),
    );
    expect([error.name, error.Code, error.$metadata?.httpStatusCode]).toEqual(['InvalidParameterValue', 'InvalidParameterValue', 400]);
    expect(error.message).toBe('The request must contain the parameter MessageGroupId.');
    expect(await counts(sqs.client, url)).toEqual({ visible: 0, inFlight: 0 });
  });

  it('fails the whole request when one entry lacks its MessageDeduplicationId, unless the queue deduplicates by content', async () => {
    const entries = [
      { Id: 'ok', MessageBody: 'first', MessageGroupId: 'test-group', MessageDeduplicationId: 'dedup-1' },
      { Id: 'no-dedup', MessageBody: 'second', MessageGroupId: 'test-group' },
    ];
    const strict = await createQueue(sqs.client, 'strict.fifo', { FifoQueue: 'true', ContentBasedDeduplication: 'false' });
    const error = await errorOf(sqs.client.send(new SendMessageBatchCommand({ QueueUrl: strict, Entries: entries })));
    expect([error.name, error.$metadata?.httpStatusCode]).toEqual(['InvalidParameterValue', 400]);
    expect(error.message).toBe('The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly');
    expect(await counts(sqs.client, strict)).toEqual({ visible: 0, inFlight: 0 });

    const content = await createQueue(sqs.client, 'content.fifo', { FifoQueue: 'true', ContentBasedDeduplication: 'true' });
    const sent = await sqs.client.send(new SendMessageBatchCommand({ QueueUrl: content, Entries: entries }));
    expect(sent.Successful?.map((s) => s.Id)).toEqual(['ok', 'no-dedup']);
    expect(bodies(await receive(sqs.client, content))).toEqual(['first', 'second']);
  });
});
