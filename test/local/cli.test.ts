import { spawn } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import { ExecuteStatementCommand, RDSDataClient } from '@aws-sdk/client-rds-data';
import { CreateQueueCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterEach, describe, expect, it } from 'vitest';
import { freshDatabase } from '../support/database.js';

const children: ChildProcessWithoutNullStreams[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

/** Starts the CLI and resolves with its first stdout line. */
function cli(args: string[], env: NodeJS.ProcessEnv = {}) {
  const child = spawn(process.execPath, ['bin/sqs-inbox.js', ...args], { env: { ...process.env, ...env } });
  children.push(child);
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const firstLine = new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`exited ${code}: ${stderr}`)));
  });
  // Commands that exit without printing leave this promise rejected; only tests that expect a line read it.
  firstLine.catch(() => {});
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { child, firstLine, exited, stderr: () => stderr };
}

const credentials = { accessKeyId: 'x', secretAccessKey: 'x' };

describe('npx sqs-inbox', () => {
  it('data-api --json prints one JSON line a plain SDK script can use, and stops on SIGTERM', async () => {
    const run = cli(['data-api', '--json', '--database-url', await freshDatabase('cli')]);
    const info = JSON.parse(await run.firstLine);
    expect(Object.keys(info)).toEqual(['endpoint', 'resourceArn', 'secretArn', 'database']);
    const client = new RDSDataClient({ endpoint: info.endpoint, region: 'us-east-1', credentials });
    const result = await client.send(
      new ExecuteStatementCommand({ resourceArn: info.resourceArn, secretArn: info.secretArn, database: info.database, sql: 'SELECT 40 + 2 AS answer' }),
    );
    expect(result.records).toEqual([[{ longValue: 42 }]]);
    client.destroy();
    run.child.kill('SIGTERM');
    expect(await run.exited).not.toBeNull();
  }, 60_000);

  it('migrate applies the schema through the local Data API, from the INBOX_* environment', async () => {
    const server = cli(['data-api', '--json', '--database-url', await freshDatabase('cli_migrate')]);
    const info = JSON.parse(await server.firstLine);
    const env = { INBOX_DATA_API_ENDPOINT: info.endpoint, INBOX_RESOURCE_ARN: info.resourceArn, INBOX_SECRET_ARN: info.secretArn, INBOX_DATABASE: info.database };
    const migrate = cli(['migrate', '--sets', 'inbox,example-orders'], env);
    const report = JSON.parse(await migrate.firstLine);
    expect(report.versions).toEqual({ inbox: 2, 'example-orders': 1 });
    expect(await migrate.exited).toBe(0);
    const missing = cli(['migrate'], { ...env, INBOX_RESOURCE_ARN: '' });
    expect(await missing.exited).toBe(1);
    expect(missing.stderr()).toMatch(/INBOX_RESOURCE_ARN/);
    server.child.kill('SIGTERM');
  }, 60_000);

  it('local --json serves the Data API and SQS together', async () => {
    const run = cli(['local', '--json'], { DATABASE_URL: await freshDatabase('cli_local') });
    const info = JSON.parse(await run.firstLine);
    expect(info.dataApi.endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const sqs = new SQSClient({ endpoint: info.sqs.endpoint, region: info.sqs.region, credentials });
    const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: 'orders.fifo', Attributes: { FifoQueue: 'true' } }));
    expect(QueueUrl).toContain(info.sqs.endpoint);
    sqs.destroy();
    run.child.kill('SIGTERM');
  }, 60_000);

  it('names an unknown command and shows the usage', async () => {
    const run = cli(['deploy']);
    expect(await run.exited).toBe(1);
    expect(run.stderr()).toMatch(/unknown command "deploy"[\s\S]*Usage:/);
  });
});
