import type { TestProject } from 'vitest/node';
import { startPostgres } from '../../local/postgres.js';
import { REPRODUCE } from './seed.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** URL of the PostgreSQL server every test file creates its own database on. */
    serverUrl: string;
  }
}

/** Starts embedded PostgreSQL once per run (or uses DATABASE_URL) and hands its URL to every test file. */
export default async function setup(project: TestProject) {
  console.log(`random choices from ${REPRODUCE} (test/support/seed.ts)`);
  const server = await startPostgres();
  project.provide('serverUrl', server.url);
  return async () => {
    await server.close();
  };
}
