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
 * - `slowStatement` first runs `SELECT pg_sleep(...)` on the statement's own server connection, as the
 *   local Data API server does: the statement's `statement_timeout` cancels it, and the statement then
 *   fails with that error without running.
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
  /**
   * While true, every new connection is closed as soon as it is made, before PostgreSQL sees it (the
   * server restarting, a failover's new writer not up yet); open connections are not touched.
   */
  refuseConnections(refuse: boolean): void;
  /** Statements seen, in order (simple queries and Parse messages). */
  readonly statements: string[];
  /**
   * Tells `listener` of each Bind's parameter values (text, `null` for NULL; a binary value as its bytes
   * read as UTF-8) and the connection that sent it, until the returned function is called: the faults'
   * watchers see a statement at its Parse, before its values arrive.
   */
  watchParameters(listener: (connection: number, values: readonly (string | null)[]) => void): () => void;
  /**
   * Serialization failures injected at COMMIT: each COMMIT (a simple query) fails with `rate`'s
   * probability, as an optimistic-concurrency database fails a conflicting transaction. The proxy sends
   * ROLLBACK in its place, so the transaction is really rolled back, and answers the client with
   * `error` (SQLSTATE 40001 unless it says otherwise). An autocommit write (its own transaction) fails
   * likewise, refused without running. `injected` counts them.
   */
  readonly conflicts: { rate: number; random: () => number; error: WireRefusal; injected: number };
  /**
   * Decides, for each statement, whether it is refused without being sent on (a database that does not
   * support it); `undefined` lets it through. Refusals are counted in `refused`.
   */
  refuseWhen(check: ((sql: string, context: WireStatementContext) => WireRefusal | undefined) | undefined): void;
  /**
   * Rewrites each statement (a simple query or a Parse) before it is sent on (a dialect's spelling PostgreSQL does not
   * take, e.g. DSQL's CREATE INDEX ASYNC); the checks and counts see the original.
   */
  rewriteWith(rewrite: ((sql: string) => string) | undefined): void;
  /**
   * The next `count` connections are refused at startup with `refusal`, before any statement (a server
   * refusing connections for their rate or number: DSQL's 53400 and 53300).
   */
  readonly connectionRefusals: { count: number; refusal: WireRefusal; refused: number };
  /** The statements refused by the {@link refuseWhen} check, with its answer. */
  readonly refused: { readonly sql: string; readonly refusal: WireRefusal }[];
  close(): Promise<void>;
}

/** Where a statement arrives: its connection, and whether that connection is inside a transaction. */
export interface WireStatementContext {
  readonly connection: number;
  readonly inTransaction: boolean;
}

/** A PostgreSQL error answer the proxy gives in the server's place. */
export interface WireRefusal {
  readonly sqlState: string;
  readonly message: string;
}

interface Pipe {
  /** The connection's number, naming its transaction for the faults. */
  readonly id: number;
  readonly client: Socket;
  readonly server: Socket;
  silent: boolean;
  /**
   * What happens to the server's answers: passed on, swallowed up to ReadyForQuery and the connection
   * closed, or swallowed up to ReadyForQuery and replaced by an error answer.
   */
  answers: 'pass' | 'drop' | WireRefusal;
  /** What happens to the client's messages of the current extended-protocol statement, up to Sync. */
  messages: 'forward' | 'refuse';
  /**
   * The answer a refused extended-protocol statement gets at its Sync (the fault's 53300 when unset), or
   * the ErrorResponse a slowed statement met (its statement_timeout).
   */
  refusal?: WireRefusal | Buffer | undefined;
  /** Takes the server's answers instead of the client, while the proxy runs a statement of its own. */
  intercept?: ((frame: Buffer, type: string) => void) | undefined;
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
  const conflicts = {
    rate: 0,
    random: Math.random,
    error: { sqlState: '40001', message: 'could not serialize access due to concurrent update (injected)' },
    injected: 0,
  };
  let check: ((sql: string, context: WireStatementContext) => WireRefusal | undefined) | undefined;
  let rewrite: ((sql: string) => string) | undefined;
  const connectionRefusals = { count: 0, refusal: UNAVAILABLE, refused: 0 };
  const refused: { sql: string; refusal: WireRefusal }[] = [];
  let connections = 0;
  let refusing = false;
  const parameterWatchers = new Set<(connection: number, values: readonly (string | null)[]) => void>();

