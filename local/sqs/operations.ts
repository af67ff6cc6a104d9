import { missingParameter } from './errors.js';
import { pendingFaults } from './faults.js';
import type { BatchOperation, SqsFaults } from './faults.js';
import type { SqsModel } from './model.js';
import { hostOf } from './queue-ref.js';
import type { BatchEntryFailure, BatchResult, ReceivedMessage, SendMessageInput } from './types.js';
import { attributesFromWire, entryList, integerMember, requiredString, stringList, stringMap, stringMember } from './wire-input.js';
import type { Json } from './wire-input.js';

/** What a handler knows of its request besides the JSON input. */
export interface RequestContext {
  signal: AbortSignal;
  /** The Host header: the address the client reached the front by. */
  host: string | undefined;
}

/** One SQS operation: its JSON input to its JSON output, or a thrown SqsError. */
export type Handler = (input: Json, context: RequestContext) => Promise<Json> | Json;

/**
 * The SQS operations of the AWS JSON 1.0 front, by name (`x-amz-target: AmazonSQS.<name>`): each reads
 * its members as AWS does (wire-input.ts), calls the model, and shapes the answer as AWS does. A Map, since
 * the name is the client's: on an object, `AmazonSQS.constructor` would find Object.prototype's.
 */
export function createHandlers(model: SqsModel, faults: SqsFaults): ReadonlyMap<string, Handler> {
  // A queue URL carrying the host the client reached this front by names this front's queue, whatever
  // the address the URL was made with (localhost or 127.0.0.1, a container name); other hosts and other
  // accounts name queues that are not here (queue-ref.ts).
  const queueUrl = (input: Json, context: RequestContext): string => {
    const url = requiredString(input, 'QueueUrl');
    const requestHost = context.host?.toLowerCase();
    if (!requestHost || !/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) return url;
    try {
      const parsed = new URL(url);
      if (parsed.host.toLowerCase() !== requestHost || parsed.host.toLowerCase() === hostOf(model.endpoint)) return url;
      return `${model.endpoint}${parsed.pathname}`;
    } catch {
      return url;
    }
  };
  const handlers: Record<string, Handler> = {
    CreateQueue: (input) => ({ QueueUrl: model.createQueue(requiredString(input, 'QueueName'), stringMap(input, 'Attributes')).url }),
    GetQueueUrl: (input) => ({ QueueUrl: model.getQueue(requiredString(input, 'QueueName')).url }),
    ListQueues: (input) => {
      const prefix = stringMember(input, 'QueueNamePrefix') ?? '';
      const max = integerMember(input, 'MaxResults') ?? 1000;
      return {
        QueueUrls: model
          .listQueues(prefix)
          .slice(0, max)
          .map((q) => q.url),
      };
    },
    DeleteQueue: (input, context) => {
      model.deleteQueue(queueUrl(input, context));
      return {};
    },
    GetQueueAttributes: (input, context) => {
      const names = stringList(input, 'AttributeNames');
      return { Attributes: model.getQueueAttributes(queueUrl(input, context), names.length ? names : ['All']) };
    },
    SetQueueAttributes: (input, context) => {
      model.setQueueAttributes(queueUrl(input, context), stringMap(input, 'Attributes'));
      return {};
    },
    PurgeQueue: (input, context) => {
      model.purgeQueue(queueUrl(input, context));
      return {};
    },
    SendMessage: async (input, context) => {
      const result = await model.sendMessage({ queue: queueUrl(input, context), ...sendFields(input) });
      return compact({
        MessageId: result.messageId,
        MD5OfMessageBody: result.md5OfMessageBody,
        MD5OfMessageAttributes: result.md5OfMessageAttributes,
        MD5OfMessageSystemAttributes: result.md5OfMessageSystemAttributes,
        SequenceNumber: result.sequenceNumber,
      });
    },
    SendMessageBatch: async (input, context) => {
      const queue = queueUrl(input, context);
      const entries = entryList(input).map((e) => ({ id: stringMember(e, 'Id') ?? '', ...sendFields(e) }));
      const result = await withEntryFaults(faults, 'SendMessageBatch', entries, (kept) => model.sendMessageBatch(queue, kept));
      return {
        Successful: result.successful.map((s) =>
          compact({
            Id: s.id,
            MessageId: s.messageId,
            MD5OfMessageBody: s.md5OfMessageBody,
            MD5OfMessageAttributes: s.md5OfMessageAttributes,
            MD5OfMessageSystemAttributes: s.md5OfMessageSystemAttributes,
            SequenceNumber: s.sequenceNumber,
          }),
        ),
        Failed: result.failed.map(failedEntry),
      };
    },
    ReceiveMessage: async (input, context) => {
      const messages = await model.receiveMessages({
        queue: queueUrl(input, context),
        ...optional('maxNumberOfMessages', integerMember(input, 'MaxNumberOfMessages')),
        ...optional('visibilityTimeout', integerMember(input, 'VisibilityTimeout')),
        ...optional('waitTimeSeconds', integerMember(input, 'WaitTimeSeconds')),
        attributeNames: [...stringList(input, 'AttributeNames'), ...stringList(input, 'MessageSystemAttributeNames')],
        messageAttributeNames: stringList(input, 'MessageAttributeNames'),
        ...optional('receiveRequestAttemptId', stringMember(input, 'ReceiveRequestAttemptId')),
        signal: context.signal,
      });
      return messages.length === 0 ? {} : { Messages: messages.map(wireMessage) };
    },
    DeleteMessage: (input, context) => {
      model.deleteMessage(queueUrl(input, context), requiredString(input, 'ReceiptHandle'));
      return {};
    },
    DeleteMessageBatch: async (input, context) => {
      const queue = queueUrl(input, context);
      const entries = entryList(input).map((e) => ({ id: stringMember(e, 'Id') ?? '', receiptHandle: stringMember(e, 'ReceiptHandle') ?? '' }));
      const result = await withEntryFaults(faults, 'DeleteMessageBatch', entries, (kept) => model.deleteMessageBatch(queue, kept));
      return { Successful: result.successful.map((s) => ({ Id: s.id })), Failed: result.failed.map(failedEntry) };
    },
    ChangeMessageVisibility: (input, context) => {
      const queue = queueUrl(input, context);
      const receiptHandle = requiredString(input, 'ReceiptHandle');
      const timeout = integerMember(input, 'VisibilityTimeout');
      if (timeout === undefined) throw missingParameter('VisibilityTimeout');
      model.changeMessageVisibility(queue, receiptHandle, timeout);
      return {};
    },
    ChangeMessageVisibilityBatch: async (input, context) => {
      const queue = queueUrl(input, context);
      const entries = entryList(input).map((e) => ({
        id: stringMember(e, 'Id') ?? '',
        receiptHandle: stringMember(e, 'ReceiptHandle') ?? '',
        visibilityTimeout: integerMember(e, 'VisibilityTimeout') ?? 0,
      }));
      const result = await withEntryFaults(faults, 'ChangeMessageVisibilityBatch', entries, (kept) => model.changeMessageVisibilityBatch(queue, kept));
      return { Successful: result.successful.map((s) => ({ Id: s.id })), Failed: result.failed.map(failedEntry) };
    },
    StartMessageMoveTask: (input) => {
      const destinationArn = stringMember(input, 'DestinationArn');
      return {
        TaskHandle: model.startMessageMoveTask({ sourceArn: requiredString(input, 'SourceArn'), ...optional('destinationArn', destinationArn) }).taskHandle,
      };
    },
  };
  return new Map(Object.entries(handlers));
}

