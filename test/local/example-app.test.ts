import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { stripVTControlCharacters } from 'node:util';
import { describe, expect, it } from 'vitest';
import { freshDatabase } from '../support/database.js';

// The example app's tests (examples/esm-app/test: SQS, Kinesis, DynamoDB Streams, Kafka and the outbox
// through the faults) type-checked and run against this repository's build and sources, where a change
// shows at once; the outside-in test runs the same files against the packed tarball.

interface Exited {
  readonly code: number | null;
  readonly output: string;
}

function run(command: string, args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<Exited> {
  const child = spawn(command, args, { env: { ...process.env, ...env } });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, output: stripVTControlCharacters(output) })));
}

describe('the example app (examples/esm-app)', () => {
  it('type-checks its tests and handlers against the declarations', async () => {
    if (!existsSync('dist/local/index.d.ts')) throw new Error('dist/ has no declarations: run `npm run build` first (npm test does).');
    const checked = await run('npx', ['tsc', '-p', 'test/support/example-app.tsconfig.json']);
    expect(checked.output).toBe('');
    expect(checked.code).toBe(0);
  }, 120_000);

  it('passes its own tests of each handler through the faults', async () => {
    // Each test file starts its own stack, on a database of the shared server.
    const tested = await run('npx', ['vitest', 'run', '--config', 'test/support/example-app.vitest.config.ts', '--maxWorkers=3'], {
      DATABASE_URL: await freshDatabase('example_app'),
      CI: 'true',
      NO_COLOR: '1',
    });
    expect(tested.output).toMatch(/Tests\s+14 passed \(14\)/);
    expect(tested.code).toBe(0);
  }, 400_000);
});
