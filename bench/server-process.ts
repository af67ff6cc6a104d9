import { startPostgres } from '../local/postgres.js';
import { startDataApi } from '../local/data-api/server.js';
import type { DataApiServer } from '../local/data-api/server.js';
import type { BenchServerOptions, ChildReply, ChildRequest } from './servers.js';

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
  let closing = false;
  const close = async () => {
    if (closing) return;
    closing = true;
    for (const server of servers.values()) await server.close().catch(() => {});
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
      case 'latency':
        server(request.name).faults.clear();
        if (request.ms > 0) server(request.name).faults.latency({ ms: request.ms });
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
