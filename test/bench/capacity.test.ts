import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capacityTables, cpuBetween, postgresCpuSnapshot, postmasterPid } from '../../bench/capacity.js';
import type { CapacityTrial } from '../../bench/capacity.js';
import { freshDatabase } from '../support/database.js';

let worker: pg.Client;
let observer: pg.Client;
beforeAll(async () => {
  const url = await freshDatabase('capacity');
  worker = new pg.Client({ connectionString: url });
  observer = new pg.Client({ connectionString: url });
  await Promise.all([worker.connect(), observer.connect()]);
});
afterAll(async () => {
  await Promise.all([worker?.end(), observer?.end()]);
});

const backendPid = async (client: pg.Client) => Number((await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid);

describe("the capacity section's PostgreSQL CPU", () => {
  it("counts the CPU a backend spends, from the postmaster's processes, and leaves out the one it is told to", async () => {
    const postmaster = await postmasterPid(observer);
    const busy = await backendPid(worker);
    const sampler = await backendPid(observer);

    const before = postgresCpuSnapshot(postmaster, sampler);
    await worker.query('SELECT count(*) FROM generate_series(1, 3000000)');
    const after = postgresCpuSnapshot(postmaster, sampler);

    expect(after.has(postmaster)).toBe(true);
    expect(after.has(busy)).toBe(true);
    expect(after.has(sampler)).toBe(false);
    // CPU time, not wall time: counting three million rows costs a backend tens of milliseconds at least.
    expect(after.get(busy)! - before.get(busy)!).toBeGreaterThan(20_000_000);
    expect(cpuBetween(before, after)).toBeGreaterThanOrEqual((after.get(busy)! - before.get(busy)!) / 1000);
  });
});

describe("the capacity section's tables", () => {
  const trial = (variant: string, round: number, messages: number, postgresMicros: number): CapacityTrial => ({
    round,
    variant,
    server: 'limited',
    messages,
    seconds: 2,
    calls: variant === 'bare' ? messages : messages * 4,
    cpu: { postgres: postgresMicros, server: 1000, handlers: 1000 },
    serverEventLoop: 0.5,
    backends: { 'active, running': 0.5 },
  });

  it('gives messages/s per PostgreSQL core as one second over its CPU per message, and the ratio to bare per round', () => {
    const trials = [trial('bare', 0, 400, 200_000), trial('inbox-tx', 0, 100, 250_000), trial('bare', 1, 200, 100_000), trial('inbox-tx', 1, 100, 250_000)];
    const [capacity] = capacityTables(trials, { lambdas: 8, seconds: 2, rounds: 2, limit: 4 }, 'test machine');
    const tx = capacity!.rows.find((row) => row[0] === 'inbox-tx')!;
    // 200 messages over 4 s; bare ran 200/s then 100/s while inbox-tx ran 50/s: 0.25x and 0.5x, median 0.38x.
    expect(tx.slice(2, 7)).toEqual(['50', '0.38x (0.25 - 0.50)', '4.00', '2,500 µs', '400']);
    expect(capacity!.rows.find((row) => row[0] === 'bare')!.slice(5, 7)).toEqual(['500 µs', '2,000']);
  });
});
