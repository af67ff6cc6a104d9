import { execFile } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const OUT = join(ROOT, 'cdk.out');

describe('npx cdk synth', () => {
  it(
    'bundles the functions, writes cdk.out/InboxStack.template.json and passes cdk-nag',
    async () => {
      // Act: the real CLI, as a user runs it: esbuild bundling, built-in CloudFormation validation, cdk-nag.
      const { stdout, stderr } = await promisify(execFile)('npx', ['cdk', 'synth', '--quiet'], {
        cwd: ROOT,
        env: { ...process.env, CI: 'true' },
        maxBuffer: 16 * 1024 * 1024,
      });

      // Assess
      const templateFile = join(OUT, 'InboxStack.template.json');
      expect(existsSync(templateFile)).toBe(true);
      const template = JSON.parse(readFileSync(templateFile, 'utf8')) as { Resources: Record<string, { Type: string; Properties: any }> };
      const report = JSON.parse(readFileSync(join(OUT, 'validation-report.json'), 'utf8')) as {
        pluginReports: Array<{ pluginName: string; violations: unknown[] }>;
      };
      expect(report.pluginReports.flatMap((r) => r.violations)).toEqual([]);
      expect(`${stdout}\n${stderr}`).not.toMatch(/AwsSolutions-|Synthesis finished with errors/);

      // Every function of ours is an ESM bundle that leaves the AWS SDK to the runtime.
      const ours = Object.values(template.Resources).filter(
        (r) => r.Type === 'AWS::Lambda::Function' && r.Properties.Runtime === 'nodejs22.x',
      );
      expect(ours).toHaveLength(3);
      for (const fn of ours) {
        const assetDir = join(OUT, fn.Properties.Code.S3Key.replace(/\.zip$/, '').replace(/^/, 'asset.'));
        expect(readdirSync(assetDir)).toContain('index.mjs');
        const bundle = readFileSync(join(assetDir, 'index.mjs'), 'utf8');
        expect(bundle.startsWith('import { createRequire as __inboxCreateRequire }')).toBe(true);
        expect(bundle).toMatch(/from\s*"@aws-sdk\/client-rds-data"/);
      }
    },
    180_000,
  );
});
