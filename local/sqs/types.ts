/** One message attribute, as the model stores it (binary values as bytes). */
export interface MessageAttributeValue {
  /** `String`, `Number`, `Binary`, optionally with a custom suffix such as `String.uuid`. */
  dataType: string;
  /** The value of a `String` or `Number` attribute. */
  stringValue?: string | undefined;
  /** The value of a `Binary` attribute. */
  binaryValue?: Uint8Array | undefined;
}

/** A message as a receive hands it out: a snapshot, not the stored message. */
export interface ReceivedMessage {
  /** The id SQS gave the message when it was sent. */
  messageId: string;
  /** The handle of this receive: only the latest one deletes the message or changes its visibility. */
  receiptHandle: string;
  /** The message body. */
  body: string;
  /** Hex MD5 of the body. */
  md5OfBody: string;
  /** System attributes asked for, every value a string (timestamps in epoch milliseconds). */
  attributes: Record<string, string>;
  /** Message attributes asked for. */
  messageAttributes: Record<string, MessageAttributeValue>;
  /** MD5 over the message attributes returned (absent when none are returned). */
  md5OfMessageAttributes?: string | undefined;
}

/** What {@link SqsModel.sendMessage} takes: SendMessage's parameters. */
export interface SendMessageInput {
  /** Queue name, URL or ARN. */
  queue: string;
  /** The message body, 1 byte to 1 MiB with the attributes. */
  body: string;
  /** Seconds, 0 to 900, before the message can be received; standard queues only. @default the queue's DelaySeconds */
  delaySeconds?: number | undefined;
  /** Message attributes, at most 10. */
  messageAttributes?: Record<string, MessageAttributeValue> | undefined;
  /** Only `AWSTraceHeader` is allowed, as on AWS. */
  messageSystemAttributes?: Record<string, MessageAttributeValue> | undefined;
  /** FIFO: the message group, required; messages of one group are received in order, one batch at a time. */
  messageGroupId?: string | undefined;
  /**
   * FIFO: a send with an id seen in the last 5 minutes is accepted but not enqueued.
   * @default the SHA-256 of the body when the queue has ContentBasedDeduplication (else required)
   */
  messageDeduplicationId?: string | undefined;
}

/** What a send returns, as SendMessage does. */
export interface SendMessageResult {
  /** The message id (for a deduplicated send, the id of the message it duplicates). */
  messageId: string;
  /** Hex MD5 of the body. */
  md5OfMessageBody: string;
  /** MD5 over the message attributes, when there are any. */
  md5OfMessageAttributes?: string | undefined;
  /** MD5 over the message system attributes, when there are any. */
  md5OfMessageSystemAttributes?: string | undefined;
  /** FIFO only: the message's place in its queue. */
  sequenceNumber?: string | undefined;
  /** True when FIFO deduplication swallowed the message: accepted, not enqueued. */
  deduplicated: boolean;
}

/** One entry of {@link SqsModel.sendMessageBatch}: a send without the queue, with its batch `id`. */
export interface SendBatchEntry extends Omit<SendMessageInput, 'queue'> {
  /** The entry id, unique in the request: 1 to 80 alphanumeric characters, hyphens or underscores. */
  id: string;
}

/** What a batch operation returns: each entry succeeded or failed on its own. */
export interface BatchResult<T> {
  /** The entries that succeeded, with their results. */
  successful: (T & { id: string })[];
  /** The entries that failed, as SQS reports them in `Failed`. */
  failed: {
    /** The entry's `Id` in the request. */
    id: string;
    /** The SQS error code (the query-protocol code, e.g. `InvalidParameterValue`). */
    code: string;
    /** What went wrong. */
    message: string;
    /** True when the entry itself was at fault; false for a service fault worth retrying. */
    senderFault: boolean;
  }[];
}

/** One failed entry of a batch request. */
export type BatchEntryFailure = BatchResult<unknown>['failed'][number];
