/** One message attribute, as the model stores it (binary values as bytes). */
export interface MessageAttributeValue {
  /** `String`, `Number`, `Binary`, optionally with a custom suffix such as `String.uuid`. */
  dataType: string;
  stringValue?: string;
  binaryValue?: Uint8Array;
}

/** A message as a receive hands it out: a snapshot, not the stored message. */
export interface ReceivedMessage {
  messageId: string;
  receiptHandle: string;
  body: string;
  md5OfBody: string;
  /** System attributes asked for, every value a string (timestamps in epoch milliseconds). */
  attributes: Record<string, string>;
  /** Message attributes asked for. */
  messageAttributes: Record<string, MessageAttributeValue>;
  /** MD5 over the message attributes returned (absent when none are returned). */
  md5OfMessageAttributes?: string;
}

export interface SendMessageInput {
  /** Queue name, URL or ARN. */
  queue: string;
  body: string;
  delaySeconds?: number;
  messageAttributes?: Record<string, MessageAttributeValue>;
  /** Only `AWSTraceHeader` is allowed, as on AWS. */
  messageSystemAttributes?: Record<string, MessageAttributeValue>;
  messageGroupId?: string;
  messageDeduplicationId?: string;
}

export interface SendMessageResult {
  messageId: string;
  md5OfMessageBody: string;
  md5OfMessageAttributes?: string;
  md5OfMessageSystemAttributes?: string;
  sequenceNumber?: string;
  /** True when FIFO deduplication swallowed the message: accepted, not enqueued. */
  deduplicated: boolean;
}

export interface BatchEntryFailure {
  id: string;
  code: string;
  message: string;
  senderFault: boolean;
}

export interface SendBatchEntry extends Omit<SendMessageInput, 'queue'> {
  id: string;
}

export interface BatchResult<T> {
  successful: (T & { id: string })[];
  failed: BatchEntryFailure[];
}

export interface ReceiveMessagesInput {
  /** Queue name, URL or ARN. */
  queue: string;
  /** 1 to 10. @default 1 */
  maxNumberOfMessages?: number;
  /** Seconds, 0 to 43,200; overrides the queue's VisibilityTimeout for these messages. */
  visibilityTimeout?: number;
  /** Seconds, 0 to 20; long poll. @default the queue's ReceiveMessageWaitTimeSeconds */
  waitTimeSeconds?: number;
  /** System attribute names to return, or `All`. */
  attributeNames?: readonly string[];
  /** Message attribute names to return: `All`, `.*`, a name, or a prefix `foo.*`. */
  messageAttributeNames?: readonly string[];
  /** FIFO only: a retry with the same id within 5 minutes returns the same messages. */
  receiveRequestAttemptId?: string;
  /** Ends a long poll early (returns what is there, usually nothing). */
  signal?: AbortSignal;
}

export interface QueueCounts {
  visible: number;
  inFlight: number;
  delayed: number;
}
