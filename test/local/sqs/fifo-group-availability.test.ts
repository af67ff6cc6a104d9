import { ChangeMessageVisibilityCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { bodies, createQueue, receive, useSqs } from './helpers.js';

// What makes a FIFO group available is its head, the oldest message still in the queue. Recorded against
// SQS in localstack's tests/aws/services/sqs/test_sqs.py (each test `@markers.aws.validated`). AWS does not
// promise an order between groups (it returned g2-m1 before g1-m1 here), so these tests compare sets.
const sqs = useSqs();

async function send(url: string, body: string, group: string): Promise<void> {
  await sqs.client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: body, MessageGroupId: group, MessageDeduplicationId: body }));
}

async function queueWithTwoGroups(name: string): Promise<string> {
  const url = await createQueue(sqs.client, name, { FifoQueue: 'true', VisibilityTimeout: '30' });
  await send(url, 'g1-m1', 'group-1');
  await send(url, 'g1-m2', 'group-1');
  await send(url, 'g2-m1', 'group-2');
  return url;
}

const sorted = (values: (string | undefined)[]): (string | undefined)[] => [...values].sort();

describe('FIFO group availability', () => {
  // test_fifo_message_group_visibility_after_terminate_visibility_timeout: AWS answered [g2-m1, g1-m1].
  it('makes a group available at once when its head is changed to visibility 0, without its later messages still in flight', async () => {
    const url = await queueWithTwoGroups('terminate.fifo');
    const first = await receive(sqs.client, url, { MaxNumberOfMessages: 2 });
    expect(bodies(first)).toEqual(['g1-m1', 'g1-m2']);
    await sqs.client.send(new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: first[0]?.ReceiptHandle, VisibilityTimeout: 0 }));
    expect(sorted(bodies(await receive(sqs.client, url, { MaxNumberOfMessages: 3 })))).toEqual(['g1-m1', 'g2-m1']);
  });

  // test_fifo_message_group_visibility_after_change_message_visibility: AWS answered [g2-m1, g1-m1].
  it("makes a group available when its head's shortened timeout runs out", async () => {
    const url = await queueWithTwoGroups('shorten.fifo');
    const first = await receive(sqs.client, url, { MaxNumberOfMessages: 2 });
    await sqs.client.send(new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: first[0]?.ReceiptHandle, VisibilityTimeout: 1 }));
    sqs.f.clock.advance(999);
    expect(bodies(await receive(sqs.client, url, { MaxNumberOfMessages: 3 }))).toEqual(['g2-m1']);
    sqs.f.clock.advance(1);
    expect(bodies(await receive(sqs.client, url, { MaxNumberOfMessages: 3 }))).toEqual(['g1-m1']);
  });

  // The same rule seen from the other side: a later message's longer timeout hides only itself and what
  // follows it. localstack's FifoQueue.requeue_inflight_messages models it so ("an invisible message
  // blocks potentially visible messages afterwards ... one message of this batch has its visibility
  // timeout extended"), localstack-core/localstack/services/sqs/models.py.
  it('does not hide the messages before a later message whose timeout was extended', async () => {
    const url = await createQueue(sqs.client, 'extend.fifo', { FifoQueue: 'true', VisibilityTimeout: '30' });
    for (const body of ['a1', 'a2', 'a3']) await send(url, body, 'a');
    const batch = await receive(sqs.client, url);
    expect(bodies(batch)).toEqual(['a1', 'a2', 'a3']);
    await sqs.client.send(new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: batch[1]?.ReceiptHandle, VisibilityTimeout: 600 }));
    sqs.f.clock.advance(30_000);
    expect(bodies(await receive(sqs.client, url))).toEqual(['a1']);
  });
});
