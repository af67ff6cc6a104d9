import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDataApi } from '../../../local/data-api/server.js';
import { startHarness, type Harness } from './harness.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('local Data API: maxConcurrentCalls', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('admission', { maxConcurrentCalls: 2 });
  });
  afterAll(async () => h?.close());

  it('runs at most 2 of 6 slow calls at once, starts the others in arrival order, and all 6 succeed', async () => {
    // Arrange: watch PostgreSQL itself for the server's running pg_sleep calls.
    let watching = true;
    let mostAtOnce = 0;
    const watcher = (async () => {
      while (watching) {
        const { rows } = await h.direct.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state = 'active' " +
            "AND application_name = 'sqs-inbox-local-data-api' AND query LIKE '%pg_sleep(0.3)%'",
        );
        mostAtOnce = Math.max(mostAtOnce, rows[0]?.n ?? 0);
        await sleep(10);
      }
    })();

    // Act: six calls, sent one after another.
    const calls: Array<Promise<{ records?: unknown }>> = [];
    for (let i = 0; i < 6; i++) {
      calls.push(
        h.execute('SELECT :i AS i, (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS started, pg_sleep(0.3) IS NULL AS slept', [
          { name: 'i', value: { longValue: i } },
        ]),
      );
      await sleep(15);
    }
    const results = await Promise.all(calls);
    watching = false;
    await watcher;

    // Assess
    const started = results.map((result) => (result.records as Array<[{ longValue: number }, { doubleValue: number }, unknown]>)[0]![1].doubleValue);
    expect(mostAtOnce).toBe(2);
    // Calls run in waves of two, in the order they arrived: a wave starts only as the one before it ends
    // its 300 ms. (Within a wave, two starts may swap by a few ms: each needs a pooled connection first.)
    const wave = (k: number) => [started[2 * k]!, started[2 * k + 1]!];
    for (let k = 1; k < 3; k++) expect(Math.min(...wave(k)) - Math.max(...wave(k - 1))).toBeGreaterThanOrEqual(250);
  });

  it('a BeginTransaction waiting for a transaction place holds no call place, so the commit that frees one still runs', async () => {
    const tight = await startHarness('admission_begin', { maxConcurrentCalls: 1, maxOpenTransactions: 1, connectionWaitTimeoutMs: 3_000 });
    try {
      const first = await tight.begin();
      // The second Begin waits for the only transaction place; the commit of the first must still get the
      // only call place, or both wait until the Begin gives up.
      const second = tight.begin();
      await sleep(100);
      await tight.commit(first);
      const id = await second;
      await tight.commit(id);
    } finally {
      await tight.close();
    }
  });

  it('refuses a maxConcurrentCalls that is not a whole number >= 1', async () => {
    await expect(startDataApi({ databaseUrl: h.url, maxConcurrentCalls: 0 })).rejects.toThrow(/maxConcurrentCalls must be a whole number >= 1/);
  });
});
