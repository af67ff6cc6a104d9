import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { execFile } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PACKAGE_FUNCTIONS } from '../../lib/function-assets.js';
import { inboxFixture } from '../support/inbox.js';
import type { InboxFixture } from '../support/inbox.js';

/**
 * The package's own functions as the constructs deploy them from the installed package: the prebuilt bundles in
 * dist/lib/assets/ (`npm test` builds them first), loaded the way Lambda loads index.mjs, against the local Data API.
 */
const run = promisify(execFile);
const ASSETS = join(import.meta.dirname, '../../dist/lib/assets');

/**
 * Invokes the prebuilt bundle in a Node.js process of its own, imported as Lambda imports index.mjs (vitest's own
 * module loader would forgive a bundle Node.js refuses), with the environment the constructs set; its answer.
 */
async function invoke(name: keyof typeof PACKAGE_FUNCTIONS, event: unknown): Promise<any> {
  const bundle = join(ASSETS, name, 'index.mjs');
  if (!existsSync(bundle)) throw new Error(`${bundle} is missing: run \`npm run build\` (npm test does).`);
  const script = `
    const { handler } = await import(${JSON.stringify(pathToFileURL(bundle).href)});
    const answer = await handler(${JSON.stringify(event)}, { getRemainingTimeInMillis: () => 300000 });
    process.stdout.write('\\n' + JSON.stringify(answer));`;
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { env: { ...process.env, ...environment() } });
  return JSON.parse(stdout.trim().split('\n').at(-1)!);
}

let db: InboxFixture;

beforeAll(async () => {
  db = await inboxFixture('function_assets');
});

afterAll(async () => db.close());

/** What the constructs set (the Data API endpoint stands in for AWS's). */
function environment(): Record<string, string> {
  return {
    INBOX_RESOURCE_ARN: db.server.resourceArn,
    INBOX_SECRET_ARN: db.server.secretArn,
    INBOX_DATABASE: db.server.database,
    INBOX_DATA_API_ENDPOINT: db.server.endpoint,
    INBOX_RETENTION_SECONDS: '3600',
    POWERTOOLS_METRICS_DISABLED: 'true',
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
  };
}

describe("the package's prebuilt functions", () => {
  it('builds a bundle for every function the constructs deploy', () => {
    expect(Object.keys(PACKAGE_FUNCTIONS).filter((name) => !existsSync(join(ASSETS, name, 'index.mjs')))).toEqual([]);
  });

  it('the migration bundle applies the schema as the custom resource asks', async () => {
    const answer = await invoke('migration', {
      RequestType: 'Create',
      ResourceType: 'Custom::InboxMigration',
      ResourceProperties: { ResourceArn: db.server.resourceArn, SecretArn: db.server.secretArn, Database: db.server.database, Migrations: 'inbox' },
    });
    expect(answer.PhysicalResourceId).toBe(`sqs-inbox-schema:${db.server.database}:inbox`);
    expect(await db.query("SELECT to_regclass('inbox.consumed_message') IS NOT NULL AS present")).toEqual([{ present: true }]);
  });

  it('the purge bundle deletes the rows older than the retention, and no younger one', async () => {
    await db.query(
      `INSERT INTO inbox.consumed_message (consumer_name, message_id, processed_at)
       SELECT 'c', 'old-' || g, now() - interval '2 hours' FROM generate_series(1, 12) g
       UNION ALL SELECT 'c', 'young-' || g, now() FROM generate_series(1, 3) g`,
    );
    const report = await invoke('purge', {});
    expect(report.deleted).toBe(12);
    expect(await db.query('SELECT count(*)::int AS left FROM inbox.consumed_message')).toEqual([{ left: 3 }]);
  });

  it('the DSQL bundles load as Lambda loads them, exporting the handlers the constructs name', async () => {
    // Reaching a cluster needs TLS and an IAM token (test/inbox/dsql-*.test.ts run their code on the DSQL profile).
    const script = `
      const exported = async (name) => Object.keys(await import(new URL('./' + name + '/index.mjs', ${JSON.stringify(pathToFileURL(`${ASSETS}/`).href)}).href)).sort();
      process.stdout.write('\\n' + JSON.stringify(await exported('dsql')));`;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script]);
    const exported = JSON.parse(stdout.trim().split('\n').at(-1)!);
    // One bundle: InboxCleanup and InboxOutboxRelay on DSQL deploy `index.purge` and `index.sweep`; InboxDsqlDatabase `index.schema`.
    expect(exported).toEqual(['purge', 'schema', 'sweep']);
  });
});
