import { connect, createServer } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';
import { DataApiErrorResponse, GatewayError } from '../data-api/errors.js';
import { Faults } from '../data-api/faults.js';
import type { FaultCall } from '../data-api/faults.js';
import { Stats } from '../data-api/stats.js';
import type { Operation } from '../data-api/stats.js';

/**
 * A TCP proxy between node-postgres and PostgreSQL that reads the wire protocol's framing, so that the
 * wire transport meets the same faults as the Data API transport, at the socket: the same {@link Faults}
 * (latency, lost answers, calls refused without running) and the same {@link Stats} (calls per
 * operation, named as the Data API names them: BEGIN is BeginTransaction, COMMIT CommitTransaction,
 * ROLLBACK RollbackTransaction, every other statement ExecuteStatement). And the wire's own: a socket that
 * goes silent (a Lambda frozen while RDS Proxy closed its connection), every connection dropped (a
 * failover, a restart). Loopback only.
 *
 * - `serverError` answers the statement with a PostgreSQL error without sending it on (SQLSTATE 53300,
 *   which the wire transport classifies as unavailable, as the Data API's 5xx); `status: 502` closes the
 *   connection instead (a connection lost before the call ran: ambiguous to the client, as a 502).
 * - `dropResponse` sends the statement on, lets it run, swallows its answer and closes the connection.
 * - `autoPause` holds statements outside a transaction until the instance has resumed, as RDS Proxy
 *   holds them while Aurora resumes (the wire has no DatabaseResumingException).
 */
export interface WireProxy {
  /** The database URL through the proxy. */
  readonly url: string;
  readonly faults: Faults;
  readonly stats: Stats;
  /** Every open connection goes silent: nothing passes either way and nothing is closed. */
  silenceOpenConnections(): void;
  /** Every open connection is closed at once, client and server sides. */
  killAll(): void;
  /** Statements seen, in order (simple queries and Parse messages). */
  readonly statements: string[];
  close(): Promise<void>;
}

interface Pipe {
  /** The connection's number, naming its transaction for the faults. */
  readonly id: number;
  readonly client: Socket;
  readonly server: Socket;
  silent: boolean;
  /** What happens to the server's answers: passed on, or swallowed up to ReadyForQuery, then closed. */
  answers: 'pass' | 'drop';
  /** What happens to the client's messages of the current extended-protocol statement, up to Sync. */
  messages: 'forward' | 'refuse';
  /** The transaction status of the last ReadyForQuery: I idle, T in a transaction, E failed. */
  status: string;
  /** Client messages in order: a delayed statement holds back the ones after it. */
  queue: Promise<void>;
}

