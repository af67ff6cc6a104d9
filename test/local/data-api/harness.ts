import {
  BatchExecuteStatementCommand,
  BeginTransactionCommand,
  CommitTransactionCommand,
  ExecuteStatementCommand,
  RDSDataClient,
  RollbackTransactionCommand,
  type BatchExecuteStatementCommandInput,
  type ExecuteStatementCommandInput,
  type SqlParameter,
  type ExecuteStatementCommandOutput,
  type BatchExecuteStatementCommandOutput,
  type CommitTransactionCommandOutput,
  type RollbackTransactionCommandOutput,
} from '@aws-sdk/client-rds-data';
import pg from 'pg';
import { startDataApi, type DataApiServer, type StartDataApiOptions } from '../../../local/data-api/server.js';
import { freshDatabase } from '../../support/database.js';

/** A local Data API on a fresh database, a real SDK client for it, and a direct pg pool to check effects. */
export interface Harness {
  readonly server: DataApiServer;
  readonly client: RDSDataClient;
  /** The URL of this harness's database, for direct checks. */
  readonly url: string;
  /** Direct PostgreSQL access, bypassing the Data API, to assert what was really committed. */
  readonly direct: pg.Pool;
  /** ExecuteStatement with the server's ARNs. */
  execute(
    sql: string,
    parameters?: SqlParameter[],
    extra?: Partial<ExecuteStatementCommandInput>,
    client?: RDSDataClient,
  ): Promise<ExecuteStatementCommandOutput>;
  batch(sql: string, parameterSets?: SqlParameter[][], extra?: Partial<BatchExecuteStatementCommandInput>): Promise<BatchExecuteStatementCommandOutput>;
  begin(extra?: { database?: string }): Promise<string>;
  commit(transactionId: string, client?: RDSDataClient): Promise<CommitTransactionCommandOutput>;
  rollback(transactionId: string): Promise<RollbackTransactionCommandOutput>;
  /** Another SDK client on the same endpoint (its own connections), e.g. with `maxAttempts: 1`. */
  newClient(config?: { maxAttempts?: number; endpoint?: string }): RDSDataClient;
  close(): Promise<void>;
}

export async function startHarness(label: string, options: StartDataApiOptions = {}): Promise<Harness> {
  const url = await freshDatabase(label);
  const server = await startDataApi({ databaseUrl: url, ...options });
  const clients: RDSDataClient[] = [];
  const newClient = (config: { maxAttempts?: number; endpoint?: string } = {}) => {
    const client = new RDSDataClient({
      endpoint: config.endpoint ?? server.endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
      ...(config.maxAttempts !== undefined && { maxAttempts: config.maxAttempts }),
    });
    clients.push(client);
    return client;
  };
  const client = newClient();
  const arns = { resourceArn: server.resourceArn, secretArn: server.secretArn };
  const direct = new pg.Pool({ connectionString: url, max: 4 });
  return {
    server,
    client,
    url,
    direct,
    execute: (sql, parameters, extra, via = client) => via.send(new ExecuteStatementCommand({ ...arns, sql, ...(parameters && { parameters }), ...extra })),
    batch: (sql, parameterSets, extra) => client.send(new BatchExecuteStatementCommand({ ...arns, sql, ...(parameterSets && { parameterSets }), ...extra })),
    begin: async (extra = {}) => (await client.send(new BeginTransactionCommand({ ...arns, ...extra }))).transactionId as string,
    commit: (transactionId, via = client) => via.send(new CommitTransactionCommand({ ...arns, transactionId })),
    rollback: (transactionId) => client.send(new RollbackTransactionCommand({ ...arns, transactionId })),
    newClient,
    close: async () => {
      for (const each of clients) each.destroy();
      await server.close();
      await direct.end();
    },
  };
}

/** The rejection of a promise, for asserting on error classes and $metadata. */
export type CallError = Error & { $metadata: { httpStatusCode?: number; attempts?: number }; [key: string]: unknown };

export async function rejectionOf(promise: Promise<unknown>): Promise<CallError> {
  try {
    await promise;
  } catch (error) {
    return error as CallError;
  }
  throw new Error('Expected the call to fail, and it succeeded.');
}
