import { connect, createServer } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';

/** A TCP proxy that forgets idle connections the way a NAT gateway or load balancer does. */
export interface IdleDropProxy {
  /** Give this to `new RDSDataClient({ endpoint })` in place of the server's endpoint. */
  readonly endpoint: string;
  /** Connections the proxy forgot, then answered with a reset when the client wrote to them again. */
  readonly resets: number;
  close(): Promise<void>;
}

/**
 * Stands between a client and `target` (an http://host:port endpoint). A connection that carried nothing
 * for `idleMs` is forgotten without the client being told (no FIN): its upstream connection is closed, and
 * the next bytes the client writes on it are answered with a TCP reset, as a NAT gateway answers a flow it
 * dropped. Idleness is judged by the clock when the client writes, so a client whose event loop was
 * blocked (a frozen Lambda) sees the reset exactly as one that waited.
 */
export async function startIdleDropProxy(target: string, idleMs: number): Promise<IdleDropProxy> {
  const { hostname, port } = new URL(target);
  let resets = 0;
  const open = new Set<Socket>();
  const server = createServer((client) => {
    open.add(client);
    const upstream = connect(Number(port), hostname);
    open.add(upstream);
    let last = Date.now();
    let forgotten = false;
    client.on('data', (chunk: Buffer) => {
      if (forgotten || Date.now() - last >= idleMs) {
        forgotten = true;
        upstream.destroy();
        resets++;
        client.resetAndDestroy();
        return;
      }
      last = Date.now();
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      last = Date.now();
      client.write(chunk);
    });
    upstream.on('end', () => client.end());
    client.on('end', () => upstream.end());
    for (const socket of [client, upstream]) {
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
      socket.on('close', () => open.delete(socket));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get resets() {
      return resets;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of open) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
