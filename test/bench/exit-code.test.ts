import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const exec = promisify(execFile);

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sqs-inbox-bench-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Runs the bench entry as `npm run bench` does (tsx), on the smallest section, writing its results to `out`. */
async function bench(args: string[], out: string): Promise<{ code: number; stderr: string; results: string }> {
  const run = [process.execPath, ['node_modules/tsx/dist/cli.mjs', 'bench/run.ts', '--calls-only', '--out', out, ...args]] as const;
  let code = 0;
  let stderr = '';
  try {
    ({ stderr } = await exec(run[0], [...run[1]], { timeout: 120_000, maxBuffer: 16 * 1024 * 1024 }));
  } catch (error) {
    const failed = error as { code?: number; stderr?: string };
    code = failed.code ?? -1;
    stderr = failed.stderr ?? '';
  }
  return { code, stderr, results: await readFile(out, 'utf8').catch(() => '') };
}

// The bench starts embedded PostgreSQL (in its server process) and runs real handlers: a record that fails
// in it must fail the run, with its cause, or a broken variant would pass unnoticed.
describe('npm run bench', () => {
  it("exits 1 when a variant's records fail, naming the cause the handler logged", async () => {
    const run = await bench(['--fail-variant', 'inbox-stmt'], join(dir, 'failing.md'));
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /inbox-stmt: 10 of 10 records reported failed \(counting calls, new messages\).*violates check constraint "bench_forced_failure"/,
    );
    expect(run.results).toMatch(/\*\*Problems:\*\*/);
  }, 120_000);

  it('exits 0 when every record succeeds, and claims nothing about the sections it skipped', async () => {
    const run = await bench([], join(dir, 'passing.md'));
    expect(run.stderr).not.toMatch(/PROBLEMS|reported failed|\[bench\] failed/);
    expect(run.code).toBe(0);
    expect(run.results).toMatch(/every call count matches the design/);
    expect(run.results).toMatch(
      /Not run, so nothing is claimed about them: the purge \(--calls-only\), the fault scenario \(--calls-only\), the consumer bundle \(--calls-only\)\./,
    );
    expect(run.results).not.toMatch(/scenario has no double/);
    // The modes over the PostgreSQL wire protocol: round trips counted at the wire proxy, the designed calls.
    expect(run.results).toMatch(/round trips over the PostgreSQL wire protocol match its designed calls/);
    expect(run.results).toMatch(/^\| inbox-tx \| 4 \(Begin 1 \+ Execute 2 \+ Commit 1\) \| 0\.10 \| 4 \| 1\.2 ms \| not timed \| 40 ms \| 33x \|$/m);
    expect(run.results).toMatch(/^\| inbox-batch-stmt \| 0\.10 \(Execute 0\.10\) \| 0\.10 \| 1 per batch \| 0\.3 ms \| not timed \| 10 ms \| 33x \|$/m);
  }, 120_000);
});