  const server: Server = createServer((client) => {
    if (refusing) {
      client.destroy();
      return;
    }
    const upstream = connect(Number(target.port || 5432), target.hostname);
    // Small protocol messages, one round trip each: Nagle's algorithm would hold each for a delayed ACK.
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    const pipe: Pipe = {
      id: ++connections,
      client,
      server: upstream,
      silent: false,
      answers: 'pass',
      messages: 'forward',
      status: 'I',
      queue: Promise.resolve(),
    };
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
          if (connectionRefusals.count > 0) {
            connectionRefusals.count--;
            connectionRefusals.refused++;
            client.end(errorResponse(connectionRefusals.refusal));
            upstream.destroy();
            return;
          }
        } else if (type === 'Q' || type === 'P') {
          const sql = statementOf(frame, type);
          statements.push(sql);
          const operation = operationOf(sql);
          stats.count(operation);
          const refusal = check?.(sql, { connection: pipe.id, inTransaction: pipe.status !== 'I' });
          if (refusal) {
            refused.push({ sql, refusal });
            if (type === 'Q') return refuse(pipe, refusal);
            pipe.messages = 'refuse';
            pipe.refusal = refusal;
            return;
          }
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
          if (pipe.status === 'I' && operation === 'ExecuteStatement' && WRITES.test(sql) && conflicts.rate > 0 && conflicts.random() < conflicts.rate) {
            // An autocommit write that conflicts takes no effect: refused without running, with the conflict's answer.
            conflicts.injected++;
            if (type === 'Q') return refuse(pipe, conflicts.error);
            pipe.messages = 'refuse';
            pipe.refusal = conflicts.error;
            return;
          }
          // A slow statement: the time passes in PostgreSQL first, on this connection and in its transaction,
          // where statement_timeout cancels it like any other; cancelled, the statement fails with that error.
          const slowdown = faults.slowdownFor(operation, sql);
          if (slowdown > 0) {
            const failed = await sleepInDatabase(pipe, slowdown);
            if (failed) {
              if (type === 'Q') return refuse(pipe, failed);
              pipe.messages = 'refuse';
              pipe.refusal = failed;
              return;
            }
          }
          pipe.messages = 'forward';
          if (rewrite) {
            const rewritten = rewrite(sql);
            if (rewritten !== sql) frame = withStatement(frame, type, rewritten);
          }
          if (faults.dropsResponse(call)) pipe.answers = 'drop';
          else if (type === 'Q' && operation === 'CommitTransaction' && pipe.status === 'T' && conflicts.rate > 0 && conflicts.random() < conflicts.rate) {
            // The conflict: the transaction is rolled back at the server, and the client is told it failed.
            conflicts.injected++;
            pipe.answers = conflicts.error;
            upstream.write(simpleQuery('ROLLBACK'));
            return;
          }
        } else if (type === 'B' && pipe.messages === 'forward' && parameterWatchers.size > 0) {
          const values = bindValues(frame);
          for (const listener of parameterWatchers) listener(pipe.id, values);
        } else if (pipe.messages === 'refuse') {
          // The rest of a refused extended-protocol statement: swallowed, answered at its Sync.
          if (type === 'S') {
            pipe.messages = 'forward';
            refuse(pipe, pipe.refusal);
            pipe.refusal = undefined;
          }
          return;
        }
        upstream.write(frame);
      });
    });
    frames(upstream, false, (frame, type) => {
      if (pipe.silent) return;
      if (type === 'Z') pipe.status = String.fromCharCode(frame[5]!);
      if (pipe.intercept) return pipe.intercept(frame, type);
      if (pipe.answers === 'pass') {
        client.write(frame);
        return;
      }
      if (pipe.answers !== 'drop') {
        // A replaced answer: the server's is swallowed; at its ReadyForQuery the error goes out instead.
        if (type === 'Z') {
          refuse(pipe, pipe.answers, String.fromCharCode(frame[5]!));
          pipe.answers = 'pass';
        }
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
    conflicts,
    connectionRefusals,
    refused,
    watchParameters: (listener) => {
      parameterWatchers.add(listener);
      return () => parameterWatchers.delete(listener);
    },
    refuseWhen: (next) => {
      check = next;
    },
    rewriteWith: (next) => {
      rewrite = next;
    },
    silenceOpenConnections: () => {
      for (const pipe of pipes) pipe.silent = true;
    },
    killAll: closeAll,
    refuseConnections: (refuse) => {
      refusing = refuse;
    },
    close: async () => {
      closeAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A statement that may write: an autocommit one commits, so it can conflict. */
const WRITES = /^\s*(?:INSERT|UPDATE|DELETE|MERGE|WITH)\b/i;

/** The Data API operation a statement stands for, so that calls are counted and faulted alike. */
function operationOf(sql: string): Operation {
  const word = /^\s*([A-Za-z]+)/.exec(sql)?.[1]?.toUpperCase();
  if (word === 'BEGIN' || word === 'START') return 'BeginTransaction';
  if (word === 'COMMIT' || word === 'END') return 'CommitTransaction';
  if (word === 'ROLLBACK' || word === 'ABORT') return 'RollbackTransaction';
  return 'ExecuteStatement';
}

const UNAVAILABLE: WireRefusal = { sqlState: '53300', message: 'Injected fault: the database was unavailable; the statement did not run' };

/**
 * Answers a statement that was not sent on: an ErrorResponse (by default 53300, did not run), then
 * ReadyForQuery with `status`, or as a server would leave the transaction after an error.
 */
function refuse(pipe: Pipe, refusal: WireRefusal | Buffer = UNAVAILABLE, status?: string): void {
  // A real server would now be in a failed transaction; an idle one stays idle.
  const ready = Buffer.from([0x5a, 0, 0, 0, 5, (status ?? (pipe.status === 'I' ? 'I' : 'E')).charCodeAt(0)]);
  pipe.client.write(Buffer.concat([Buffer.isBuffer(refusal) ? refusal : errorResponse(refusal), ready]));
}

/**
 * Runs `SELECT pg_sleep(...)` on the pipe's server connection, its answers kept from the client; returns
 * the ErrorResponse it ended with (statement_timeout cancelled it), or undefined when it slept through.
 */
function sleepInDatabase(pipe: Pipe, ms: number): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    let error: Buffer | undefined;
    pipe.intercept = (frame, type) => {
      if (type === 'E') error = frame;
      if (type !== 'Z') return;
      pipe.intercept = undefined;
      resolve(error);
    };
    pipe.server.write(simpleQuery(`SELECT pg_sleep(${ms / 1000})`));
  });
}

/** A PostgreSQL ErrorResponse message. */
function errorResponse(refusal: WireRefusal): Buffer {
  const fields = Buffer.concat(
    [
      ['S', 'ERROR'],
      ['V', 'ERROR'],
      ['C', refusal.sqlState],
      ['M', refusal.message],
    ].map(([code, value]) => Buffer.concat([Buffer.from(code!), Buffer.from(value!), Buffer.from([0])])),
  );
  const body = Buffer.concat([fields, Buffer.from([0])]);
  const error = Buffer.alloc(5);
  error.write('E', 0);
  error.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([error, body]);
}

/** A simple Query message carrying `sql`. */
function simpleQuery(sql: string): Buffer {
  const text = Buffer.from(`${sql}\0`, 'utf8');
  const header = Buffer.alloc(5);
  header.write('Q', 0);
  header.writeInt32BE(text.length + 4, 1);
  return Buffer.concat([header, text]);
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

/** The same simple Query or Parse message, carrying `sql` in place of its statement. */
function withStatement(frame: Buffer, type: string, sql: string): Buffer {
  if (type === 'Q') return simpleQuery(sql);
  const body = frame.subarray(5);
  const nameEnd = body.indexOf(0);
  const queryEnd = body.indexOf(0, nameEnd + 1);
  const rebuilt = Buffer.concat([body.subarray(0, nameEnd + 1), Buffer.from(`${sql}\0`, 'utf8'), body.subarray(queryEnd + 1)]);
  const header = Buffer.alloc(5);
  header.write('P', 0);
  header.writeInt32BE(rebuilt.length + 4, 1);
  return Buffer.concat([header, rebuilt]);
}

/** The SQL of a simple Query ('Q': the text) or a Parse ('P': a statement name, then the text). */
function statementOf(frame: Buffer, type: string): string {
  const body = frame.subarray(5);
  if (type === 'Q') return body.subarray(0, body.indexOf(0)).toString('utf8');
  const rest = body.subarray(body.indexOf(0) + 1);
  return rest.subarray(0, rest.indexOf(0)).toString('utf8');
}

/**
 * A Bind's parameter values: after the portal's and the statement's names, the format codes (an int16
 * count, then int16 each), then an int16 count of values, each an int32 length (-1 for NULL) and its bytes.
 */
function bindValues(frame: Buffer): (string | null)[] {
  const portalEnd = frame.indexOf(0, 5);
  let at = frame.indexOf(0, portalEnd + 1) + 1;
  at += 2 + 2 * frame.readInt16BE(at);
  const count = frame.readInt16BE(at);
  at += 2;
  const values: (string | null)[] = [];
  for (let i = 0; i < count; i++) {
    const length = frame.readInt32BE(at);
    at += 4;
    values.push(length < 0 ? null : frame.toString('utf8', at, at + length));
    at += Math.max(0, length);
  }
  return values;
}
