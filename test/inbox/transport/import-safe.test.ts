import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InboxConfigError } from '../../../lambda/inbox/index.js';
import { lambdaContext, sqsRecord } from '../../support/inbox.js';

// A worker module imports cleanly without its INBOX_* environment (a unit test imports its `apply`; a tool
// reads its exports); its first invocation fails, naming the variable that is missing.
describe('a worker on postgresFromEnvironment() or dsqlFromEnvironment(), imported without its environment', () => {
  let previous: NodeJS.ProcessEnv;
  beforeEach(() => {
    previous = { ...process.env };
    for (const name of Object.keys(process.env)) if (name.startsWith('INBOX_')) delete process.env[name];
  });
  afterEach(() => {
    process.env = previous;
  });

  it.each([
    ['postgres', 'INBOX_PG_HOST', () => import('./workers/postgres-worker.js')],
    ['dsql', 'INBOX_DSQL_ENDPOINT', () => import('./workers/dsql-worker.js')],
  ] as const)('on %s: imports, and its first invocation names %s', async (_, variable, load) => {
    const worker = await load();
    expect(typeof worker.apply).toBe('function');
    const failure = await worker.handler({ Records: [sqsRecord()] }, lambdaContext()).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(InboxConfigError);
    expect((failure as InboxConfigError).option).toBe(variable);
    expect((failure as Error).message).toContain(`"${variable}": is not set`);
  });
});
