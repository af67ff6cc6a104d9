import { startPostgres } from './postgres.js';
import type { PostgresServer } from './postgres.js';
import { startDataApi } from './data-api/server.js';
import type { DataApiServer, StartDataApiOptions } from './data-api/server.js';
import { startSqs } from './sqs/server.js';
import type { SqsServer, StartSqsOptions } from './sqs/server.js';

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
 * SQS endpoint: what `npx sqs-inbox local` and the demo run.
 *
 * @param options.dataApi - options of the Data API server; its database is the PostgreSQL started here
 * @param options.sqs - options of the SQS endpoint
 *
 * @example
 * const local = await startLocal();
 * // new RDSDataClient({ endpoint: local.dataApi.endpoint, ... }); new SQSClient({ endpoint: local.sqs.endpoint, ... })
 * await local.close();
 */
export async function startLocal(options: { dataApi?: Omit<StartDataApiOptions, 'databaseUrl'> | undefined; sqs?: StartSqsOptions | undefined } = {}): Promise<LocalStack> {
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
