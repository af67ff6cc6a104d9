/** What became of one record. Only `processed`, `duplicate` and `parked` are reported as succeeded. */
export type Outcome =
  /** Claimed, applied, committed. */
  | { readonly kind: 'processed' }
  /** The claim found the key already there with the same body: a redelivery, nothing applied. */
  | { readonly kind: 'duplicate' }
  /** Stored in the parked table (a permanent error with onPermanentError: park), committed. */
  | { readonly kind: 'parked'; readonly error: Error }
  /**
   * Did not commit, or the outcome is unknown: the event source delivers it again. `parkError`: why a
   * record that failed with a permanent error could not be parked (its `error` stays its own).
   */
  | { readonly kind: 'failed'; readonly error: Error; readonly parkError?: Error }
  /** Not run: an earlier record of its lane (FIFO group, shard, partition; or batch, with stop-batch) failed. */
  | { readonly kind: 'short-circuited' }
  /** Not run: the Lambda's remaining time was below the safety margin. */
  | { readonly kind: 'deferred' };

/** Whether the event source may consider the record done (SQS deletes it, a stream checkpoints past it). */
export const succeeded = (outcome: Outcome) => outcome.kind === 'processed' || outcome.kind === 'duplicate' || outcome.kind === 'parked';

/** How a batch is run. */
export interface BatchPlan {
  /** Records of one lane (FIFO group, shard, partition) run in order, one at a time. */
  readonly ordered: boolean;
  /**
   * After a failure in an ordered batch: skip the rest of the lane (lanes run side by side), or stop the
   * batch (its records run one at a time, in batch order, and none starts after a failure).
   */
  readonly onFailure: 'skip-group' | 'stop-batch';
  /** Records (unordered) or lanes (ordered) in flight at once. */
  readonly concurrency: number;
  /** False once the remaining time is below the safety margin; checked before each record starts. */
  readonly mayStart: () => boolean;
}

/**
 * Runs every record of a batch under the plan and returns one outcome per record, in batch order.
 * A throw from `run` is the record's failure.
 */
export async function runBatch<R extends { readonly lane: string | undefined }>(
  records: readonly R[],
  plan: BatchPlan,
  run: (record: R, index: number) => Promise<Outcome>,
): Promise<Outcome[]> {
  const outcomes: (Outcome | undefined)[] = new Array(records.length);

  const start = async (index: number): Promise<Outcome> => {
    const record = records[index]!;
    try {
      if (!plan.mayStart()) return { kind: 'deferred' };
      return await run(record, index);
    } catch (error) {
      // `run` should never throw; if it does, the record failed, and no lane may end early: a lane that
      // stopped would leave the rest of its records running after the handler returned.
      return { kind: 'failed', error: error instanceof Error ? error : new Error(String(error)) };
    }
  };

  if (!plan.ordered) {
    await pool(
      records.map((_, index) => index),
      plan.concurrency,
      async (index) => {
        outcomes[index] = await start(index);
      },
    );
    return outcomes as Outcome[];
  }

  // Ordered: order within a lane is sacred. Once a record of lane L fails, every later record of L in this
  // batch is reported failed without running, or the event source would take them as done ahead of it.
  // With stop-batch the whole batch is one lane, run in batch order: lanes side by side would start other
  // groups' later records after a failure.
  await pool(plan.onFailure === 'stop-batch' ? [records.map((_, index) => index)] : lanesOf(records), plan.concurrency, async (members) => {
    let laneFailed = false;
    for (const index of members) {
      if (laneFailed) {
        outcomes[index] = { kind: 'short-circuited' };
        continue;
      }
      const outcome = await start(index);
      outcomes[index] = outcome;
      laneFailed = !succeeded(outcome);
    }
  });
  return outcomes as Outcome[];
}

/** The indexes of each lane's records, in batch order, lanes in order of their first record. */
function lanesOf(records: readonly { readonly lane: string | undefined }[]): number[][] {
  const lanes = new Map<string, number[]>();
  records.forEach((record, index) => {
    const lane = record.lane ?? '';
    const members = lanes.get(lane) ?? [];
    members.push(index);
    lanes.set(lane, members);
  });
  return [...lanes.values()];
}

/** Runs `work` over `items` with at most `limit` in flight, starting them in order. */
async function pool<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const item = items[next++]!;
      await work(item);
    }
  });
  await Promise.all(lanes);
}
