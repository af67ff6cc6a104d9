import { spawn } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import type { InboxFixture } from './inbox.js';

/** The installed bin: compiled JavaScript, as `npx sqs-inbox` runs it (`npm test` builds dist/ first). */
export const BIN = 'dist/bin/sqs-inbox.js';

/** No INBOX_* or SQS endpoint settings from the environment the tests run in. */
export const NO_TARGET = { INBOX_RESOURCE_ARN: '', INBOX_SECRET_ARN: '', INBOX_DATABASE: '', INBOX_DATA_API_ENDPOINT: '', AWS_ENDPOINT_URL_SQS: '' };

/** Runs the CLI bin to its end, stdin a closed pipe; `children` keeps the process for the caller's cleanup. */
export async function cliRun(args: string[], env: NodeJS.ProcessEnv, children: ChildProcessWithoutNullStreams[]) {
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...NO_TARGET, ...env } });
  children.push(child);
  child.stdin.end();
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  return { code, stdout, stderr };
}

/** The INBOX_* variables that point the CLI's database flags at a fixture's local Data API. */
export function databaseEnv(db: InboxFixture): NodeJS.ProcessEnv {
  return {
    INBOX_DATA_API_ENDPOINT: db.server.endpoint,
    INBOX_RESOURCE_ARN: db.server.resourceArn,
    INBOX_SECRET_ARN: db.server.secretArn,
    INBOX_DATABASE: db.server.database,
  };
}
