import { execFile } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { pathToFileURL } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { DataApiSession } from '../../lambda/inbox/transport/data-api/session.js';
import { migrate } from '../../lambda/inbox/sql/schema.js';
import { EXAMPLE_ORDER_MIGRATIONS } from '../../demo/functions/example-migrations.js';
import { startDataApi } from '../../local/data-api/server.js';
import { freshDatabase } from '../support/database.js';
import { dataApiClient, lambdaContext, sqsRecord } from '../support/inbox.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const OUT = join(ROOT, 'cdk.out');

type Template = { Resources: Record<string, { Type: string; Properties: any }> };

describe('npx cdk synth', () => {
  // One synthesis, shared: each test reads what it wrote, so neither depends on the other running first.
  let synth: { stdout: string; stderr: string; template: Template; streams: Template };
  beforeAll(async () => {
    // The real CLI, as a user runs it: esbuild bundling, built-in CloudFormation validation, cdk-nag; with the
    // stream example too (-c streams=true), so one synthesis covers both stacks.
    const { stdout, stderr } = await promisify(execFile)('npx', ['cdk', 'synth', '--quiet', '-c', 'streams=true'], {
      cwd: ROOT,
      env: { ...process.env, CI: 'true' },
      maxBuffer: 16 * 1024 * 1024,
    });
    const templateFile = join(OUT, 'InboxStack.template.json');
    expect(existsSync(templateFile)).toBe(true);
    const streamsFile = join(OUT, 'InboxStreamsStack.template.json');
    expect(existsSync(streamsFile)).toBe(true);
    synth = {
      stdout,
      stderr,
      template: JSON.parse(readFileSync(templateFile, 'utf8')) as Template,
      streams: JSON.parse(readFileSync(streamsFile, 'utf8')) as Template,
    };
  }, 180_000);

  it('bundles the functions, writes cdk.out/InboxStack.template.json and InboxStreamsStack.template.json, and passes cdk-nag', () => {
    // Assess (cdk-nag being registered at all is proven in inbox-app.test.ts: an empty report looks the same)
    const { stdout, stderr, template } = synth;
    const report = JSON.parse(readFileSync(join(OUT, 'validation-report.json'), 'utf8')) as {
      pluginReports: Array<{ pluginName: string; violations: unknown[] }>;
    };
    expect(report.pluginReports.flatMap((r) => r.violations)).toEqual([]);
    expect(`${stdout}\n${stderr}`).not.toMatch(/AwsSolutions-|Synthesis finished with errors/);

    // Every function of ours is an ESM bundle that leaves the AWS SDK to the runtime: three in InboxStack; the
    // migration and one consumer per stream source in InboxStreamsStack.
    // aws-cdk-lib's provider framework runs on nodejs24.x too, on x86_64; ours are ARM64.
    const functionsOf = (t: Template) =>
      Object.values(t.Resources).filter(
        (r) => r.Type === 'AWS::Lambda::Function' && r.Properties.Runtime === 'nodejs24.x' && r.Properties.Architectures?.[0] === 'arm64',
      );
    const ours = functionsOf(template);
    expect(ours).toHaveLength(3);
    const streamFunctions = functionsOf(synth.streams);
    expect(
      streamFunctions
        .map((fn) => fn.Properties.Environment?.Variables?.INBOX_SOURCE)
        .filter(Boolean)
        .sort(),
    ).toEqual(['dynamodb', 'kafka', 'kafka', 'kinesis']);
    for (const fn of [...ours, ...streamFunctions]) {
      const assetDir = join(OUT, fn.Properties.Code.S3Key.replace(/\.zip$/, '').replace(/^/, 'asset.'));
      expect(readdirSync(assetDir)).toContain('index.mjs');
      const bundle = readFileSync(join(assetDir, 'index.mjs'), 'utf8');
      expect(bundle.startsWith('import { createRequire as __inboxCreateRequire }')).toBe(true);
      expect(bundle).toMatch(/from\s*"@aws-sdk\/client-rds-data"/);
    }
  });

  it('ships an order-worker bundle that, run as Lambda would run it, ships order-417 exactly once', async () => {
    // Arrange: the bundle synthesized once for this file, and a migrated database behind the local Data API.
    const { template } = synth;
    const worker = Object.values(template.Resources).find(
      (r) => r.Type === 'AWS::Lambda::Function' && r.Properties.Environment?.Variables?.INBOX_CONSUMER !== undefined,
    );
    expect(worker).toBeDefined();
    const bundle = join(OUT, `asset.${worker!.Properties.Code.S3Key.replace(/\.zip$/, '')}`, 'index.mjs');
    const server = await startDataApi({ databaseUrl: await freshDatabase('bundle') });
    const client = dataApiClient(server);
    const session = new DataApiSession(
      { client, resourceArn: server.resourceArn, secretArn: server.secretArn, database: server.database },
      { callTimeoutMs: 10_000, resumeDelaysMs: [] },
    );
    await migrate(session, [EXAMPLE_ORDER_MIGRATIONS]);
    const saved = { ...process.env };
    Object.assign(process.env, {
      INBOX_RESOURCE_ARN: server.resourceArn,
      INBOX_SECRET_ARN: server.secretArn,
      INBOX_DATABASE: server.database,
      INBOX_DATA_API_ENDPOINT: server.endpoint,
      INBOX_CONSUMER: worker!.Properties.Environment.Variables.INBOX_CONSUMER,
    });
    try {
      // Act: the same SQS record delivered twice, then a poison one.
      const { handler } = (await import(pathToFileURL(bundle).href)) as {
        handler: (event: unknown, context: unknown) => Promise<{ batchItemFailures: unknown[] }>;
      };
      const record = sqsRecord({ body: { orderId: 'order-417' }, groupId: 'customer-1' });
      const first = await handler({ Records: [record] }, lambdaContext());
      const again = await handler({ Records: [record] }, lambdaContext());
      const poison = await handler({ Records: [sqsRecord({ body: 'not json', groupId: 'customer-2' })] }, lambdaContext());

      // Assess
      expect([first, again, poison]).toEqual([{ batchItemFailures: [] }, { batchItemFailures: [] }, { batchItemFailures: [] }]);
      const { rows } = await session.execute("SELECT shipped_count FROM public.orders WHERE order_id = 'order-417'");
      expect(rows).toEqual([{ shipped_count: 1 }]);
      const parked = await session.execute('SELECT error_class FROM inbox.parked_message');
      expect(parked.rows).toEqual([{ error_class: 'ParseError' }]);
    } finally {
      process.env = saved;
      client.destroy();
      await server.close();
    }
  }, 60_000);
});
