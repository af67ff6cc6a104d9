import { inject } from 'vitest';
import { createDatabase } from '../../local/postgres.js';
import { uniqueSuffix } from './seed.js';

/**
 * Creates a fresh, empty database for one test file (or one test) and returns its URL, so test files
 * never see each other's tables, even when they run in parallel against one server.
 */
export async function freshDatabase(label: string): Promise<string> {
  const safe = label
    .toLowerCase()
    .replace(/[^a-z0-9_]/g, '_')
    .slice(0, 40);
  return createDatabase(inject('serverUrl'), `t_${safe}_${uniqueSuffix()}`);
}
