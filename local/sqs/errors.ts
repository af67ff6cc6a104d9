/** The SQS errors the local model raises, by their modeled name (`QueueDoesNotExist`, `InvalidParameterValue`, ...). */
export type SqsErrorName =
  | 'QueueDoesNotExist'
  | 'QueueNameExists'
  | 'InvalidParameterValue'
  | 'MissingParameter'
  | 'InvalidAttributeName'
  | 'InvalidAttributeValue'
  | 'InvalidMessageContents'
  | 'ReceiptHandleIsInvalid'
  | 'MessageNotInflight'
  | 'EmptyBatchRequest'
  | 'TooManyEntriesInBatchRequest'
  | 'BatchEntryIdsNotDistinct'
  | 'InvalidBatchEntryId'
  | 'BatchRequestTooLong'
  | 'PurgeQueueInProgress'
  | 'UnsupportedOperation'
  | 'RequestThrottled'
  | 'OverLimit'
  | 'InternalError'
  | 'ServiceUnavailable'
  | 'UnknownOperationException'
  | 'SerializationException';

/**
 * SQS errors as the AWS JSON 1.0 front sends them: `__type` carries the modeled shape, the
 * `x-amzn-query-error` header carries `queryCode;Sender|Receiver`. `@aws-sdk/client-sqs` (query
 * compatible) names the error after the header's code, so `err.name` and `err.Code` match AWS.
 *
 * Each entry: [query code, HTTP status, `__type` shape name when it differs from the key].
 * The shape names are the ones AWS sends: localstack's snapshot recorded against SQS on 2023-11-14
 * (tests/aws/services/sqs/test_sqs.snapshot.json, `QueryErrorCode`) shows InvalidParameterValue
 * arriving as `InvalidParameterValueException` and MissingParameter as `MissingRequiredParameterException`.
 */
const KNOWN = {
  QueueDoesNotExist: ['AWS.SimpleQueueService.NonExistentQueue', 400],
  QueueNameExists: ['QueueAlreadyExists', 400],
  InvalidParameterValue: ['InvalidParameterValue', 400, 'InvalidParameterValueException'],
  MissingParameter: ['MissingParameter', 400, 'MissingRequiredParameterException'],
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
} as const satisfies Record<SqsErrorName, readonly [string, number] | readonly [string, number, string]>;

/**
 * An error of the local SQS model, sent by the AWS JSON front the way SQS sends it, so that
 * `@aws-sdk/client-sqs` raises its own error class with the same `name` and `Code` as on AWS.
 * `message` is AWS's text, word for word (users' tests match on it); anything the local runtime
 * wants to add goes into `advice`, which the HTTP front logs and never sends.
 *
 * @example
 * try {
 *   model.getQueue('missing');
 * } catch (error) {
 *   if (error instanceof SqsError && error.code === 'QueueDoesNotExist') { ... }
 * }
 */
export class SqsError extends Error {
  /** The modeled error name, e.g. `QueueDoesNotExist`; also what the SDK names the error. */
  readonly code: SqsErrorName;
  /** The query-protocol code, e.g. `AWS.SimpleQueueService.NonExistentQueue`; batch entries carry it. */
  readonly queryCode: string;
  /** The shape name after the `#` in `__type` (`InvalidParameterValueException` for InvalidParameterValue). */
  readonly shapeName: string;
  /** The HTTP status the front answers with: 400, 403 or 404 for sender faults, 500 or 503 for service faults. */
  readonly httpStatus: number;
  /** True when the caller's request was at fault (4xx), false for a service fault. */
  readonly senderFault: boolean;
  /** A local hint for the log (what to change, why); never part of the response. */
  readonly advice: string | undefined;

  constructor(code: SqsErrorName, message: string, options: { advice?: string | undefined } = {}) {
    super(message);
    this.name = 'SqsError';
    const known: readonly [string, number, string?] = KNOWN[code];
    this.code = code;
    this.queryCode = known[0];
    this.httpStatus = known[1];
    this.shapeName = known[2] ?? code;
    this.senderFault = known[1] < 500;
    this.advice = options.advice;
  }
}

/** `Value <value> for parameter <name> is invalid. Reason: <reason>`: AWS's InvalidParameterValue sentence. */
export function invalidParameter(name: string, value: unknown, reason: string, advice?: string): SqsError {
  return new SqsError('InvalidParameterValue', `Value ${formatValue(value)} for parameter ${name} is invalid. Reason: ${reason}`, { advice });
}

/** `The request must contain the parameter <name>.` (MissingParameter). */
export function missingParameter(name: string): SqsError {
  return new SqsError('MissingParameter', `The request must contain the parameter ${name}.`);
}

/** `Invalid value for the parameter <name>.` (InvalidAttributeValue), optionally with AWS's ` Reason: ...`. */
export function invalidAttributeValue(name: string, reason?: string, advice?: string): SqsError {
  return new SqsError('InvalidAttributeValue', `Invalid value for the parameter ${name}.${reason === undefined ? '' : ` Reason: ${reason}`}`, { advice });
}

/**
 * QueueDoesNotExist with AWS's text. Source: the SQS developer guide's JSON error example,
 * https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-json-api-responses.html
 */
export function queueDoesNotExist(reference: string): SqsError {
  return new SqsError('QueueDoesNotExist', 'The specified queue does not exist.', {
    advice: `no queue answers to ${JSON.stringify(reference)} here: create it first, or check the name, the account id and the host in the URL`,
  });
}

function formatValue(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text === undefined ? 'undefined' : text;
}
