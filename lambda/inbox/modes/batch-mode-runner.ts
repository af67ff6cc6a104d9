import { runBatch, succeeded } from '../lanes/lanes.js';
import type { BatchPlan, Outcome } from '../lanes/lanes.js';
import { sameHash } from '../sql/claim.js';
import type { InboxSession } from '../transport/session.js';
import { retryConflicts } from '../transport/conflicts.js';
import { DatabaseCallError, DataApiError } from '../errors.js';
import type { ResolvedOptions } from '../handler/options.js';
import type { PreparedRecord } from '../prepare/prepare.js';
import { fittingRuns } from '../transport/limits.js';
import type { InboxTables } from '../sql/schema.js';
import type { BatchTally, InboxLogger } from '../telemetry/telemetry.js';
import { commitOrRollBack, inboxTransaction } from './record-consumer.js';
import type { RecordConsumer } from './record-consumer.js';
import { claimSet, statementSet, statementSetFits } from './statement-set.js';
import type { SetMember } from './statement-set.js';

/** What one invocation's records run in: its session, its lanes' plan, and the tally its summary counts. */
export interface RunScope {
  readonly session: InboxSession;
  readonly plan: BatchPlan;
  readonly tally: BatchTally;
}

/** A batch's claim found what only a record alone can settle: a collision, or a claim it cannot compare. */
class SetFallback extends Error {
  override name = 'SetFallback';
}

/**
 * The batch modes: the batch's records are claimed and applied as ONE set, in one transaction
 * (`applyBatch`) or one statement (`statementBatch`). Records that cannot join the set (a key, body or
 * parse failure, a known collision, a key that appears twice in the batch, and in an ordered batch every
 * record of their lane: FIFO message group, shard, partition) run alone, as in the per-record modes. When the set fails for a
 * reason one record could cause, each of its records runs alone, so a poison message fails alone.
 */
export class BatchModeRunner<Body, Raw = unknown> {
  constructor(
    private readonly options: ResolvedOptions<Body, Raw>,
    private readonly tables: InboxTables,
    private readonly consumer: RecordConsumer<Body, Raw>,
    private readonly logger: InboxLogger,
  ) {}

  async run(scope: RunScope, prepared: readonly PreparedRecord<Body, Raw>[], timed: (run: () => Promise<Outcome>) => Promise<Outcome>): Promise<Outcome[]> {
    const { plan, session, tally } = scope;
    const outcomes: Outcome[] = new Array(prepared.length);
    const alone = async (list: readonly PreparedRecord<Body, Raw>[]) => {
      const results = await runBatch(
        list.map((p) => p.record),
        plan,
        (_, index) => timed(() => this.consumer.consume(list[index]!, session, tally)),
      );
      for (const [index, p] of list.entries()) outcomes[p.index] = results[index]!;
    };
    const joins = setMembership(prepared, plan);
    const members = prepared.filter((p) => joins[p.index]);
    const others = prepared.filter((p) => !joins[p.index]);
    await Promise.all([alone(others), this.runSet(scope, members, outcomes, alone)]);
    if (plan.ordered && plan.onFailure === 'stop-batch') stopAfterFirstFailure(outcomes, others);
    return outcomes;
  }

