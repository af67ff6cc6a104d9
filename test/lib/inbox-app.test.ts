import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Duration } from 'aws-cdk-lib';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { afterEach, describe, expect, it } from 'vitest';
import { createInboxApp } from '../../bin/inbox-app.js';
import { InboxStack } from '../../demo/stacks/inbox-stack.js';
import { InboxStreamsStack } from '../../demo/stacks/inbox-streams-stack.js';
import { FIXTURE_HANDLER, synthError, testApp, testAppProps } from './support.js';

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

  it('adds InboxStreamsStack only when asked (-c streams=true), with nothing unacknowledged by cdk-nag', () => {
    // Arrange + Act
    expect(createInboxApp({ ...testAppProps(), outdir: outdir() }).streams).toBeUndefined();
    const { app, stack, streams } = createInboxApp({ ...testAppProps({ streams: 'true' }), outdir: outdir() });
    const assembly = app.synth();

    // Assess: one consumer per stream source, on InboxStack's database, alarming to its topic.
    expect(streams).toBeDefined();
    expect(streams!.consumers.map((c) => [c.consumerName, c.source.kind])).toEqual([
      ['kinesis-worker', 'kinesis'],
      ['dynamodb-worker', 'dynamodb'],
      ['msk-worker', 'kafka'],
      ['kafka-worker', 'kafka'],
    ]);
    expect(streams!.database.tableKey).toBe(stack.database.tableKey);
    expect(streams!.alarms.topic).toBe(stack.alarms.topic);
    const artifact = assembly.getStackByName(streams!.stackName);
    expect(artifact.dependencies.map((d) => d.id)).toContain(stack.artifactId);
    // Each consumer's role secret rotates through InboxStack's rotation, in the cluster's VPC.
    const schedules = Object.values(artifact.template.Resources as Record<string, { Type: string }>).filter(
      (r) => r.Type === 'AWS::SecretsManager::RotationSchedule',
    );
    expect(schedules).toHaveLength(4);
  });

  it('adds InboxDsqlStack only when asked (-c dsqlEntry=<worker>), synthesized with nothing unacknowledged by cdk-nag', () => {
    expect(createInboxApp({ ...testAppProps(), outdir: outdir() }).dsql).toBeUndefined();
    const { app, dsql } = createInboxApp({ ...testAppProps({ dsqlEntry: FIXTURE_HANDLER }), outdir: outdir() });
    // The app's cdk-nag aspects fail the synth on any finding left unacknowledged.
    const template = app.synth().getStackByName(dsql!.stackName).template as { Resources: Record<string, { Type: string }> };
    const types = Object.values(template.Resources).map((resource) => resource.Type);
    expect(types).toEqual(expect.arrayContaining(['AWS::DSQL::Cluster', 'Custom::InboxDsqlSchema', 'Custom::InboxDsqlRole', 'AWS::Events::Rule']));
  });

  it('passes the Kafka clusters through -c context', () => {
    const { streams } = createInboxApp({
      ...testAppProps({
        streams: 'true',
        mskClusterArn: 'arn:aws:kafka:eu-west-1:123456789012:cluster/orders/abc-1',
        kafkaBootstrapServers: 'b-1.example.com:9096, b-2.example.com:9096',
        kafkaSecretName: 'orders/kafka',
      }),
      outdir: outdir(),
    });
    const [, , msk, kafka] = streams!.consumers;
    expect(msk!.eventSourceMapping.eventSourceArn).toBe('arn:aws:kafka:eu-west-1:123456789012:cluster/orders/abc-1');
    expect(kafka!.eventSourceMapping.selfManagedEventSource).toEqual({
      endpoints: { kafkaBootstrapServers: ['b-1.example.com:9096', 'b-2.example.com:9096'] },
    });
    expect(JSON.stringify(streams!.resolve(kafka!.eventSourceMapping.sourceAccessConfigurations))).toContain('secret:orders/kafka');
  });

  it("checks the shared cleanup's retention against the streams of the other stack", () => {
    // Arrange: a cleanup keeping rows 6 days, in the stack that owns the database; topics keeping records 7 days.
    const app = testApp();
    const inbox = new InboxStack(app, 'InboxStack', { retention: Duration.days(6) });
    new InboxStreamsStack(app, 'InboxStreamsStack', { database: inbox.database });

    // Act + Assess
    const message = synthError(inbox);
    expect(message).toContain("[InboxStack/Cleanup] InboxCleanup `retention` (6 days) does not exceed the redelivery window of consumer 'msk-worker' (7 days");
    expect(message).toContain("consumer 'kafka-worker' (7 days");
  });
});
