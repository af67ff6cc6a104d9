/**
 * SQS errors as the AWS JSON 1.0 front sends them: `__type` carries `name`, the
 * `x-amzn-query-error` header carries `queryCode;Sender|Receiver`. `@aws-sdk/client-sqs` turns that
 * into `err.name === name` and `err.Code === queryCode`.
 */
const KNOWN = {
  QueueDoesNotExist: ['AWS.SimpleQueueService.NonExistentQueue', 400],
  QueueNameExists: ['QueueAlreadyExists', 400],
  InvalidParameterValue: ['InvalidParameterValue', 400],
  MissingParameter: ['MissingParameter', 400],
  InvalidAttributeName: ['InvalidAttributeName', 400],
  InvalidAttributeValue: ['InvalidAttributeValue', 400],
  InvalidMessageContents: ['InvalidMessageContents', 400],
  ReceiptHandleIsInvalid: ['ReceiptHandleIsInvalid', 404],
  MessageNotInflight: ['AWS.SimpleQueueService.MessageNotInflight', 400],
  EmptyBatchRequest: ['AWS.SimpleQueueService.EmptyBatchRequest', 400],
  TooManyEntriesInBatchRequest: ['AWS.SimpleQueueService.TooManyEntriesInBatchRequest', 400],
  BatchEntryIdsNotDistinct: ['AWS.SimpleQueueService.BatchEntryIdsNotDistinct', 400],
  InvalidBatchEntryId: ['AWS.SimpleQueueService.InvalidBatchEntryId', 400],
  BatchRequestTooLong: ['AWS.SimpleQueueService.BatchRequestTooLong', 400],
  PurgeQueueInProgress: ['AWS.SimpleQueueService.PurgeQueueInProgress', 403],
  UnsupportedOperation: ['AWS.SimpleQueueService.UnsupportedOperation', 400],
  RequestThrottled: ['RequestThrottled', 403],
  OverLimit: ['OverLimit', 403],
  InternalError: ['InternalError', 500],
  ServiceUnavailable: ['ServiceUnavailable', 503],
  UnknownOperationException: ['UnknownOperationException', 400],
  SerializationException: ['SerializationException', 400],
} as const satisfies Record<string, readonly [string, number]>;

/** The SQS errors the local model raises, by their modeled name (`QueueDoesNotExist`, `InvalidParameterValue`, ...). */
export type SqsErrorName = keyof typeof KNOWN;

/**
 * An error of the local SQS model, sent by the AWS JSON front the way SQS sends it, so that
 * `@aws-sdk/client-sqs` raises its own error class with the same `name` and `Code` as on AWS.
 *
 * @example
 * try {
 *   model.getQueue('missing');
 * } catch (error) {
 *   if (error instanceof SqsError && error.code === 'QueueDoesNotExist') { ... }
 * }
 */
export class SqsError extends Error {
  /** The modeled error name (`__type` after the `#`), e.g. `QueueDoesNotExist`. */
  readonly code: SqsErrorName;
  /** The query-protocol code, e.g. `AWS.SimpleQueueService.NonExistentQueue`; batch entries carry it. */
  readonly queryCode: string;
  /** The HTTP status the front answers with: 400, 403 or 404 for sender faults, 500 or 503 for service faults. */
  readonly httpStatus: number;
  /** True when the caller's request was at fault (4xx), false for a service fault. */
  readonly senderFault: boolean;

  constructor(code: SqsErrorName, message: string) {
    super(message);
    this.name = 'SqsError';
    const [queryCode, status] = KNOWN[code];
    this.code = code;
    this.queryCode = queryCode;
    this.httpStatus = status;
    this.senderFault = status < 500;
  }
}

export function invalidParameter(name: string, value: unknown, reason: string): SqsError {
  return new SqsError(
    'InvalidParameterValue',
    `Value ${formatValue(value)} for parameter ${name} is invalid. Reason: ${reason}`,
  );
}

export function missingParameter(name: string): SqsError {
  return new SqsError('MissingParameter', `The request must contain the parameter ${name}.`);
}

function formatValue(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text === undefined ? 'undefined' : text.length > 200 ? `${text.slice(0, 200)}...` : text;
}
