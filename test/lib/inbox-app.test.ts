import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { afterEach, describe, expect, it } from 'vitest';
import { createInboxApp } from '../../bin/inbox-app.js';
import { testAppProps } from './support.js';

describe('the deployable app (bin/inbox-app.ts, synthesized by bin/app.ts)', () => {
  const outdirs: string[] = [];
  const outdir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'inbox-app-'));
    outdirs.push(dir);
    return dir;
  };
  afterEach(() => {
    for (const dir of outdirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('synthesizes InboxStack with nothing unacknowledged by cdk-nag', () => {
    const { app, stack } = createInboxApp({ ...testAppProps({ alarmEmail: 'oncall@example.com' }), outdir: outdir() });
    const assembly = app.synth();
    expect(assembly.getStackByName(stack.stackName).template.Resources).toBeDefined();
  });

  it('fails synthesis on an unacknowledged AwsSolutions finding: cdk-nag is registered on the app', () => {
    // Arrange: a queue that breaks AwsSolutions-SQS3 (no dead-letter queue) and SQS4 (TLS not enforced).
    const { app, stack } = createInboxApp({ ...testAppProps(), outdir: outdir() });
    new sqs.Queue(stack, 'Unguarded', { encryption: sqs.QueueEncryption.SQS_MANAGED });

    // Act + Assess
    expect(() => app.synth()).toThrow(/AwsSolutions-SQS3[\s\S]*InboxStack\/Unguarded|InboxStack\/Unguarded[\s\S]*AwsSolutions-SQS3/);
  });

  it('passes -c context through to the stack', () => {
    const { stack } = createInboxApp({ ...testAppProps({ deletionProtection: 'false' }), outdir: outdir() });
    expect((stack.database.cluster.node.defaultChild as { deletionProtection?: boolean }).deletionProtection).toBe(false);
  });
});
