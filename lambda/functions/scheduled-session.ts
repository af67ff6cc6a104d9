import { DataApiSession } from '../inbox/transport/data-api/session.js';
import { resolveTarget } from '../inbox/transport/data-api/transport.js';
import type { InboxSession } from '../inbox/transport/session.js';

/** One database call of a scheduled function (the purge, the outbox sweeper) may take this long. */
export const CALL_TIMEOUT_MS = 30_000;

/** How a scheduled function reaches its database, from its environment. */
export type ScheduledSession = (env: NodeJS.ProcessEnv) => InboxSession;

/**
 * The scheduled functions' session through the Data API, from INBOX_RESOURCE_ARN, INBOX_SECRET_ARN and
 * INBOX_DATABASE, waiting out an Aurora resume.
 */
export const dataApiSession: ScheduledSession = (env) =>
  new DataApiSession(resolveTarget({}, env), { callTimeoutMs: CALL_TIMEOUT_MS, resumeDelaysMs: [1000, 2000, 4000, 8000, 10_000] });
