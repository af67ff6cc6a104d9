import { spawn } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';

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
