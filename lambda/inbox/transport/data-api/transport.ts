import type { RDSDataClient } from '@aws-sdk/client-rds-data';
import { ENV_DATABASE, ENV_DATA_API_ENDPOINT, ENV_RESOURCE_ARN, ENV_SECRET_ARN } from '../../contract.js';
import { InboxConfigError } from '../../errors.js';
import { described, refuseUnknownKeys } from '../../handler/option-checks.js';
import type { InboxTransport, TransportDriver } from '../transport.js';
import { defaultDataApiClient } from './client.js';
import { DataApiSession } from './session.js';
import type { DatabaseTarget } from './session.js';

/** What {@link dataApi} takes. */
type DataApiOptions = NonNullable<Parameters<typeof dataApi>[0]>;

const DATA_API_OPTIONS: Readonly<Record<keyof DataApiOptions, true>> = { resourceArn: true, secretArn: true, database: true, client: true };

/**
 * The Data API transport, `inbox()`'s default: an Aurora cluster over the RDS Data API. What the code
 * leaves out is read from the INBOX_* environment at the first invocation, so that a module that builds
 * its handler imports cleanly without it; a cluster or secret the code names half of is the code's to
 * finish, and is checked at once.
 *
 * @example
 * import { dataApi, inbox } from 'sqs-inbox';
 * export const handler = inbox({ database: dataApi({ database: 'orders' }), apply: async (tx, message) => { ... } });
 */
export function dataApi(
  /** Where the database is. Every field falls back to an `INBOX_*` environment variable. */
  options: {
    /**
     * ARN of the Aurora cluster, with the Data API enabled.
     * @default process.env.INBOX_RESOURCE_ARN
     */
    readonly resourceArn?: string | undefined;
    /**
     * ARN of the Secrets Manager secret holding the database credentials the Data API signs in with.
     * @default process.env.INBOX_SECRET_ARN
     */
    readonly secretArn?: string | undefined;
    /**
     * The database name.
     * @default process.env.INBOX_DATABASE (or the cluster's default database)
     */
    readonly database?: string | undefined;
    /**
     * A ready client. Give it `maxAttempts: 1`: the SDK's own retries re-send a statement whose response
     * was lost, which inside a transaction runs it twice.
     * @default a new RDSDataClient with maxAttempts 1 whose connections are not reused once idle for 15
     * seconds (below the idle timeouts of the AWS network on the way), pointed at
     * process.env.INBOX_DATA_API_ENDPOINT when set (the local Data API server).
     */
    readonly client?: RDSDataClient | undefined;
  } = {},
): InboxTransport {
  const given = checkDataApiOptions(options);
  let target: DatabaseTarget | undefined;
  const settle = () => (target ??= resolveTarget(given));
  if (given.resourceArn !== undefined || given.secretArn !== undefined) settle();
  const driver: TransportDriver = {
    name: 'data-api',
    open: (policy) => new DataApiSession(settle(), policy),
    checkClient: (transactional) => refuseSdkRetries(transactional, settle().client),
  };
  return driver;
}

/** The options' keys and field types checked; {@link resolveTarget} fills in the environment. */
function checkDataApiOptions(options: unknown): DataApiOptions {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new InboxConfigError('dataApi', `takes an object { resourceArn?, secretArn?, database?, client? }; got ${described(options)}`);
  }
  refuseUnknownKeys(options, DATA_API_OPTIONS, 'database');
  const given = options as DataApiOptions;
  for (const field of ['resourceArn', 'secretArn', 'database'] as const) {
    const value: unknown = given[field];
    if (value !== undefined && typeof value !== 'string') {
      throw new InboxConfigError(`database.${field}`, `must be a string; got ${described(value)}`);
    }
  }
  const client: unknown = given.client;
  if (client !== undefined && (typeof client !== 'object' || client === null || typeof (client as { send?: unknown }).send !== 'function')) {
    throw new InboxConfigError('database.client', `must be an RDSDataClient, e.g. new RDSDataClient({ maxAttempts: 1 }); got ${described(client)}`);
  }
  return given;
}

/**
 * In transaction mode the SDK's own retries would re-send a statement whose response was lost, running it
 * twice inside one transaction. A client that retries is refused, with the fix.
 */
async function refuseSdkRetries(transactional: boolean, client: RDSDataClient): Promise<void> {
  // A gated statement sent twice claims once: its retry is harmless.
  if (!transactional) return;
  const provider = (client.config as { maxAttempts?: unknown }).maxAttempts;
  const attempts = typeof provider === 'function' ? Number(await provider()) : Number(provider ?? 1);
  if (attempts > 1) {
    throw new InboxConfigError(
      'database.client',
      `retries each call up to ${attempts} times; inside a transaction a retried statement whose first response was lost runs twice. ` +
        'Create it with `new RDSDataClient({ maxAttempts: 1 })`, or leave `client` out and dataApi() makes one',
    );
  }
}

/**
 * Fills the Data API settings from the INBOX_* environment, naming what is missing. Shared by
 * {@link dataApi}, the migrate and cleanup functions, and the CLI.
 */
export function resolveTarget(database: DataApiOptions, env: NodeJS.ProcessEnv = process.env, option = 'database'): DatabaseTarget {
  const resourceArn = database.resourceArn ?? env[ENV_RESOURCE_ARN];
  const secretArn = database.secretArn ?? env[ENV_SECRET_ARN];
  const name = database.database ?? env[ENV_DATABASE];
  if (!resourceArn) {
    throw new InboxConfigError(`${option}.resourceArn`, 'is not set: pass the Aurora cluster ARN, or set INBOX_RESOURCE_ARN');
  }
  if (!secretArn) {
    throw new InboxConfigError(`${option}.secretArn`, 'is not set: pass the database secret ARN, or set INBOX_SECRET_ARN');
  }
  const endpoint = env[ENV_DATA_API_ENDPOINT];
  const client =
    database.client ??
    defaultDataApiClient({
      ...(endpoint
        ? {
            endpoint,
            region: env.AWS_REGION ?? 'us-east-1',
            // The local server does not check signatures; real credentials are never needed for it.
            credentials: {
              accessKeyId: env.AWS_ACCESS_KEY_ID ?? 'local',
              secretAccessKey: env.AWS_SECRET_ACCESS_KEY ?? 'local',
            },
          }
        : // The Data API answers only in the cluster's own region, which its ARN names: outside Lambda (the
          // CLI on a laptop) AWS_REGION may be unset, and the SDK's "Region is missing" reads as a network fault.
          regionOf(resourceArn)),
    });
  return { resourceArn, secretArn, client, ...(name ? { database: name } : {}) };
}

/** `{ region }` from an ARN such as `arn:aws:rds:eu-west-1:123456789012:cluster:orders`, or nothing. */
function regionOf(arn: string): { region?: string } {
  const region = /^arn:aws[\w-]*:rds:([a-z0-9-]+):/.exec(arn)?.[1];
  return region ? { region } : {};
}
