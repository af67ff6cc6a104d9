import { InboxConfigError } from '../errors.js';
import { described } from '../handler/option-checks.js';
import type { InboxSession, SessionPolicy } from './session.js';

/**
 * A transport: the inbox's way to one kind of database, as `inbox({ database })` takes it. Made by
 * `dataApi()` (the default), `postgres(pool)` or `dsql({...})`; what the runtime reads from it is
 * internal (`TransportDriver`), so that the public surface shows no session.
 */
export interface InboxTransport {
  /** The transport's name, for messages: `data-api`, `postgres`, `dsql`. */
  readonly name: string;
}

/**
 * What a transport implements, as a kysely dialect does. The handler, the modes, parking and the outbox
 * know only this and `InboxSession`; each transport is a folder beside this file (`data-api/`,
 * `postgres/`, `dsql/`) that owns its client, its client checks, its request limits and its dialect.
 */
export interface TransportDriver extends InboxTransport {
  /**
   * The session one invocation runs on. The first call settles what the transport takes from the INBOX_*
   * environment, so that a handler module imports cleanly without it (a test, a tool); a setting that is
   * missing or wrong throws `InboxConfigError` naming the variable.
   */
  open(policy: SessionPolicy): InboxSession;
  /**
   * Refuses, at the first invocation, a client that breaks the guarantee when the records run in
   * transactions (`transactional`): the Data API's SDK client that retries a statement whose answer was
   * lost. Absent: the transport's client has nothing to check.
   */
  checkClient?(transactional: boolean): Promise<void>;
}

/**
 * The driver behind a transport. Every `InboxTransport` is made by one of the package's factories, which
 * all return a driver; `inbox()` checks a `database` it is given (options.ts `checkTransport`).
 */
export function driverOf(transport: InboxTransport): TransportDriver {
  return transport as TransportDriver;
}

/** How a script's session waits (`migrate(postgres(pool))`): long calls, and an auto-paused Aurora waited out (about 15 s). */
export const SCRIPT_POLICY: SessionPolicy = { callTimeoutMs: 60_000, resumeDelaysMs: [1000, 2000, 4000, 8000, 10_000, 10_000] };

/**
 * The session a script gave, or one opened on the transport it gave, with {@link SCRIPT_POLICY}. Anything
 * else (a pg Pool, a connection string, nothing) is refused naming the transports, not left to fail as a
 * TypeError deep inside.
 *
 * @param option - the option's name in the message: `database`, `session`
 */
export function sessionOf(database: InboxTransport, option = 'database'): InboxSession {
  if (typeof (database as Partial<InboxSession> | undefined)?.execute === 'function') return database as InboxSession;
  if (typeof (database as Partial<TransportDriver> | undefined)?.open === 'function') return driverOf(database as InboxTransport).open(SCRIPT_POLICY);
  throw new InboxConfigError(
    option,
    `must be a transport: dataApi({ ... }) from sqs-inbox, postgres(pool) from sqs-inbox/postgres, or dsql({ ... }) from sqs-inbox/dsql; got ${described(database)}`,
  );
}
