import { setTimeout as sleep } from 'node:timers/promises';
import type { InboxSession } from '../../lambda/inbox/transport/session.js';
import type { OutboxTransport } from '../../lambda/inbox/outbox/relay.js';
import { sweepOutbox } from '../../lambda/inbox/outbox/sweep.js';

/** What the periodic sweeper did. */
export interface SweeperStats {
  /** Sweeps that ran to their end. */
  sweeps: number;
  /** Sweeps that failed (Aurora paused, a 5xx), at any of their statements: the next one tries again. */
  failed: number;
}

/** The outbox sweeper running on a schedule, as the scheduled function does on AWS. */
export interface PeriodicSweeper {
  readonly stats: SweeperStats;
  /** Stops the schedule and waits for a sweep in progress. */
  stop(): Promise<void>;
}

/**
 * Sweeps every `everyMs`, sending the unsent rows older than `minAgeMs`. On AWS it runs every minute on
 * rows older than a minute; the pipeline scales both down to its function timeout: a row older than that
 * was left by a handler that is done, or dead.
 */
export function startSweeper(session: InboxSession, transport: OutboxTransport, timing: { everyMs: number; minAgeMs: number }): PeriodicSweeper {
  const stats: SweeperStats = { sweeps: 0, failed: 0 };
  const stop = new AbortController();
  const loop = (async () => {
    while (!stop.signal.aborted) {
      try {
        await sweepOutbox(session, { transport, minAgeMs: timing.minAgeMs });
        stats.sweeps++;
      } catch {
        stats.failed++;
      }
      await sleep(timing.everyMs, undefined, { signal: stop.signal }).catch(() => {});
    }
  })();
  return {
    stats,
    stop: async () => {
      stop.abort();
      await loop;
    },
  };
}

/** Outbox rows not sent yet: the pipeline is not done while there is one. */
export async function unsentRows(session: InboxSession): Promise<number> {
  const { rows } = await session.execute('SELECT count(*)::int AS unsent FROM inbox.outbox_message WHERE sent_at IS NULL');
  return Number(rows[0]?.unsent ?? 0);
}
