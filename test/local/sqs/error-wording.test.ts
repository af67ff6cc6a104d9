import {
  CreateQueueCommand,
  DeleteMessageCommand,
  GetQueueUrlCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
} from '@aws-sdk/client-sqs';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { createQueue, errorOf, useSqs } from './helpers.js';

// Users' tests match on error messages, so every message is AWS's own text, word for word; the local
// runtime's explanations go to the log (StartSqsOptions.onLog), never into the response.
const sqs = useSqs();

const SNAPSHOT = 'localstack tests/aws/services/sqs/test_sqs.snapshot.json';
const LOCAL_AWS_SQS = 'Inqnuam/local-aws-sqs test/create-queue.test.ts and test/send-message.test.ts (texts expected from AWS)';

interface Case {
  behaviour: string;
  source: string;
  act: (client: SQSClient) => Promise<unknown>;
  name: string;
  message: string;
}

const big = 'x'.repeat(600_000);

const cases: Case[] = [
  {
    behaviour: 'QueueDoesNotExist',
    source: `${SNAPSHOT}, test_non_existent_queue; https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-json-api-responses.html`,
    act: (client) => client.send(new GetQueueUrlCommand({ QueueName: 'missing' })),
    name: 'QueueDoesNotExist',
    message: 'The specified queue does not exist.',
  },
  {
    behaviour: 'QueueAlreadyExists, without a closing period',
    source: `${SNAPSHOT}, test_create_queue_with_different_attributes_raises_exception`,
    act: async (client) => {
      await createQueue(client, 'exists', { DelaySeconds: '1' });
      return client.send(new CreateQueueCommand({ QueueName: 'exists', Attributes: { DelaySeconds: '2' } }));
    },
    name: 'QueueNameExists',
    message: 'A queue already exists with the same name and a different value for attribute DelaySeconds',
  },
  {
    behaviour: 'a message over the size limit',
    source: `${SNAPSHOT}, test_send_oversized_message`,
    act: async (client) =>
      client.send(new SendMessageCommand({ QueueUrl: await createQueue(client, 'small', { MaximumMessageSize: '1024' }), MessageBody: 'x'.repeat(1025) })),
    name: 'InvalidParameterValue',
    message: 'One or more parameters are invalid. Reason: Message must be shorter than 1024 bytes.',
  },
  {
    behaviour: 'a batch over the size limit',
    source: `${SNAPSHOT}, test_send_message_batch_with_oversized_contents`,
    act: async (client) =>
      client.send(
        new SendMessageBatchCommand({
          QueueUrl: await createQueue(client, 'batch'),
          Entries: [
            { Id: 'a', MessageBody: big },
            { Id: 'b', MessageBody: big },
          ],
        }),
      ),
    name: 'BatchRequestTooLong',
    message: 'Batch requests cannot be longer than 1048576 bytes. You have sent 1200000 bytes.',
  },
  {
    behaviour: 'an invalid batch entry id',
    source: `${SNAPSHOT}, test_invalid_batch_id`,
    act: async (client) =>
      client.send(new SendMessageBatchCommand({ QueueUrl: await createQueue(client, 'ids'), Entries: [{ Id: 'message:1', MessageBody: 'x' }] })),
    name: 'InvalidBatchEntryId',
    message: 'A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long.',
  },
  {
    behaviour: 'repeated batch entry ids',
    source: 'moto/sqs/exceptions.py (getmoto/moto), BatchEntryIdsNotDistinct',
    act: async (client) =>
      client.send(
        new SendMessageBatchCommand({
          QueueUrl: await createQueue(client, 'twice'),
          Entries: [
            { Id: 'same', MessageBody: 'x' },
            { Id: 'same', MessageBody: 'y' },
          ],
        }),
      ),
    name: 'BatchEntryIdsNotDistinct',
    message: 'Id same repeated.',
  },
  {
    behaviour: 'an empty SendMessageBatch',
    source: 'moto/sqs/exceptions.py (getmoto/moto), EmptyBatchRequest',
    act: async (client) => client.send(new SendMessageBatchCommand({ QueueUrl: await createQueue(client, 'empty'), Entries: [] })),
    name: 'EmptyBatchRequest',
    message: 'There should be at least one SendMessageBatchRequestEntry in the request.',
  },
  {
    behaviour: 'a per-message DelaySeconds on a FIFO queue',
    source: `${SNAPSHOT}, test_fifo_queue_send_message_with_delay_seconds_fails`,
    act: async (client) =>
      client.send(
        new SendMessageCommand({
          QueueUrl: await createQueue(client, 'delay.fifo', { FifoQueue: 'true', ContentBasedDeduplication: 'true' }),
          MessageBody: 'message-1',
          MessageGroupId: '1',
          DelaySeconds: 2,
        }),
      ),
    name: 'InvalidParameterValue',
    message: 'Value 2 for parameter DelaySeconds is invalid. Reason: The request include parameter that is not valid for this queue type.',
  },
  {
    behaviour: 'DelaySeconds out of range',
    source: LOCAL_AWS_SQS,
    act: async (client) => client.send(new SendMessageCommand({ QueueUrl: await createQueue(client, 'late'), MessageBody: 'm', DelaySeconds: 1000 })),
    name: 'InvalidParameterValue',
    message: 'Value 1000 for parameter DelaySeconds is invalid. Reason: DelaySeconds must be >= 0 and <= 900.',
  },
  {
    behaviour: 'MaxNumberOfMessages out of range',
    source: `${SNAPSHOT}, test_send_receive_max_number_of_messages`,
    act: async (client) => client.send(new ReceiveMessageCommand({ QueueUrl: await createQueue(client, 'many'), MaxNumberOfMessages: 11 })),
    name: 'InvalidParameterValue',
    message: 'Value 11 for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.',
  },
  {
    behaviour: 'an empty string message attribute',
    source: `${SNAPSHOT}, test_send_message_with_empty_string_attribute`,
    act: async (client) =>
      client.send(
        new SendMessageCommand({
          QueueUrl: await createQueue(client, 'attrs'),
          MessageBody: 'test',
          MessageAttributes: { ErrorDetails: { StringValue: '', DataType: 'String' } },
        }),
      ),
    name: 'InvalidParameterValue',
    message: "Message (user) attribute 'ErrorDetails' must contain a non-empty value of type 'String'.",
  },
  {
    behaviour: 'a message attribute name with a reserved prefix',
    source: LOCAL_AWS_SQS,
    act: async (client) =>
      client.send(
        new SendMessageCommand({
          QueueUrl: await createQueue(client, 'reserved'),
          MessageBody: 'm',
          MessageAttributes: { 'AWS.Hello': { DataType: 'String', StringValue: 'World' } },
        }),
      ),
    name: 'InvalidParameterValue',
    message: "You can't use message attribute names beginning with 'AWS.' or 'Amazon'. These strings are reserved for internal use.",
  },
  {
    behaviour: 'an invalid integer attribute',
    source: `${LOCAL_AWS_SQS}; moto/sqs/exceptions.py, InvalidAttributeValue`,
    act: (client) => client.send(new CreateQueueCommand({ QueueName: 'vis', Attributes: { VisibilityTimeout: '43201' } })),
    name: 'InvalidAttributeValue',
    message: 'Invalid value for the parameter VisibilityTimeout.',
  },
  {
    behaviour: 'a FIFO-only attribute on a standard queue',
    source: `${SNAPSHOT}, test_set_unsupported_attribute_fifo (the Unknown Attribute sentence)`,
    act: (client) => client.send(new CreateQueueCommand({ QueueName: 'cbd', Attributes: { ContentBasedDeduplication: 'true' } })),
    name: 'InvalidAttributeName',
    message: 'Unknown Attribute ContentBasedDeduplication.',
  },
  {
    behaviour: 'an invalid queue name',
    source: `${LOCAL_AWS_SQS}; moto/sqs/models.py`,
    act: (client) => client.send(new CreateQueueCommand({ QueueName: 'in.fo' })),
    name: 'InvalidParameterValue',
    message: 'Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length',
  },
  {
    behaviour: 'a .fifo name for a standard queue',
    source: LOCAL_AWS_SQS,
    act: (client) => client.send(new CreateQueueCommand({ QueueName: 'example.fifo' })),
    name: 'InvalidParameterValue',
    message: 'Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length',
  },
  {
    behaviour: 'a FIFO queue name without .fifo',
    source: `${LOCAL_AWS_SQS}; moto/sqs/models.py; localstack test_fifo_queue_requires_suffix (the code)`,
    act: (client) => client.send(new CreateQueueCommand({ QueueName: 'no-suffix', Attributes: { FifoQueue: 'true' } })),
    name: 'InvalidParameterValue',
    message: 'The name of a FIFO queue can only include alphanumeric characters, hyphens, or underscores, must end with .fifo suffix and be 1 to 80 in length',
  },
  {
    behaviour: 'a redrive policy naming a missing dead-letter queue',
    source: LOCAL_AWS_SQS,
    act: (client) =>
      client.send(
        new CreateQueueCommand({
          QueueName: 'src',
          Attributes: { RedrivePolicy: '{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:nope","maxReceiveCount":5}' },
        }),
      ),
    name: 'InvalidParameterValue',
    message:
      'Value {"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:nope","maxReceiveCount":5} for parameter RedrivePolicy is invalid. Reason: Dead letter target does not exist.',
  },
  {
    behaviour: 'a redrive policy whose target is not an ARN',
    source: `${SNAPSHOT}, test_invalid_dead_letter_arn_rejected_before_lookup`,
    act: (client) =>
      client.send(new CreateQueueCommand({ QueueName: 'dummy', Attributes: { RedrivePolicy: '{"deadLetterTargetArn": "dummy", "maxReceiveCount": 42}' } })),
    name: 'InvalidParameterValue',
    message:
      'Value {"deadLetterTargetArn": "dummy", "maxReceiveCount": 42} for parameter RedrivePolicy is invalid. Reason: Invalid value for deadLetterTargetArn.',
  },
  {
    behaviour: 'a malformed receipt handle, quoted whole',
    source: 'localstack tests/aws/services/sqs/test_sqs.py, test_delete_message_with_illegal_receipt_handle; SQS developer guide, troubleshooting-api-errors',
    act: async (client) =>
      client.send(new DeleteMessageCommand({ QueueUrl: await createQueue(client, 'garbage'), ReceiptHandle: `garbage-${'g'.repeat(200)}` })),
    name: 'ReceiptHandleIsInvalid',
    message: `The input receipt handle "garbage-${'g'.repeat(200)}" is not a valid receipt handle.`,
  },
];

describe('error messages', () => {
  it.each(cases)("answers $behaviour with AWS's text", async ({ act, name, message }) => {
    const error = await errorOf(act(sqs.client));
    expect([error.name, error.message]).toEqual([name, message]);
  });

  it('logs the local explanation that the response leaves out', async () => {
    const lines: string[] = [];
    const { startSqs } = await import('../../../local/sqs/server.js');
    const { sqsClient } = await import('../../support/sqs.js');
    const server = await startSqs({ onLog: (line) => lines.push(line) });
    const client = sqsClient(server.endpoint);
    try {
      const error = await errorOf(client.send(new GetQueueUrlCommand({ QueueName: 'missing' })));
      expect(error.message).toBe('The specified queue does not exist.');
      expect(lines).toEqual([
        expect.stringMatching(/^\[sqs\] GetQueueUrl: QueueDoesNotExist: The specified queue does not exist\. \(no queue answers to "missing" here/),
      ]);
    } finally {
      client.destroy();
      await server.close();
    }
  });
});
