import { it } from 'vitest';
import { TRANSPORT } from './transport.js';
import type { InboxFixture } from './inbox.js';

/**
 * What the `dsql-conflicts` project runs: the core correctness suites on the DSQL profile with 10% of
 * COMMITs (and autocommit writes) failing with DSQL's OC000 conflict, and what of them it leaves out, each
 * with its reason, in this one place. test/inbox/transport/suite-coverage.test.ts checks it against the files.
 */

/** The share of COMMITs the project fails with a conflict (`INBOX_TEST_DSQL_CONFLICT_RATE`). */
export const DSQL_CONFLICT_RATE = 0.1;

/**
 * The retry policy of every `dsql()` target the fixture makes when conflicts are on: waits of a few
 * milliseconds, so the project stays fast, and 8 retries, so that a transaction runs out of them at 10%
 * conflicts once in 10^9 runs, not once in 10^4 as with DSQL_CONFLICT_RETRIES' 3 (a suite of a few
 * thousand transactions would otherwise fail a record now and then, and a test expecting none would flake).
 * Running out is tested on its own, at 100%, in test/inbox/transport/dsql.test.ts.
 */
export const CONFLICT_RUN_RETRIES = { attempts: 8, baseDelayMs: 1, maxDelayMs: 4 } as const;

/** The suites, by what they prove: each must end with 0 double and 0 lost effects under conflicts. */
export const DSQL_CONFLICT_FILES: Readonly<Record<string, string>> = {
  'test/inbox/batch-modes.test.ts': 'modes: the batch modes, their sets, fallbacks and replays',
  'test/inbox/fifo.test.ts': "FIFO: a group's order and its short-circuit",
  'test/inbox/races.test.ts': 'races: concurrent deliveries of one message, one winner',
  'test/inbox/parked.test.ts': 'replay: parking a poison message, and replaying it once fixed',
  'test/inbox/parked-redrive.test.ts': 'replay: parked messages redriven and discarded',
  'test/inbox/faults.test.ts': 'faults: lost answers, failovers and timeouts, with conflicts on top',
  'test/inbox/outbox.test.ts': 'outbox: rows written with the effect, relayed and swept',
  'test/inbox/purge.test.ts': 'purge: old claims deleted in bounded batches',
};

/**
 * Tests of {@link DSQL_CONFLICT_FILES}, by file and name, whose assertion cannot hold when a commit may fail
 * with a conflict, each with the reason; reported skipped in the `dsql-conflicts` project only.
 */
export const NOT_UNDER_CONFLICTS: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  'test/inbox/outbox.test.ts': {
    'sends what the committed transaction wrote, after the commit, under a key derived from the message key and position':
      "counts one record's calls and its relay's exactly (7), and a conflict costs 5 at the record's COMMIT but 1 at the relay's mark, " +
      'which the count cannot tell apart; its other assertions (sent once, under the derived key) hold in the outbox tests that run',
  },
};

/** True in the `dsql-conflicts` project. */
export const UNDER_CONFLICTS = TRANSPORT === 'dsql' && Number(process.env.INBOX_TEST_DSQL_CONFLICT_RATE ?? 0) > 0;

/**
 * `it`, for a test listed in {@link NOT_UNDER_CONFLICTS}: it runs everywhere but under injected conflicts. A
 * name that is not listed is refused, so nothing is skipped without its reason.
 */
export function notUnderConflicts(file: string, name: string, test: () => Promise<void>, timeout?: number): void {
  if (NOT_UNDER_CONFLICTS[file]?.[name] === undefined) {
    throw new Error(`notUnderConflicts("${file}", "${name}"): list it, with its reason, in NOT_UNDER_CONFLICTS (test/support/dsql-conflicts.ts).`);
  }
  it.skipIf(UNDER_CONFLICTS)(name, test, timeout);
}

/**
 * A count of calls stated for every project: `calls`, and `perConflict` more for each conflict the DSQL
 * profile injected since the server's stats were reset. A conflict fails one run of one transaction (at
 * COMMIT, or an autocommit write), which runs again whole, and costs nothing else; off the conflicts project
 * none is injected and the count is `calls`, exactly as before.
 *
 * @example
 * expect(db.server.stats.total()).toBe(withConflicts(db, 40, 4)); // Begin, claim, effect, Commit again per conflict
 */
export function withConflicts(db: Pick<InboxFixture, 'conflictsInjected'>, calls: number, perConflict: number): number {
  return calls + db.conflictsInjected() * perConflict;
}

/**
 * For an effect that counts its own runs: the runs a conflict rolled back, for one handler's target. Call
 * `ran(n)` in the effect and give `onConflict` to the target (`db.instance({ onConflict })`): the runs since the
 * last conflict are the ones it rolled back. The effect then ran `committed + rolledBack` times, exactly.
 */
export function rolledBackRuns(): { ran(n?: number): void; readonly onConflict: () => void; readonly rolledBack: number } {
  let pending = 0;
  let rolledBack = 0;
  return {
    ran: (n = 1) => {
      pending += n;
    },
    onConflict: () => {
      rolledBack += pending;
      pending = 0;
    },
    get rolledBack() {
      return rolledBack;
    },
  };
}

/** The run's files and what it leaves out, as lines: what the `dsql-conflicts` project prints before it runs. */
export function describeConflictRun(): string {
  const left = Object.entries(NOT_UNDER_CONFLICTS).flatMap(([file, names]) => Object.entries(names).map(([name, why]) => `  ${file} > ${name}\n      ${why}`));
  return [
    `dsql-conflicts project: ${Object.keys(DSQL_CONFLICT_FILES).length} suites on the DSQL profile at ${DSQL_CONFLICT_RATE * 100}% conflicts:`,
    ...Object.entries(DSQL_CONFLICT_FILES).map(([file, what]) => `  ${file} (${what})`),
    `${left.length} tests reported skipped under conflicts:`,
    ...left,
  ].join('\n');
}
