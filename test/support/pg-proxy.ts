import { connect, createServer } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';

/**
 * A TCP proxy between node-postgres and PostgreSQL that reads the wire protocol's message framing, so
 * that tests can break the connection exactly where the wire transport must classify a failure: after
 * the server ran a statement and before its answer reached the client, or by a socket that goes silent
 * (a Lambda frozen while RDS Proxy closed its connection), or by dropping every connection (a failover,
 * a restart). Only loopback.
 */
export interface PgFaultProxy {
  /** `postgres://...` through the proxy. */
  readonly url: string;
  /**
   * The next statement whose SQL matches runs on the server; its answer is swallowed and the connection
   * closed, so the client never learns what happened.
   */
  dropAnswer(match: (sql: string) => boolean): void;
  /** Every open connection goes silent: nothing passes either way and nothing is closed. */
  silenceOpenConnections(): void;
  /** Every open connection is closed at once, client and server sides. */
  killAll(): void;
  /** Statements seen, in order (simple queries and Parse messages). */
  readonly statements: string[];
  close(): Promise<void>;
}

interface Pipe {
  readonly client: Socket;
  readonly server: Socket;
  silent: boolean;
  dropping: boolean;
}

export async function startPgProxy(databaseUrl: string): Promise<PgFaultProxy> {
  const target = new URL(databaseUrl);
  const pipes = new Set<Pipe>();
  const drops: ((sql: string) => boolean)[] = [];
  const statements: string[] = [];

  const server: Server = createServer((client) => {
    const upstream = connect(Number(target.port || 5432), target.hostname);
    const pipe: Pipe = { client, server: upstream, silent: false, dropping: false };
    pipes.add(pipe);
    const end = () => {
      pipes.delete(pipe);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);

    let started = false;
    frames(client, (frame, type) => {
      if (pipe.silent) return;
      if (!started) {
        started = true;
      } else if (type === 'Q' || type === 'P') {
        const sql = statementOf(frame, type);
        statements.push(sql);
        const rule = drops.findIndex((match) => match(sql));
        if (rule >= 0) {
          drops.splice(rule, 1);
          pipe.dropping = true;
        }
      }
      upstream.write(frame);
    }, true);
    frames(upstream, (frame, type) => {
      if (pipe.silent) return;
      if (!pipe.dropping) {
        client.write(frame);
        return;
      }
      // The statement ran; its answer ends at ReadyForQuery. Lose it, and the connection with it.
      if (type === 'Z') end();
    }, false);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const url = new URL(databaseUrl);
  url.hostname = '127.0.0.1';
  url.port = String(port);

  return {
    url: url.toString(),
    statements,
    dropAnswer: (match) => void drops.push(match),
    silenceOpenConnections: () => {
      for (const pipe of pipes) pipe.silent = true;
    },
    killAll: () => {
      for (const pipe of pipes) {
        pipe.client.destroy();
        pipe.server.destroy();
      }
      pipes.clear();
    },
    close: async () => {
      for (const pipe of pipes) {
        pipe.client.destroy();
        pipe.server.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * Calls `onFrame` with each whole protocol message arriving on `socket`: a type byte and an int32 length
 * (which counts itself), except the client's first message (startup or SSL request), which has no type.
 */
function frames(socket: Socket, onFrame: (frame: Buffer, type: string) => void, fromClient: boolean): void {
  let buffered = Buffer.alloc(0);
  let first = fromClient;
  socket.on('data', (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    for (;;) {
      const header = first ? 4 : 5;
      if (buffered.length < header) return;
      const length = first ? buffered.readInt32BE(0) : buffered.readInt32BE(1) + 1;
      if (buffered.length < length) return;
      const frame = buffered.subarray(0, length);
      buffered = buffered.subarray(length);
      const type = first ? '' : String.fromCharCode(frame[0]!);
      first = false;
      onFrame(frame, type);
    }
  });
}

/** The SQL of a simple Query ('Q': the text) or a Parse ('P': a statement name, then the text). */
function statementOf(frame: Buffer, type: string): string {
  const body = frame.subarray(5);
  if (type === 'Q') return body.subarray(0, body.indexOf(0)).toString('utf8');
  const nameEnd = body.indexOf(0);
  const rest = body.subarray(nameEnd + 1);
  return rest.subarray(0, rest.indexOf(0)).toString('utf8');
}
