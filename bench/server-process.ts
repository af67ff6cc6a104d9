import { startPostgres } from '../local/postgres.js';
import { startDataApi } from '../local/data-api/server.js';
import type { DataApiServer } from '../local/data-api/server.js';
import { startDynamoDb } from './dynamodb.js';
import type { LocalDynamoDb } from './dynamodb.js';
import type { BenchServerOptions, ChildReply, ChildRequest } from './servers.js';
import type { Operation } from '../local/data-api/stats.js';

/**
 * The bench's database side, in a process of its own (started by bench/servers.ts over an IPC channel):
 * embedded PostgreSQL (or DATABASE_URL) and the local Data API servers in front of it. The variants that
 * make more calls then pay for them in round trips, not also in the server's CPU inside the process that
 * times them. The parent asks for servers (with their limits), latency, and the call counts.
 */
async function main(): Promise<void> {
  const send = (reply: ChildReply) => process.send!(reply);
  const postgres = await startPostgres();
  const servers = new Map<string, DataApiServer>();
  let dynamodb: LocalDynamoDb | undefined;
  let closing = false;
  const close = async () => {
    if (closing) return;
    closing = true;
    for (const server of servers.values()) await server.close().catch(() => {});
    await dynamodb?.close().catch(() => {});
    await postgres.close().catch(() => {});
  };
  // The parent went away (it finished, or crashed): stop PostgreSQL and leave.
  process.on('disconnect', () => void close().then(() => process.exit(0)));

  process.on('message', (message: ChildRequest) => {
    void (async () => {
      try {
        send({ id: message.id, ok: true, value: await run(message) });
      } catch (error) {
        send({ id: message.id, ok: false, error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
      }
    })();
  });

  const server = (name: string) => {
    const found = servers.get(name);
    if (!found) throw new Error(`no Data API server named "${name}"`);
    return found;
  };

  const dynamo = () => {
    if (!dynamodb) throw new Error('the local DynamoDB is not started');
    return dynamodb;
  };

  async function run(request: ChildRequest): Promise<unknown> {
    switch (request.command) {
      case 'start': {
        const options: BenchServerOptions = request.options;
        const started = await startDataApi({
          databaseUrl: postgres.url,
          ...(options.maxConcurrentCalls !== undefined && { maxConcurrentCalls: options.maxConcurrentCalls }),
          ...(options.transactionIdleTimeoutMs !== undefined && { transactionIdleTimeoutMs: options.transactionIdleTimeoutMs }),
          ...(options.maxOpenTransactions !== undefined && { maxOpenTransactions: options.maxOpenTransactions }),
          ...(options.maxConnectionsPerDatabase !== undefined && { maxConnectionsPerDatabase: options.maxConnectionsPerDatabase }),
        });
        servers.set(request.name, started);
        return { endpoint: started.endpoint, resourceArn: started.resourceArn, secretArn: started.secretArn };
      }
      case 'latency': {
        const faults = server(request.name).faults;
        faults.clear();
        const byOperation = typeof request.ms === 'number' ? { all: request.ms } : request.ms;
        for (const [operation, ms] of Object.entries(byOperation)) {
          if (ms > 0) faults.latency({ ms, ...(operation === 'all' ? {} : { operation: operation as Operation }) });
        }
        return null;
      }
      case 'dynamodb-start':
        dynamodb ??= await startDynamoDb();
        return dynamodb.endpoint;
      case 'dynamodb-latency':
        dynamo().latency(request.byOperation);
        return null;
      case 'dynamodb-stats':
        return dynamo().stats();
      case 'dynamodb-reset':
        dynamo().resetStats();
        return null;
      case 'stats':
        return { ...server(request.name).stats.calls };
      case 'reset':
        server(request.name).stats.reset();
        return null;
      case 'cpu': {
        const { user, system } = process.cpuUsage();
        return user + system;
      }
      case 'event-loop': {
        const { idle, active } = performance.eventLoopUtilization();
        return { idle, active };
      }
      case 'close':
        await close();
        setImmediate(() => process.exit(0));
        return null;
    }
  }

  send({ id: 0, ok: true, value: { postgresUrl: postgres.url } });
}

main().catch((error: unknown) => {
  process.stderr.write(`[bench server] failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