  private async runSet(
    { plan, session, tally }: RunScope,
    members: readonly PreparedRecord<Body, Raw>[],
    outcomes: Outcome[],
    alone: (list: readonly PreparedRecord<Body, Raw>[]) => Promise<void>,
  ): Promise<void> {
    if (members.length === 0) return;
    if (!plan.mayStart()) {
      for (const p of members) outcomes[p.index] = { kind: 'deferred' };
      return;
    }
    const started = this.options.now();
    tally.batchSets++;
    // The members not yet settled: a run that commits settles its own, in batch order, so what a failed run
    // leaves (itself and every later run) still comes after them in each FIFO group.
    let rest: readonly PreparedRecord<Body, Raw>[] = members;
    try {
      for (const run of this.runs(members, session)) {
        if (!plan.mayStart()) break;
        // A set that lost an optimistic-concurrency conflict rolled back whole: it runs again as a set.
        const results = await retryConflicts(session, () => this.applySet(run, session, tally));
        for (const [index, p] of run.entries()) outcomes[p.index] = results[index]!;
        rest = rest.slice(run.length);
      }
      for (const p of rest) outcomes[p.index] = { kind: 'deferred' };
    } catch (error) {
      const failure = error instanceof Error ? error : new Error(String(error));
      if (!oneRecordCouldCause(failure)) {
        for (const p of rest) outcomes[p.index] = { kind: 'failed', error: failure };
        return;
      }
      tally.batchFallbacks++;
      this.logger.info('the batch failed as a whole; each of its records runs alone', {
        records: rest.length,
        error: { name: failure.name, message: failure.message },
      });
      await alone(rest);
      return;
    } finally {
      const elapsed = this.options.now() - started;
      for (let i = 0; i < members.length; i++) tally.recordLatenciesMs.push(elapsed);
    }
  }

  /**
   * The set as runs that each fit in one of the session's calls: for `statementBatch`, whose one statement
   * carries every body. (`applyBatch` claims in one transaction whatever the size, see claimSet.)
   */
  private runs(members: readonly PreparedRecord<Body, Raw>[], session: InboxSession): (readonly PreparedRecord<Body, Raw>[])[] {
    const { mode, consumer } = this.options;
    // A database that bounds the rows of a transaction (Aurora DSQL) gets the set in runs it can take.
    const maxRecords = session.dialect?.maxRecordsPerTransaction ?? Number.POSITIVE_INFINITY;
    const bounded = (run: readonly PreparedRecord<Body, Raw>[]) => run.length <= maxRecords;
    if (mode.kind !== 'batch-statement') return fittingRuns(members, bounded);
    return fittingRuns(
      members,
      (run) => bounded(run) && statementSetFits(session.limits, { tables: this.tables, consumer, mode, members: run.map(setMember) }),
    );
  }

  /** Claims and applies the set; throws when it did not commit. */
  private async applySet(members: readonly PreparedRecord<Body, Raw>[], session: InboxSession, tally: BatchTally): Promise<Outcome[]> {
    const mode = this.options.mode;
    const set = members.map(setMember);
    if (mode.kind === 'batch-statement') {
      const claims = await statementSet(session, { tables: this.tables, consumer: this.options.consumer, mode, members: set }, true);
      return Promise.all(members.map((p, index) => this.consumer.settle(p, claims[index]!, session, tally)));
    }
    if (mode.kind !== 'batch-transaction') throw new Error('unreachable');
    const tx = await session.transaction();
    let claimed: boolean[];
    let sent: number[] = [];
    try {
      const claims = await claimSet(tx, { tables: this.tables, consumer: this.options.consumer, members: set, callTimeoutMs: this.options.callTimeoutMs });
      // A duplicate whose stored hash differs, or cannot be read yet, is settled alone: a collision must
      // not let the rest of its group be applied ahead of it.
      if (claims.some((claim, index) => !claim.claimed && (claim.existingSha256 === null || !sameHash(claim.existingSha256, set[index]!.sha256)))) {
        throw new SetFallback('a record of the batch collides with an earlier claim, or its claim cannot be compared yet');
      }
      claimed = claims.map((claim) => claim.claimed);
      const fresh = set.filter((_, index) => claimed[index]).map((member) => member.message);
      if (fresh.length > 0) {
        // With more than one message, each send names the message it belongs to (its key stays stable).
        const writer = this.consumer.outbox(fresh.length === 1 ? fresh[0] : undefined);
        await mode.applyBatch(inboxTransaction(tx, writer), fresh);
        sent = await writer.flush(tx);
      }
    } catch (error) {
      await tx.rollback().catch(() => {});
      throw error;
    }
    // Stryker disable next-line ConditionalExpression: committing a transaction that changed nothing costs the same call as rolling it back
    if (!claimed.some(Boolean)) {
      await tx.rollback().catch(() => {});
    } else {
      try {
        await commitOrRollBack(tx);
      } catch (error) {
        // Ambiguous: every record of the set fails; the redelivery of each finds its claim if the commit happened.
        throw error instanceof DatabaseCallError ? error : new DataApiError('CommitTransaction', 'network', true, String(error), { cause: error });
      }
      tally.outboxIds.push(...sent);
    }
    return claimed.map((wasClaimed) => (wasClaimed ? { kind: 'processed' } : { kind: 'duplicate' }));
  }
}

