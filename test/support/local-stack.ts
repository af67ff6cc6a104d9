import { afterAll, beforeAll } from 'vitest';
import { startLocal } from '../../local/index.js';
import type { LocalStack } from '../../local/index.js';
import { freshDatabase } from './database.js';

/**
 * One local stack for the test file, on a database of its own on the shared server (DATABASE_URL points
 * there while the file runs, so runs that start their own stack land there too); returns a getter for it.
 */
export function localStackPerFile(label: string): () => LocalStack {
  const previousDatabaseUrl = process.env.DATABASE_URL;
  let local: LocalStack | undefined;
  beforeAll(async () => {
    process.env.DATABASE_URL = await freshDatabase(label);
    local = await startLocal({ dataApi: { transactionIdleTimeoutMs: 2000 } });
  });
  afterAll(async () => {
    await local?.close();
    if (previousDatabaseUrl === undefined) delete process.env.DATABASE_URL;
    else process.env.DATABASE_URL = previousDatabaseUrl;
  });
  return () => {
    if (!local) throw new Error('localStackPerFile: the stack is made in beforeAll; use it inside a test.');
    return local;
  };
}
