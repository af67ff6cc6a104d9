import { describe, expect, it } from 'vitest';
import { runBatch } from '../../lambda/inbox/lanes/lanes.js';
import type { BatchPlan, Outcome } from '../../lambda/inbox/lanes/lanes.js';

// runBatch's own contract, apart from any consumer: a throw from `run` is that record's failure, and no lane ends early.

const plan = (overrides: Partial<BatchPlan> = {}): BatchPlan => ({
  ordered: true,
  onFailure: 'skip-group',
  concurrency: 2,
  mayStart: () => true,
  ...overrides,
});

describe('runBatch', () => {
  it("takes a throw from run as that record's failure: its lane skips the rest, the other lane runs on", async () => {
    const records = [
      { id: 'a1', lane: 'a' },
      { id: 'b1', lane: 'b' },
      { id: 'a2', lane: 'a' },
      { id: 'b2', lane: 'b' },
    ];
    const ran: string[] = [];
    const outcomes = await runBatch(records, plan(), async (record): Promise<Outcome> => {
      ran.push(record.id);
      if (record.id === 'a1') throw new Error('run broke its promise');
      if (record.id === 'b1') throw 'a string, not an Error';
      return { kind: 'processed' };
    });
    expect(outcomes).toEqual([
      { kind: 'failed', error: new Error('run broke its promise') },
      { kind: 'failed', error: new Error('a string, not an Error') },
      { kind: 'short-circuited' },
      { kind: 'short-circuited' },
    ]);
    expect((outcomes[1] as { error: unknown }).error).toBeInstanceOf(Error);
    expect(ran.sort()).toEqual(['a1', 'b1']);
  });
});
