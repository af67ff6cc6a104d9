import type { DiscardCondition } from './types.js';

/** The invocation behind a failure record. */
export interface FailureRecordParts {
  /** The last invocation's request id, or a fresh one when the records were never invoked. */
  requestId: string;
  functionArn: string;
  condition: DiscardCondition;
  /** How many times Lambda invoked the function with these records. */
  approximateInvokeCount: number;
  /**
   * How the last invocation ended: `function-error` (threw, timed out, or an invalid response),
   * `partial` (a valid partial response, no function error), or `never-invoked` (discarded for age
   * before any invocation: no responseContext).
   */
  lastInvocation: 'function-error' | 'partial' | 'never-invoked';
  /** Epoch ms of the discard. */
  now: number;
  /** The source's own part, such as `['KinesisBatchInfo', {...}]`. */
  batchInfo: [string, Record<string, unknown>];
}

/**
 * The JSON document Lambda sends to an SQS (or SNS) on-failure destination for a stream source:
 * requestContext, responseContext, version, timestamp, and the source's batch info. The records
 * themselves are not included: the reader fetches them from the stream by the batch info.
 * (kinesis-on-failure-destination / with-kinesis "Example invocation record"; with-ddb; with-msk-on-failure)
 */
export function failureRecord(parts: FailureRecordParts): Record<string, unknown> {
  const [infoKey, info] = parts.batchInfo;
  return {
    requestContext: {
      requestId: parts.requestId,
      functionArn: parts.functionArn,
      condition: parts.condition,
      approximateInvokeCount: parts.approximateInvokeCount,
    },
    ...(parts.lastInvocation === 'never-invoked'
      ? {}
      : {
          responseContext: {
            statusCode: 200,
            executedVersion: '$LATEST',
            ...(parts.lastInvocation === 'function-error' ? { functionError: 'Unhandled' } : {}),
          },
        }),
    version: '1.0',
    timestamp: new Date(parts.now).toISOString(),
    [infoKey]: info,
  };
}
