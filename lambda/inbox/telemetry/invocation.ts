import { AsyncLocalStorage } from 'node:async_hooks';
import type { InboxLogger } from './telemetry.js';

/**
 * The request id of the invocation whose code is running. Not a module variable: on Lambda Managed Instances
 * one process runs many invocations of one handler at once, and a "current request" set at each start would
 * name the last one started in every line the others write.
 */
const running = new AsyncLocalStorage<string | undefined>();

/** Runs one invocation's work with its request id (Lambda's `context.awsRequestId`) beside it. */
export function inInvocation<T>(requestId: string | undefined, run: () => Promise<T>): Promise<T> {
  return running.run(requestId, run);
}

/** The request id of the invocation this code runs for; undefined outside one, or without a Lambda context. */
export function currentRequestId(): string | undefined {
  return running.getStore();
}

/**
 * `logger`, each line of it carrying the `function_request_id` of the invocation that wrote it (the key
 * Powertools' Logger gives the Lambda context's request id), whichever of the concurrent invocations runs.
 */
export function withRequestIds(logger: InboxLogger): InboxLogger {
  const at =
    (level: keyof InboxLogger) =>
    (message: string, ...extra: unknown[]): void => {
      const requestId = running.getStore();
      if (requestId === undefined) logger[level](message, ...extra);
      else logger[level](message, ...extra, { function_request_id: requestId });
    };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}
