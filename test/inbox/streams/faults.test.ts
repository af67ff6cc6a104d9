import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { InboxError } from '../../../lambda/inbox/index.js';
import type { ConsumerOptions } from '../../../lambda/inbox/index.js';
import { inboxFixture, recordingLogger, recordingMetrics } from '../../support/inbox.js';
import type { InboxFixture } from '../../support/inbox.js';
import { expectNoOpenTransaction, onTransport } from '../../support/transport.js';
import {
  EFFECTS_DDL,
  STREAM_SOURCES,
  effectOptions,
  effectsByLane,
  laneIds,
  nextDelivery,
  restarts,
  skippedUncommitted,
} from '../../support/stream-sources.js';
import type { Mode, Report, StreamItem, StreamSource } from '../../support/stream-sources.js';

// The SQS fault matrix, on each stream source. Every fault is injected through the local Data API server;
// the SDK and PostgreSQL are real. The batch: three records t1, t2, t3 of the target lane (for Kafka,
// after a lane of two records that runs first), one lane at a time; the fault hits t2. Then Lambda
// delivers again from the reported restart point, with the fault gone, until nothing fails.

let db: InboxFixture;
beforeAll(async () => {
  db = await inboxFixture('stream_faults', { transactionIdleTimeoutMs: 300 });
  await db.query(EFFECTS_DDL);
});
afterAll(async () => db.close());
beforeEach(() => db.server.faults.clear());

