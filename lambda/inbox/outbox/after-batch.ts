import type { InboxSession } from '../transport/session.js';
import type { InboxTables } from '../sql/schema.js';
import { errorFields } from '../telemetry/telemetry.js';
import type { InboxLogger } from '../telemetry/telemetry.js';
import { relayRows } from './relay.js';
import type { OutboxTransport, RelayReport } from './relay.js';

/** Where an invocation's outbox rows are sent from: its session and tables, the outbox's transport, and the log that says what was left. */
export interface AfterBatchRelay {
  readonly session: InboxSession;
  readonly tables: InboxTables;
  readonly transport: OutboxTransport;
  readonly logger: InboxLogger;
}

/**
 * Sends the rows `ids` that an invocation's committed transactions wrote, and marks them sent, when time is
 * left. Never throws: the records committed, so they succeed whatever happens here; what is not sent stays
 * for the sweeper, and the logger says so.
 */
export async function relayAfterBatch(
  { session, tables, transport, logger }: AfterBatchRelay,
  ids: readonly number[],
  timeLeft: boolean,
): Promise<RelayReport> {
  if (!timeLeft) return { sent: 0, deferred: ids.length };
  try {
    const report = await relayRows(session, tables, transport, ids);
    if (report.deferred > 0) logger.warn('outbox messages left for the sweeper', { deferred: report.deferred });
    return report;
  } catch (error) {
    logger.warn('the outbox relay failed; the sweeper sends its messages', { error: errorFields(error) });
    return { sent: 0, deferred: ids.length };
  }
}
