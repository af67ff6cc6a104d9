import type { Context } from 'aws-lambda';
import type { Clock } from './sqs/clock.js';

/** What a local invocation's context is made of. */
export interface ContextParts {
  functionName: string;
  region: string;
  accountId: string;
  requestId: string;
  /** Epoch ms on `clock` when the function timeout strikes. */
  deadline: number;
  clock: Clock;
}

/** The full Lambda `Context` shape, with `getRemainingTimeInMillis()` counting down on the injected clock. */
export function lambdaContext(parts: ContextParts): Context {
  const { functionName, region, accountId, requestId, deadline, clock } = parts;
  const unsupported = (): never => {
    throw new Error(`${functionName}: context.done/fail/succeed are not supported by the local event source; return a value or a promise.`);
  };
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: functionArn(region, accountId, functionName),
    memoryLimitInMB: '128',
    awsRequestId: requestId,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: `local/[$LATEST]${requestId.replaceAll('-', '')}`,
    getRemainingTimeInMillis: () => Math.max(0, deadline - clock.now()),
    done: unsupported,
    fail: unsupported,
    succeed: unsupported,
  };
}

/** The function's ARN, as failure records and contexts carry it. */
export function functionArn(region: string, accountId: string, functionName: string): string {
  return `arn:aws:lambda:${region}:${accountId}:function:${functionName}`;
}
