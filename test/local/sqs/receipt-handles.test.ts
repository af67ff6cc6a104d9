import {
  ChangeMessageVisibilityBatchCommand,
  ChangeMessageVisibilityCommand,
  DeleteMessageBatchCommand,
  DeleteMessageCommand,
  SendMessageCommand,
} from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { SqsEventSource } from '../../../local/event-source.js';
import { ManualClock } from '../../../local/sqs/clock.js';
import { SqsModel } from '../../../local/sqs/model.js';
import { eventually, settle } from '../../support/sqs.js';
import { bodies, counts, createQueue, errorOf, receive, useSqs } from './helpers.js';

const sqs = useSqs();

async function fifoWithOne(visibility: string): Promise<string> {
  const url = await createQueue(sqs.client, 'handles.fifo', { FifoQueue: 'true', VisibilityTimeout: visibility });
  await sqs.client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'g1-m1', MessageGroupId: '1', MessageDeduplicationId: 'd1' }));
  return url;
}

describe('FIFO receipt handles', () => {
  // Recorded against SQS: localstack tests/aws/services/sqs/test_sqs.snapshot.json,
  // test_fifo_delete_message_with_expired_receipt_handle (InvalidParameterValue, HTTP 400).
  it("refuses DeleteMessage once the visibility timeout ran out, with AWS's text, and keeps the message", async () => {
    const url = await fifoWithOne('1');
    const [m] = await receive(sqs.client, url);
    sqs.f.clock.advance(1000);
    const error = await errorOf(sqs.client.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: m?.ReceiptHandle })));
    expect(error.name).toBe('InvalidParameterValue');
    expect(error.Code).toBe('InvalidParameterValue');
    expect(error.$metadata?.httpStatusCode).toBe(400);
    expect(error.message).toBe(`Value ${m?.ReceiptHandle} for parameter ReceiptHandle is invalid. Reason: The receipt handle has expired.`);
    expect(bodies(await receive(sqs.client, url))).toEqual(['g1-m1']);
  });

  // What counts is the handle's receive being in flight now: a delete after the timeout was extended
  // past its first end succeeds (localstack PR #13223, test_fifo_delete_after_visibility_timeout_extended,
  // validated against AWS), while a receive of the same age that was not extended is refused.
  it('deletes after ChangeMessageVisibility extended the timeout, and refuses the same age unextended', async () => {
    const url = await createQueue(sqs.client, 'extended.fifo', { FifoQueue: 'true', VisibilityTimeout: '10' });
    for (const group of ['a', 'b']) {
      await sqs.client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: group, MessageGroupId: group, MessageDeduplicationId: group }));
    }
    const [a, b] = await receive(sqs.client, url);
    sqs.f.clock.advance(5000);
    await sqs.client.send(new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: a?.ReceiptHandle, VisibilityTimeout: 60 }));
    sqs.f.clock.advance(15_000);
    await sqs.client.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: a?.ReceiptHandle }));
    const error = await errorOf(sqs.client.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: b?.ReceiptHandle })));
    expect(error.message).toMatch(/Reason: The receipt handle has expired\.$/);
    expect(bodies(await receive(sqs.client, url))).toEqual(['b']);
  });

  // "FIFO queues will reject DeleteMessage requests when the receipt handle is expired, which means that
  // handles with a VisibilityTimeout of 0 cannot be deleted" (the AWS SDK team, aws/aws-sdk-js#1750).
  it('refuses DeleteMessage after the visibility was changed to 0', async () => {
    const url = await fifoWithOne('30');
    const [m] = await receive(sqs.client, url);
    await sqs.client.send(new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: m?.ReceiptHandle, VisibilityTimeout: 0 }));
    const error = await errorOf(sqs.client.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: m?.ReceiptHandle })));
    expect(error.message).toMatch(/Reason: The receipt handle has expired\.$/);
    expect(await counts(sqs.client, url)).toEqual({ visible: 1, inFlight: 0 });
  });

  // AWS's per-entry answer to a FIFO DeleteMessageBatch with expired handles, as reported in
  // smaskalik/sqsmover#54: { Code: "ReceiptHandleIsInvalid", Message: "The receipt handle has expired", SenderFault: true }.
  it('fails the expired entries of DeleteMessageBatch with ReceiptHandleIsInvalid and deletes the live ones', async () => {
    const url = await createQueue(sqs.client, 'batch.fifo', { FifoQueue: 'true', VisibilityTimeout: '30' });
    for (const group of ['a', 'b']) {
      await sqs.client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: group, MessageGroupId: group, MessageDeduplicationId: group }));
    }
    const [a] = await receive(sqs.client, url, { MaxNumberOfMessages: 1, VisibilityTimeout: 1 });
    const [b] = await receive(sqs.client, url, { MaxNumberOfMessages: 1, VisibilityTimeout: 30 });
    sqs.f.clock.advance(1000);
    const out = await sqs.client.send(
      new DeleteMessageBatchCommand({
        QueueUrl: url,
        Entries: [
          { Id: 'a', ReceiptHandle: a?.ReceiptHandle },
          { Id: 'b', ReceiptHandle: b?.ReceiptHandle },
        ],
      }),
    );
    expect(out.Successful?.map((s) => s.Id)).toEqual(['b']);
    expect(out.Failed).toEqual([{ Id: 'a', Code: 'ReceiptHandleIsInvalid', Message: 'The receipt handle has expired', SenderFault: true }]);
    expect(bodies(await receive(sqs.client, url))).toEqual(['a']);
  });

  // No recorded answer found for this one: refused like DeleteMessage, since the handle's receive is over.
  it('refuses ChangeMessageVisibility once the visibility timeout ran out', async () => {
    const url = await fifoWithOne('1');
    const [m] = await receive(sqs.client, url);
    sqs.f.clock.advance(1000);
    const error = await errorOf(sqs.client.send(new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: m?.ReceiptHandle, VisibilityTimeout: 30 })));
    expect(error.name).toBe('InvalidParameterValue');
    expect(error.message).toBe(`Value ${m?.ReceiptHandle} for parameter ReceiptHandle is invalid. Reason: The receipt handle has expired.`);
  });
});

