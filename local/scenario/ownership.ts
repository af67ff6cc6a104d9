import { INBOX_ENV } from '../../lambda/inbox/contract.js';
import { startLocal } from '../stack.js';
import type { LocalStack } from '../stack.js';

// What a run owns while it lasts: the stack's faults and call counts (one run per stack, on yours or on
// one of its own), and, when it sets the handlers' environment, process.env (one such run per process).

/** Sets variables for the run; `undefined` unsets one. What it set is restored when the run ends. */
export type SetEnv = (env: Readonly<Record<string, string | undefined>>) => void;

let owned: string | undefined;

/**
 * Runs `body` as the process's one scenario: it owns `process.env` (what `setEnv` sets is restored at the
 * end) until it returns. `runner` is the runner's name, for the refusal of a second one.
 */
export async function exclusively<T>(runner: string, body: (setEnv: SetEnv) => Promise<T>): Promise<T> {
  if (owned !== undefined) {
    throw new Error(
      `${runner}: another scenario (${owned}) is running in this process. A run owns process.env and the stack's faults: await one before starting the next.`,
    );
  }
  owned = runner;
  const saved = new Map<string, string | undefined>();
  try {
    return await body((env) => {
      for (const [key, value] of Object.entries(env)) {
        if (!saved.has(key)) saved.set(key, process.env[key]);
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
    });
  } finally {
    for (const [key, value] of saved) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
    owned = undefined;
  }
}

/** Stacks a run is using, and by which runner. */
const busy = new WeakMap<LocalStack, string>();

/**
 * Runs `body` on `local`, or on a stack of its own (a 2 s transaction idle timeout, so a crashed
 * transaction expires fast) closed at the end. One run at a time per stack: a run owns its faults.
 */
export async function onStack<T>(runner: string, local: LocalStack | undefined, body: (local: LocalStack) => Promise<T>): Promise<T> {
  const using = local && busy.get(local);
  if (using) {
    throw new Error(
      `${runner}: another run (${using}) is using this stack. A run owns the stack's faults: await one before starting the next, or give each its own startLocal().`,
    );
  }
  const stack = local ?? (await startLocal({ dataApi: { transactionIdleTimeoutMs: 2000 } }));
  busy.set(stack, runner);
  try {
    return await body(stack);
  } finally {
    busy.delete(stack);
    if (!local) await stack.close();
  }
}

/**
 * The variables a run sets for the handlers it makes: `INBOX_*` on the run's database, and the AWS SDK's
 * region, credentials and SQS endpoint, so that `new SQSClient({})` in a handler (an outbox's transport,
 * a producer) works against the local SQS: the SDK sends a call that names a queue to its URL's host,
 * but refuses to start without a region and credentials, and the endpoint serves calls without a queue
 * URL. `extra` comes last and may override any of them.
 */
/** The consumer name a run's handlers get as INBOX_CONSUMER unless its `env` names another. */
export const LOCAL_CONSUMER = 'local-consumer';

export function runEnvironment(
  local: LocalStack,
  database: string,
  extra: Readonly<Record<string, string | undefined>> | undefined,
): Record<string, string | undefined> {
  return {
    [INBOX_ENV.DATA_API_ENDPOINT]: local.dataApi.endpoint,
    [INBOX_ENV.RESOURCE_ARN]: local.dataApi.resourceArn,
    [INBOX_ENV.SECRET_ARN]: local.dataApi.secretArn,
    [INBOX_ENV.DATABASE]: database,
    [INBOX_ENV.CONSUMER]: LOCAL_CONSUMER,
    AWS_ENDPOINT_URL_SQS: local.sqs.endpoint,
    AWS_REGION: local.sqs.region,
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    ...extra,
  };
}