export async function startWireProxy(databaseUrl: string): Promise<WireProxy> {
  const target = new URL(databaseUrl);
  const pipes = new Set<Pipe>();
  const faults = new Faults();
  const stats = new Stats();
  const statements: string[] = [];
  let connections = 0;

  const server: Server = createServer((client) => {
    const upstream = connect(Number(target.port || 5432), target.hostname);
    // Small protocol messages, one round trip each: Nagle's algorithm would hold each for a delayed ACK.
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    const pipe: Pipe = { id: ++connections, client, server: upstream, silent: false, answers: 'pass', messages: 'forward', status: 'I', queue: Promise.resolve() };
    pipes.add(pipe);
    const end = () => {
      pipes.delete(pipe);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);

    let started = false;
    frames(client, true, (frame, type) => {
      pipe.queue = pipe.queue.then(async () => {
        if (pipe.silent || client.destroyed) return;
        if (!started) {
          started = true;
        } else if (type === 'Q' || type === 'P') {
          const sql = statementOf(frame, type);
          statements.push(sql);
          const operation = operationOf(sql);
          stats.count(operation);
          const inTransaction = pipe.status !== 'I' || operation === 'CommitTransaction' || operation === 'RollbackTransaction';
          const delay = faults.delayFor(operation);
          if (delay > 0) await sleep(delay);
          // The connection stands for the transaction: the faults only ask whether there is one.
          const call: FaultCall = { operation, sql, transactionId: inTransaction ? `wire-${pipe.id}` : undefined };
          faults.seen(call);
          const failure = faults.failureFor(call);
          if (failure instanceof DataApiErrorResponse && failure.type === 'DatabaseResumingException') {
            // RDS Proxy holds the statement while Aurora resumes: ask again until the fault says it resumed.
            while (resuming(faults.failureFor(call))) await sleep(25);
          } else if (failure) {
            if (failure instanceof GatewayError) return end();
            if (type === 'Q') return refuse(pipe);
            pipe.messages = 'refuse';
            return;
          }
          pipe.messages = 'forward';
          if (faults.dropsResponse(call)) pipe.answers = 'drop';
        } else if (pipe.messages === 'refuse') {
          // The rest of a refused extended-protocol statement: swallowed, answered at its Sync.
          if (type === 'S') {
            pipe.messages = 'forward';
            refuse(pipe);
          }
          return;
        }
        upstream.write(frame);
      });
    });
    frames(upstream, false, (frame, type) => {
      if (pipe.silent) return;
      if (type === 'Z') pipe.status = String.fromCharCode(frame[5]!);
      if (pipe.answers === 'pass') {
        client.write(frame);
        return;
      }
      // The statement ran; its answer ends at ReadyForQuery. Lose it, and the connection with it.
      if (type === 'Z') end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const url = new URL(databaseUrl);
  url.hostname = '127.0.0.1';
  url.port = String(port);

  const closeAll = () => {
    for (const pipe of pipes) {
      pipe.client.destroy();
      pipe.server.destroy();
    }
    pipes.clear();
  };
  return {
    url: url.toString(),
    faults,
    stats,
    statements,
    silenceOpenConnections: () => {
      for (const pipe of pipes) pipe.silent = true;
    },
    killAll: closeAll,
    close: async () => {
      closeAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The Data API operation a statement stands for, so that calls are counted and faulted alike. */
function operationOf(sql: string): Operation {
  const word = /^\s*([A-Za-z]+)/.exec(sql)?.[1]?.toUpperCase();
  if (word === 'BEGIN' || word === 'START') return 'BeginTransaction';
  if (word === 'COMMIT' || word === 'END') return 'CommitTransaction';
  if (word === 'ROLLBACK' || word === 'ABORT') return 'RollbackTransaction';
  return 'ExecuteStatement';
}

/** Answers a statement that was not sent on: an ErrorResponse (53300, did not run), then ReadyForQuery. */
function refuse(pipe: Pipe): void {
  const fields = Buffer.concat(
    [
      ['S', 'ERROR'],
      ['V', 'ERROR'],
      ['C', '53300'],
      ['M', 'Injected fault: the database was unavailable; the statement did not run'],
    ].map(([code, value]) => Buffer.concat([Buffer.from(code!), Buffer.from(value!), Buffer.from([0])])),
  );
  const body = Buffer.concat([fields, Buffer.from([0])]);
  const error = Buffer.alloc(5);
  error.write('E', 0);
  error.writeInt32BE(body.length + 4, 1);
  // A real server would now be in a failed transaction; an idle one stays idle.
  const ready = Buffer.from([0x5a, 0, 0, 0, 5, (pipe.status === 'I' ? 'I' : 'E').charCodeAt(0)]);
  pipe.client.write(Buffer.concat([error, body, ready]));
}

const resuming = (failure: unknown) => failure instanceof DataApiErrorResponse && failure.type === 'DatabaseResumingException';
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Calls `onFrame` with each whole protocol message arriving on `socket`: a type byte and an int32 length
 * (which counts itself), except the client's first message (startup), which has no type.
 */
function frames(socket: Socket, fromClient: boolean, onFrame: (frame: Buffer, type: string) => void): void {
  let buffered = Buffer.alloc(0);
  let first = fromClient;
  socket.on('data', (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    for (;;) {
      const header = first ? 4 : 5;
      if (buffered.length < header) return;
      const length = first ? buffered.readInt32BE(0) : buffered.readInt32BE(1) + 1;
      if (buffered.length < length) return;
      const frame = Buffer.from(buffered.subarray(0, length));
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
  const rest = body.subarray(body.indexOf(0) + 1);
  return rest.subarray(0, rest.indexOf(0)).toString('utf8');
}