describe('standard receipt handles', () => {
  // localstack PR #9632 ("AWS simply sends back an OK and does nothing"), recorded as
  // test_change_message_visibility_after_visibility_timeout_expiration in test_sqs.snapshot.json (HTTP 200).
  it('accepts ChangeMessageVisibility after the visibility timeout ran out, and changes nothing', async () => {
    const url = await createQueue(sqs.client, 'late-change', { VisibilityTimeout: '1' });
    await sqs.client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'm' }));
    const [m] = await receive(sqs.client, url);
    sqs.f.clock.advance(2000);
    const out = await sqs.client.send(new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: m?.ReceiptHandle, VisibilityTimeout: 30 }));
    expect(out.$metadata.httpStatusCode).toBe(200);
    expect(bodies(await receive(sqs.client, url))).toEqual(['m']);
  });

  // localstack test_terminate_visibility_timeout_after_receive (validated against AWS): the handle of
  // an earlier receive still changes the visibility of the message now in flight.
  it('changes the visibility of an in-flight message with the handle of an earlier receive', async () => {
    const url = await createQueue(sqs.client, 'old-handle');
    await sqs.client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'm' }));
    const [first] = await receive(sqs.client, url, { VisibilityTimeout: 0 });
    const [second] = await receive(sqs.client, url, { VisibilityTimeout: 30 });
    expect(second?.ReceiptHandle).not.toBe(first?.ReceiptHandle);
    await sqs.client.send(new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: first?.ReceiptHandle, VisibilityTimeout: 0 }));
    expect(bodies(await receive(sqs.client, url))).toEqual(['m']);
  });

  // localstack test_change_visibility_on_deleted_message_raises_invalid_parameter_value (validated against AWS).
  it("refuses to change the visibility of a deleted message, with AWS's text, in a batch too", async () => {
    const url = await createQueue(sqs.client, 'deleted');
    await sqs.client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'm' }));
    const [m] = await receive(sqs.client, url);
    await sqs.client.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: m?.ReceiptHandle }));
    const text = `Value ${m?.ReceiptHandle} for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change.`;
    const error = await errorOf(sqs.client.send(new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: m?.ReceiptHandle, VisibilityTimeout: 42 })));
    expect([error.name, error.message]).toEqual(['InvalidParameterValue', text]);
    const batch = await sqs.client.send(
      new ChangeMessageVisibilityBatchCommand({ QueueUrl: url, Entries: [{ Id: 'x', ReceiptHandle: m?.ReceiptHandle, VisibilityTimeout: 42 }] }),
    );
    expect(batch.Failed).toEqual([{ Id: 'x', Code: 'InvalidParameterValue', Message: text, SenderFault: true }]);
  });
});

describe('the event source and a refused FIFO delete', () => {
  it('counts the refused delete as stale, keeps polling, and delivers the message again', async () => {
    const clock = new ManualClock();
    const model = new SqsModel({ clock });
    model.createQueue('slow.fifo', { FifoQueue: 'true', VisibilityTimeout: '30' });
    await model.sendMessage({ queue: 'slow.fifo', body: 'm1', messageGroupId: 'g', messageDeduplicationId: 'd1' });
    let release: (() => void) | undefined;
    let calls = 0;
    const source = new SqsEventSource({
      model,
      queue: 'slow.fifo',
      functionTimeoutMs: 30_000,
      maxConcurrency: 2,
      handler: async () => {
        calls += 1;
        const call = calls;
        if (call === 1) await new Promise<void>((resolve) => (release = resolve));
        if (call === 2) throw new Error('the second delivery fails, so its receive stays in flight');
      },
    });
    source.start();
    try {
      await eventually(() => release !== undefined);
      // The first receive ends while its handler still runs; the message is received again.
      model.changeMessageVisibility('slow.fifo', model.peekMessages('slow.fifo')[0]?.receiptHandle ?? '', 0);
      await eventually(() => calls === 2 && source.stats.handlerErrors === 1);
      // The first handler now returns: SQS refuses its delete, the handle expired.
      release?.();
      await eventually(() => source.stats.staleDeletes === 1);
      expect(source.running).toBe(true);
      expect(model.peekMessages('slow.fifo').map((m) => m.body)).toEqual(['m1']);
      await settle();
      clock.advance(30_000);
      await eventually(() => calls === 3 && source.stats.recordsDeleted === 1);
      expect(model.peekMessages('slow.fifo')).toEqual([]);
    } finally {
      await source.stop();
    }
  });
});
