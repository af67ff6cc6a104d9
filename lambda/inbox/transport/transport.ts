import type { InboxSession, SessionPolicy } from './session.js';

/**
 * What a transport implements, as a kysely dialect does: the inbox's way to one kind of database. The
 * handler, the modes, parking and the outbox know only this and `InboxSession`; each transport is a
 * folder beside this file (`data-api/`, `postgres/`, `dsql/`) that owns its client, its client checks, its
 * request limits and its dialect. `inbox({ database })` takes one; without it, `dataApi()`.
 */
export interface InboxTransport {
  /** The transport's name, for messages: `data-api`, `postgres`, `dsql`. */
  readonly name: string;
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