/** Applies an injected entry fault around a batch call: rejected entries never reach the model. */
async function withEntryFaults<E extends { id: string }, R>(
  faults: SqsFaults,
  operation: BatchOperation,
  entries: E[],
  run: (entries: E[]) => Promise<BatchResult<R>> | BatchResult<R>,
): Promise<BatchResult<R>> {
  const fault = entries.length > 0 && entries.length <= 10 ? pendingFaults(faults).takeEntries(operation) : undefined;
  if (!fault) return run(entries);
  const hit = new Set(entries.filter((e, i) => fault.select(e.id, i)).map((e) => e.id));
  const failure = (id: string): BatchEntryFailure => ({ id, code: fault.code, message: fault.message, senderFault: fault.senderFault });
  if (fault.mode === 'applyThenFail') {
    const result = await run(entries);
    return {
      successful: result.successful.filter((s) => !hit.has(s.id)),
      failed: [...result.failed, ...result.successful.filter((s) => hit.has(s.id)).map((s) => failure(s.id))],
    };
  }
  const kept = entries.filter((e) => !hit.has(e.id));
  const result: BatchResult<R> = kept.length > 0 ? await run(kept) : { successful: [], failed: [] };
  return { successful: result.successful, failed: [...result.failed, ...[...hit].map(failure)] };
}

function sendFields(input: Json): Omit<SendMessageInput, 'queue'> {
  return {
    body: stringMember(input, 'MessageBody') ?? '',
    ...optional('delaySeconds', integerMember(input, 'DelaySeconds')),
    ...optional('messageAttributes', attributesFromWire(input, 'MessageAttributes')),
    ...optional('messageSystemAttributes', attributesFromWire(input, 'MessageSystemAttributes')),
    ...optional('messageGroupId', stringMember(input, 'MessageGroupId')),
    ...optional('messageDeduplicationId', stringMember(input, 'MessageDeduplicationId')),
  };
}

function wireMessage(message: ReceivedMessage): Json {
  const attributes: Record<string, Json> = {};
  for (const [name, a] of Object.entries(message.messageAttributes)) {
    attributes[name] = compact({
      DataType: a.dataType,
      StringValue: a.stringValue,
      BinaryValue: a.binaryValue ? Buffer.from(a.binaryValue).toString('base64') : undefined,
    });
  }
  return compact({
    MessageId: message.messageId,
    ReceiptHandle: message.receiptHandle,
    MD5OfBody: message.md5OfBody,
    Body: message.body,
    Attributes: Object.keys(message.attributes).length ? message.attributes : undefined,
    MD5OfMessageAttributes: message.md5OfMessageAttributes,
    MessageAttributes: Object.keys(attributes).length ? attributes : undefined,
  });
}

function failedEntry(failure: BatchEntryFailure): Json {
  return { Id: failure.id, SenderFault: failure.senderFault, Code: failure.code, Message: failure.message };
}

function compact(object: Record<string, unknown>): Json {
  return Object.fromEntries(Object.entries(object).filter(([, v]) => v !== undefined));
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}
