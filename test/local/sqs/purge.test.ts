import { PurgeQueueCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { bodies, createQueue, errorOf, receive, useSqs } from './helpers.js';

const sqs = useSqs();

describe('PurgeQueue', () => {
  // localstack tests/aws/services/sqs/test_sqs.py, test_purge_queue_clears_fifo_deduplication_cache
  // (validated against AWS): a message sent again after a purge, with the same deduplication id, arrives.
  it('forgets the FIFO deduplication ids, so the same id sent again after a purge is delivered', async () => {
    const url = await createQueue(sqs.client, 'purged.fifo', { FifoQueue: 'true' });
    const send = (body: string) =>
      sqs.client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: body, MessageGroupId: 'fifo_group', MessageDeduplicationId: 'fifo_dedup' }));
    const first = await send('message-1');
    await sqs.client.send(new PurgeQueueCommand({ QueueUrl: url }));
    const second = await send('message-2');
    expect(second.MessageId).not.toBe(first.MessageId);
    expect(bodies(await receive(sqs.client, url))).toEqual(['message-2']);
  });

  // Recorded: localstack tests/aws/services/sqs/test_sqs.snapshot.json, test_successive_purge_calls_fail
  // (HTTP 403, AWS.SimpleQueueService.PurgeQueueInProgress).
  it("refuses a second purge within 60 seconds with AWS's text", async () => {
    const url = await createQueue(sqs.client, 'twice');
    await sqs.client.send(new PurgeQueueCommand({ QueueUrl: url }));
    const error = await errorOf(sqs.client.send(new PurgeQueueCommand({ QueueUrl: url })));
    expect([error.name, error.Code, error.$metadata?.httpStatusCode]).toEqual(['PurgeQueueInProgress', 'AWS.SimpleQueueService.PurgeQueueInProgress', 403]);
    expect(error.message).toBe('Only one PurgeQueue operation on twice is allowed every 60 seconds.');
  });
});