const CLAIM_SQL = (sql: string) => sql.includes('RETURNING true AS claimed');
const EFFECT_SQL = (sql: string) => sql.includes('public.stream_effects');
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * When the fault is armed: before the invocation; after t1's effect (so the next Begin, claim or effect
 * statement is t2's, one lane running at a time); or after t2's effect, inside its transaction (so the
 * next commit is t2's). An arm that throws is the effect's throw.
 */
type Stage = 'start' | 'before-t2' | 'in-t2';

interface Fault {
  readonly fault: string;
  readonly stage: Stage;
  readonly arm: () => void | Promise<void>;
  /** Whether t2 does not succeed at its first delivery. */
  readonly firstFails: boolean;
  /** Whether t2's effect committed at its first delivery (a commit whose answer was lost). */
  readonly committed: boolean;
  /** How the first delivery's failure of t2 is logged, where that pins the fault's class. */
  readonly failure?: RegExp;
  /** A transaction the client cannot end stays open until the idle expiry. */
  readonly leavesTransaction?: boolean;
  readonly options?: Partial<ConsumerOptions<any, any>>;
  /** Whether the fault, hitting the batch modes' one transaction, loses the whole set (see SET_MATRIX). */
  readonly losesSet?: boolean;
}

const MATRIX: readonly Fault[] = [
  {
    fault: '5xx before the claim (BeginTransaction unavailable)',
    stage: 'before-t2',
    arm: () => db.server.faults.serverError({ count: 1, operation: 'BeginTransaction', status: 503 }),
    firstFails: true,
    committed: false,
  },
  // The lost answer reaches the client as a reset connection, and a BeginTransaction is safe to send again:
  // t2 runs in a second transaction; the first, never used, stays open until the idle expiry.
  {
    fault: 'BeginTransaction answer lost (the transaction opened, its id never arrives)',
    stage: 'before-t2',
    arm: () => db.server.faults.dropResponse({ operation: 'BeginTransaction' }),
    firstFails: false,
    committed: true,
    leavesTransaction: true,
  },
  {
    fault: 'throw after the claim (the claim statement answers 500)',
    stage: 'before-t2',
    arm: () => db.server.faults.serverError({ count: 1, operation: 'ExecuteStatement', status: 500 }),
    firstFails: true,
    committed: false,
  },
  {
    fault: 'claim executed, its answer lost',
    stage: 'before-t2',
    arm: () => db.server.faults.dropResponse({ operation: 'ExecuteStatement', match: CLAIM_SQL }),
    firstFails: true,
    committed: false,
  },
  {
    fault: 'crash inside the transaction (answer of the effect statement lost)',
    stage: 'before-t2',
    arm: () => db.server.faults.dropResponse({ operation: 'ExecuteStatement', match: EFFECT_SQL }),
    losesSet: true,
    firstFails: true,
    committed: false,
  },
  {
    fault: 'the function throws after the effect',
    stage: 'in-t2',
    arm: () => {
      throw new Error('crash after the effect');
    },
    firstFails: true,
    committed: false,
  },
  {
    fault: 'the rollback after a throw fails too: the claim stays locked until the idle expiry',
    stage: 'in-t2',
    arm: () => {
      db.server.faults.serverError({ count: 1, operation: 'RollbackTransaction', status: 503 });
      throw new Error('crash after the effect');
    },
    firstFails: true,
    committed: false,
    leavesTransaction: true,
  },
  {
    fault: 'commit refused (5xx, not executed)',
    stage: 'in-t2',
    arm: () => db.server.faults.serverError({ count: 1, operation: 'CommitTransaction', status: 500 }),
    losesSet: true,
    firstFails: true,
    committed: false,
    failure: /CommitTransaction failed \(unavailable, outcome unknown\)/,
  },
  {
    fault: 'commit fails with a network error (502 with no error type, not executed)',
    stage: 'in-t2',
    arm: () => db.server.faults.serverError({ count: 1, operation: 'CommitTransaction', status: 502 }),
    losesSet: true,
    firstFails: true,
    committed: false,
    failure: /CommitTransaction failed \(network, outcome unknown\)/,
  },
  {
    fault: 'commit executed, the connection closed before its answer',
    stage: 'in-t2',
    arm: () => db.server.faults.dropResponse({ operation: 'CommitTransaction' }),
    losesSet: true,
    firstFails: true,
    committed: true,
    failure: /CommitTransaction failed \((network|timeout), outcome unknown\)/,
  },
  {
    fault: 'commit times out (no answer within callTimeoutMs)',
    stage: 'in-t2',
    arm: () => db.server.faults.latency({ ms: 2_500, operation: 'CommitTransaction' }),
    firstFails: true,
    committed: false,
    // On the wire the COMMIT, held on its way, reaches PostgreSQL after the transaction's idle expiry
    // (300 ms): the server ends the transaction and says so before the client's timeout, so the outcome is
    // known, not committed. (A COMMIT whose answer is lost: test/inbox/transport/wire-faults.test.ts.)
    failure: onTransport({
      'data-api': /CommitTransaction failed \(timeout, outcome unknown\)/,
      wire: /CommitTransaction failed \(transaction-not-found\): terminating connection due to idle-in-transaction timeout/,
    }),
    options: { callTimeoutMs: 1_000 },
  },
  { fault: 'transaction idle expiry: the effect outlives its transaction', stage: 'in-t2', arm: () => sleep(700), firstFails: true, committed: false },
  {
    fault: 'auto-pause: Aurora resuming for 300 ms',
    stage: 'before-t2',
    arm: () => db.server.faults.autoPause({ resumeAfterMs: 300 }),
    firstFails: false,
    committed: true,
  },
  { fault: 'latency on every call', stage: 'start', arm: () => db.server.faults.latency({ ms: 30 }), firstFails: false, committed: true },
];

/**
 * The faults that lose the batch modes' one transaction, whose outcome is then unknown: every record of
 * the set fails, and each lane restarts at its first record. (A commit timeout takes the same path as a
 * refused commit: an ambiguous DataApiError; the per-record matrix times it.)
 */
const SET_MATRIX: readonly Fault[] = MATRIX.filter((fault) => fault.losesSet).map((fault) => ({
  ...fault,
  // In a set the next effect statement after t2's is t3's: the set's transaction is lost all the same.
  stage: 'in-t2' as const,
}));

async function openTransactions(): Promise<number> {
  const rows = await db.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'");
  return rows[0]!.n as number;
}

async function committedIds(consumer: string): Promise<Set<string>> {
  return new Set(Object.values(await effectsByLane(db.query, consumer)).flat());
}

let run = 0;

/** Builds the batch and a handler whose t2 meets the fault once; returns them with the records by name. */
function arrange(source: StreamSource, mode: Mode, fault: Fault) {
  const consumer = `faults-${run++}`;
  const [other, lane] = source.lanes.length > 1 ? [source.lanes[0]!, source.lanes[1]!] : [undefined, source.lanes[0]!];
  const items = source.build([
    ...(other
      ? [
          { lane: other, n: 1 },
          { lane: other, n: 2 },
        ]
      : []),
    { lane, n: 1 },
    { lane, n: 2 },
    { lane, n: 3 },
  ]);
  const [t1, t2] = items.filter((item) => item.lane === lane) as [StreamItem, StreamItem, StreamItem];
  let armed = false;
  const arm = async (stage: Stage) => {
    if (armed || fault.stage !== stage) return;
    armed = true;
    await fault.arm();
  };
  const logger = recordingLogger();
  const instance = () =>
    source.handler({
      consumer,
      database: db.target,
      logger,
      metrics: recordingMetrics(),
      concurrency: 1,
      resumeDelaysMs: [50, 100, 200, 400, 800],
      ...fault.options,
      ...effectOptions(mode, source, consumer, {
        after: async (message) => {
          if (message.id === t1.id) await arm('before-t2');
          if (message.id === t2.id) await arm('in-t2');
        },
      }),
    });
  return { consumer, items, lane, t1, t2, handler: instance(), instance, logger, arm };
}

/** Delivers again from the restart points, the fault gone, until nothing fails; returns the reports. */
async function redeliver(handler: (items: readonly StreamItem[]) => Promise<Report>, items: readonly StreamItem[], first: Report) {
  db.server.faults.clear();
  const reports: Report[] = [];
  let delivery = nextDelivery(items, first);
  while (delivery.length > 0) {
    expect(reports.length).toBeLessThan(3);
    const report = await handler(delivery);
    reports.push(report);
    delivery = nextDelivery(delivery, report);
  }
  return reports;
}

async function assertExactlyOnce(consumer: string, items: readonly StreamItem[]) {
  // Never lost, never applied twice, each lane in order; one claim per record.
  expect(await effectsByLane(db.query, consumer)).toEqual(laneIds(items));
  const claims = await db.query('SELECT count(*)::int AS n FROM inbox.consumed_message WHERE consumer_name = $1', [consumer]);
  expect(claims[0]!.n).toBe(items.length);
}

describe.each(STREAM_SOURCES)('stream fault matrix, $name: the record is the restart point, its effect applied exactly once after the retry', (source) => {
  it.each(MATRIX)('$fault', async (fault) => {
    const { consumer, items, lane, t1, t2, handler, instance, logger, arm } = arrange(source, 'apply', fault);
    await arm('start');

    const first = await handler(items);

    const expected = fault.firstFails ? (source.partial ? { [lane]: t2.id } : 'whole') : {};
    expect(restarts(first)).toEqual(expected);
    if (first.kind === 'whole') expect(first.error).toBeInstanceOf(InboxError);
    // The other lane ran whole; the target lane stopped at t2, which committed only when the commit did.
    const done = items.filter((item) => item.lane !== lane || !fault.firstFails || item === t1 || (item === t2 && fault.committed));
    expect(await effectsByLane(db.query, consumer)).toEqual(laneIds(items, new Set(done.map((item) => item.id))));
    const committed = await committedIds(consumer);
    expect(skippedUncommitted(items, first, committed)).toEqual([]);
    if (!fault.leavesTransaction) await expectNoOpenTransaction(openTransactions);
    if (fault.failure) expect(JSON.stringify(logger.lines.find((line) => line.message.startsWith('record failed')))).toMatch(fault.failure);

    // Another instance takes the retry: it met none of the keys, so each record's claim decides.
    const retries = await redeliver(instance(), items, first);

    if (fault.firstFails) expect(retries.map(restarts)).toEqual([{}]);
    await assertExactlyOnce(consumer, items);
    // What the client could not end, the idle expiry does; the next test starts without it.
    await expect.poll(openTransactions, { timeout: 5_000, interval: 50 }).toBe(0);
  });
});

describe.each(STREAM_SOURCES)('stream fault matrix in batch mode, $name: a lost set restarts every lane at its first record', (source) => {
  it.each(SET_MATRIX)('$fault', async (fault) => {
    const { consumer, items, handler } = arrange(source, 'applyBatch', fault);

    const first = await handler(items);

    // The set is one transaction: none of it, or (the commit answer lost) all of it, committed; either way
    // the outcome of each record is unknown, so each lane restarts at its first record.
    const firsts = Object.fromEntries(
      source.lanes.filter((lane) => items.some((item) => item.lane === lane)).map((lane) => [lane, items.find((item) => item.lane === lane)!.id]),
    );
    expect(restarts(first)).toEqual(source.partial ? firsts : 'whole');
    expect(await effectsByLane(db.query, consumer)).toEqual(fault.committed ? laneIds(items) : {});
    await expectNoOpenTransaction(openTransactions);

    // The same warm instance takes the retry: it looks the keys it met up first.
    const retries = await redeliver(handler, items, first);

    expect(retries.map(restarts)).toEqual([{}]);
    await assertExactlyOnce(consumer, items);
  });
});