const setMember = <Body, Raw>(p: PreparedRecord<Body, Raw>): SetMember<Body, Raw> => ({ message: p.message!, sha256: p.sha256 });

/**
 * stop-batch beside a set: the records that did not join it are known duplicates (any other keeps the whole
 * batch out of the set), settled without a call while the set ran. One after the batch's first failure is
 * reported failed, as the one-at-a-time runner would have left it unstarted.
 */
function stopAfterFirstFailure(outcomes: Outcome[], others: readonly PreparedRecord<unknown>[]): void {
  const first = outcomes.findIndex((outcome) => !succeeded(outcome));
  if (first === -1) return;
  for (const p of others) if (p.index > first) outcomes[p.index] = { kind: 'short-circuited' };
}

/**
 * Whether the failure of the set could come from one of its records, so that running each record alone
 * isolates it: an error of the user's effect, a statement PostgreSQL refused (a constraint one record
 * breaks, a deadlock, a deferred constraint that fails the commit) or a transaction that expired. Not
 * when the database is unreachable or pausing, and not when the outcome is unknown (a commit whose
 * answer was lost, a timeout): those fail every record of the set, whose redeliveries are duplicates if
 * it did commit. (Running each record alone after an unknown outcome would be safe too, since each claim
 * decides, but it would spend calls on a database that just failed to answer.)
 */
function oneRecordCouldCause(error: Error): boolean {
  if (!(error instanceof DatabaseCallError)) return true;
  // PostgreSQL refused a statement, or the commit (a deferred constraint): nothing of the set committed.
  if (error.failure === 'statement') return true;
  return !error.ambiguous && (error.failure === 'rejected' || error.failure === 'transaction-not-found');
}

/**
 * Which records join the set. A record joins when it is ready to claim, the duplicate filter knows
 * nothing of it, and no other record of the batch has its key. In an ordered batch a lane (FIFO message group, shard, partition) joins
 * only as a whole (known duplicates aside, which succeed without running), so that the group's order is
 * kept by the per-record runner; with `stop-batch`, one record that cannot join keeps the whole batch out.
 * A set of fewer than two records is not worth it.
 */
function setMembership(prepared: readonly PreparedRecord<unknown>[], plan: BatchPlan): boolean[] {
  const keyCounts = new Map<string, number>();
  for (const p of prepared) if (p.key !== null && p.error === undefined) keyCounts.set(p.key, (keyCounts.get(p.key) ?? 0) + 1);
  const settled = (p: PreparedRecord<unknown>) => p.known === 'duplicate';
  const ready = (p: PreparedRecord<unknown>) => p.error === undefined && p.known === undefined && keyCounts.get(p.key!) === 1;
  let joins = prepared.map(ready);
  if (plan.ordered) {
    const blocked = new Set<string>();
    for (const p of prepared) if (!ready(p) && !settled(p)) blocked.add(p.record.lane ?? '');
    if (plan.onFailure === 'stop-batch' && blocked.size > 0) return prepared.map(() => false);
    joins = prepared.map((p, index) => joins[index]! && !blocked.has(p.record.lane ?? ''));
  }
  return joins.filter(Boolean).length >= 2 ? joins : prepared.map(() => false);
}
