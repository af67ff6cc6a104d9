// An audit of the synthesized InboxStack template from outside: it reads the template file the app writes and
// shares no code with the construct tests (no test/lib/support.ts, no aws-cdk-lib/assertions). What it allows
// is written out here, so any new permission, secret reader or alarm metric shows up as a diff to review.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createInboxApp } from '../../bin/inbox-app.js';
import { cleanupHandler } from '../../lambda/functions/purge/cleanup.js';
import { DataApiSession } from '../../lambda/inbox/transport/data-api/session.js';
import { migrate } from '../../lambda/inbox/sql/schema.js';
import { EXAMPLE_ORDER_MIGRATIONS } from '../../demo/functions/example-migrations.js';
import { startDataApi } from '../../local/data-api/server.js';
import { freshDatabase } from '../support/database.js';
import { dataApiClient, lambdaContext, sqsRecord } from '../support/inbox.js';

type Resource = { Type: string; Properties?: Record<string, any>; DependsOn?: string[] };
type Template = { Resources: Record<string, Resource> };

/** A logical id without CDK's 8-hex-digit hash: stable across unrelated changes. */
const stable = (id: string) => id.replace(/[0-9A-F]{8}$/, '');

/** An intrinsic as readable text: `<Queue.Arn>`, `arn:<AWS::Partition>:rds:...:cluster:<DatabaseCluster>`. */
function show(value: unknown): string {
  if (value === null || typeof value !== 'object') return String(value);
  if (Array.isArray(value)) return value.map(show).join(' | ');
  const record = value as Record<string, any>;
  if ('Ref' in record) return `<${String(record.Ref).startsWith('AWS::') ? record.Ref : stable(record.Ref)}>`;
  if ('Fn::GetAtt' in record) return `<${stable(record['Fn::GetAtt'][0])}.${record['Fn::GetAtt'][1]}>`;
  if ('Fn::Join' in record) return (record['Fn::Join'][1] as unknown[]).map(show).join(record['Fn::Join'][0]);
  return JSON.stringify(value);
}

/** Each principal's statements as `actions -> resources`, and its managed policies as `managed <arn>`, sorted. */
function permissions(template: Template): Record<string, string[]> {
  const byRole: Record<string, string[]> = {};
  const statement = (role: string, s: { Effect: string; Action: unknown; Resource: unknown }) => {
    expect(s.Effect).toBe('Allow');
    (byRole[role] ??= []).push(`${[s.Action].flat().sort().join(' ')} -> ${[s.Resource].flat().map(show).sort().join(' , ')}`);
  };
  for (const [id, resource] of Object.entries(template.Resources)) {
    if (resource.Type !== 'AWS::IAM::Role') continue;
    for (const arn of resource.Properties!.ManagedPolicyArns ?? []) (byRole[stable(id)] ??= []).push(`managed ${show(arn['Fn::Sub'] ?? arn)}`);
    for (const policy of resource.Properties!.Policies ?? []) for (const s of policy.PolicyDocument.Statement) statement(stable(id), s);
  }
  for (const resource of Object.values(template.Resources)) {
    if (resource.Type !== 'AWS::IAM::Policy') continue;
    for (const role of resource.Properties!.Roles as Array<{ Ref: string }>) {
      for (const s of resource.Properties!.PolicyDocument.Statement) statement(stable(role.Ref), s);
    }
  }
  for (const list of Object.values(byRole)) list.sort();
  return byRole;
}

const CLUSTER = 'arn:<AWS::Partition>:rds:<AWS::Region>:<AWS::AccountId>:cluster:<DatabaseCluster>';
const TRANSACTION = 'rds-data:BeginTransaction rds-data:CommitTransaction rds-data:ExecuteStatement rds-data:RollbackTransaction';
const READ_SECRET = 'secretsmanager:DescribeSecret secretsmanager:GetSecretValue';
const WRITE_LOGS = 'logs:CreateLogStream logs:PutLogEvents';

/** Every IAM permission the stack may grant, by role. */
const ALLOWED: Record<string, string[]> = {
  OrderWorkerHandlerRole: [
    `${TRANSACTION} -> ${CLUSTER}`,
    `${WRITE_LOGS} -> <OrderWorkerHandlerLogs.Arn>`,
    `${READ_SECRET} -> <OrderWorkerDatabaseRoleSecretAttachment>`,
    'sqs:ChangeMessageVisibility sqs:DeleteMessage sqs:GetQueueAttributes sqs:GetQueueUrl sqs:ReceiveMessage -> <OrdersQueue.Arn>',
  ],
  CleanupPurgeRole: [
    `${WRITE_LOGS} -> <CleanupPurgeLogs.Arn>`,
    `${READ_SECRET} -> <CleanupDatabaseRoleSecretAttachment>`,
    `rds-data:ExecuteStatement -> ${CLUSTER}`,
  ],
  DatabaseMigrateRole: [
    `${TRANSACTION} -> ${CLUSTER}`,
    `${WRITE_LOGS} -> <DatabaseMigrateLogs.Arn>`,
    `${READ_SECRET} -> <CleanupDatabaseRoleSecretAttachment> , <DatabaseClusterSecretAttachment> , <OrderWorkerDatabaseRoleSecretAttachment>`,
  ],
  DatabaseMigrationProviderRole: [
    `${WRITE_LOGS} -> <DatabaseMigrationProviderLogs.Arn>`,
    'lambda:GetFunction lambda:InvokeFunction -> <DatabaseMigrateFunction.Arn>',
  ],
  // CDK's log-retention function for the exported PostgreSQL log: the one acknowledged wildcard.
  SqsInboxLogRetentionRole: ['logs:CreateLogGroup logs:CreateLogStream logs:DeleteRetentionPolicy logs:PutLogEvents logs:PutRetentionPolicy -> *'],
  DatabaseVpcallIAMRole: ['logs:CreateLogStream logs:DescribeLogStreams logs:PutLogEvents -> <DatabaseVpcallLogGroup.Arn>'],
  // CDK's own custom resource behind the feature flag @aws-cdk/aws-ec2:restrictDefaultSecurityGroup: it empties the
  // VPC's default security group. Not ours to change; listed so that a change to it shows here.
  CustomVpcRestrictDefaultSGCustomResourceProviderRole: [
    'managed arn:${AWS::Partition}:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole',
    'ec2:AuthorizeSecurityGroupEgress ec2:AuthorizeSecurityGroupIngress ec2:RevokeSecurityGroupEgress ec2:RevokeSecurityGroupIngress -> ' +
      'arn:<AWS::Partition>:ec2:<AWS::Region>:<AWS::AccountId>:security-group/<DatabaseVpc.DefaultSecurityGroup>',
  ],
};

/** Who may read each secret: its own function, and the migration function that sets the role's password. */
const SECRET_READERS: Record<string, string[]> = {
  InboxStackDatabaseClusterSecret75687C8F3fdaad7efa858a3daf9490cf0a702aeb: ['DatabaseMigrateRole'],
  OrderWorkerDatabaseRoleSecret: ['DatabaseMigrateRole', 'OrderWorkerHandlerRole'],
  CleanupDatabaseRoleSecret: ['CleanupPurgeRole', 'DatabaseMigrateRole'],
};

/** The AWS metrics alarms may watch, as the services publish them. */
const AWS_METRICS: Record<string, string[]> = {
  'AWS/SQS': ['ApproximateAgeOfOldestMessage', 'ApproximateNumberOfMessagesVisible'],
  'AWS/Lambda': ['Errors'],
};

interface Emitted {
  namespace: string;
  service: string;
  /** The dimension set, sorted and joined: CloudWatch matches an alarm to a metric only on all of its dimensions. */
  dimensions: string;
  metrics: Set<string>;
}

/** The embedded-metric-format lines a function printed: namespace, service dimension and metric names. */
function emittedMetrics(lines: string[]): Emitted[] {
  return lines
    .map((line) => {
      try {
        return JSON.parse(line) as Record<string, any>;
      } catch {
        return undefined;
      }
    })
    .filter((emf): emf is Record<string, any> => emf?._aws?.CloudWatchMetrics !== undefined)
    .flatMap((emf) =>
      (emf._aws.CloudWatchMetrics as Array<{ Namespace: string; Dimensions: string[][]; Metrics: Array<{ Name: string }> }>).map((set) => {
        expect(set.Dimensions.flat()).toContain('service');
        return {
          namespace: set.Namespace,
          service: String(emf.service),
          dimensions: [...set.Dimensions[0]!].sort().join(','),
          metrics: new Set(set.Metrics.map((m) => m.Name)),
        };
      }),
    );
}

/** Every metric an alarm watches: (alarm, namespace, metric name, service dimension). */
function alarmMetrics(template: Template): Array<{ alarm: string; namespace: string; name: string; service?: string; dimensions: string; threshold: number }> {
  const found: Array<{ alarm: string; namespace: string; name: string; service?: string; dimensions: string; threshold: number }> = [];
  for (const [id, resource] of Object.entries(template.Resources)) {
    if (resource.Type !== 'AWS::CloudWatch::Alarm') continue;
    const p = resource.Properties!;
    const metrics: Array<Record<string, any>> =
      p.MetricName !== undefined ? [p] : p.Metrics.filter((m: any) => m.MetricStat).map((m: any) => m.MetricStat.Metric);
    expect(metrics.length, id).toBeGreaterThan(0);
    for (const metric of metrics) {
      const service = (metric.Dimensions as Array<{ Name: string; Value: unknown }> | undefined)?.find((d) => d.Name === 'service')?.Value;
      found.push({
        alarm: stable(id),
        namespace: metric.Namespace,
        name: metric.MetricName,
        dimensions: ((metric.Dimensions as Array<{ Name: string }> | undefined) ?? [])
          .map((d) => d.Name)
          .sort()
          .join(','),
        threshold: p.Threshold,
        ...(typeof service === 'string' ? { service } : {}),
      });
    }
  }
  return found;
}

describe('the synthesized InboxStack template, audited from outside', () => {
  let outdir: string;
  let template: Template;
  const printed: string[] = [];

  beforeAll(async () => {
    // Arrange: the deployable app exactly as bin/app.ts builds it (cdk-nag included), minus esbuild and the
    // CloudFormation validator, written to disk and read back as a file.
    outdir = mkdtempSync(join(tmpdir(), 'inbox-audit-'));
    const cdkJson = JSON.parse(readFileSync(fileURLToPath(new URL('../../cdk.json', import.meta.url)), 'utf8')) as { context: Record<string, unknown> };
    const { app } = createInboxApp({
      outdir,
      builtinCloudFormationValidation: false,
      context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [], alarmEmail: 'oncall@example.com' },
    });
    app.synth();
    template = JSON.parse(readFileSync(join(outdir, 'InboxStack.template.json'), 'utf8')) as Template;

    // A real run of the deployed order worker and cleanup, configured from their environment in the template,
    // against the local Data API: what they print is what CloudWatch would receive.
    const environmentOf = (predicate: (variables: Record<string, string>) => boolean) =>
      Object.values(template.Resources)
        .filter((r) => r.Type === 'AWS::Lambda::Function')
        .map((r) => r.Properties!.Environment?.Variables as Record<string, string> | undefined)
        .find((variables) => variables !== undefined && predicate(variables))!;
    const server = await startDataApi({ databaseUrl: await freshDatabase('audit') });
    const client = dataApiClient(server);
    const local = {
      INBOX_RESOURCE_ARN: server.resourceArn,
      INBOX_SECRET_ARN: server.secretArn,
      INBOX_DATABASE: server.database,
      INBOX_DATA_API_ENDPOINT: server.endpoint,
    };
    await migrate(
      new DataApiSession(
        { ...local, resourceArn: server.resourceArn, secretArn: server.secretArn, database: server.database, client },
        { callTimeoutMs: 10_000, resumeDelaysMs: [] },
      ),
      [EXAMPLE_ORDER_MIGRATIONS],
    );
    const saved = { ...process.env };
    const log = vi.spyOn(console, 'log').mockImplementation((line: unknown) => void printed.push(String(line)));
    try {
      // POWERTOOLS_DEV: Powertools prints through the global console, where it can be read (and, with
      // POWERTOOLS_METRICS_DISABLED=false, still publishes: dev mode alone turns metrics off).
      Object.assign(
        process.env,
        environmentOf((v) => v.INBOX_CONSUMER !== undefined),
        local,
        { POWERTOOLS_DEV: 'true', POWERTOOLS_METRICS_DISABLED: 'false' },
      );
      const worker = (await import(pathToFileURL(fileURLToPath(new URL('../../demo/functions/order-worker.ts', import.meta.url))).href)) as {
        handler: (event: unknown, context: unknown) => Promise<unknown>;
      };
      const good = sqsRecord({ body: { orderId: 'order-1' }, groupId: 'g1' });
      await worker.handler({ Records: [good, good, sqsRecord({ body: 'not json', groupId: 'g2' })] }, lambdaContext());

      const cleanupEnvironment = { ...environmentOf((v) => v.INBOX_RETENTION_SECONDS !== undefined), ...local };
      Object.assign(process.env, cleanupEnvironment);
      await cleanupHandler(cleanupEnvironment)(
        undefined,
        lambdaContext(() => 300_000),
      );
    } finally {
      log.mockRestore();
      process.env = saved;
      client.destroy();
      await server.close();
    }
  }, 120_000);

  afterAll(() => {
    if (outdir !== undefined) rmSync(outdir, { recursive: true, force: true });
  });

  it('grants every IAM principal exactly the allowed actions on the allowed resources', () => {
    expect(permissions(template)).toEqual(Object.fromEntries(Object.entries(ALLOWED).map(([role, list]) => [role, [...list].sort()])));
  });

  it('lets each secret be read only by its own function and the migration function', () => {
    // Arrange: which secret an attachment stands for.
    const secretOf: Record<string, string> = {};
    for (const [id, resource] of Object.entries(template.Resources)) {
      if (resource.Type === 'AWS::SecretsManager::SecretTargetAttachment') secretOf[stable(id)] = resource.Properties!.SecretId.Ref;
    }
    const readers: Record<string, string[]> = {};
    for (const [id, resource] of Object.entries(template.Resources)) {
      if (resource.Type === 'AWS::SecretsManager::Secret') readers[id.startsWith('InboxStack') ? id : stable(id)] = [];
    }

    // Act
    for (const resource of Object.values(template.Resources)) {
      if (resource.Type !== 'AWS::IAM::Policy') continue;
      for (const statement of resource.Properties!.PolicyDocument.Statement) {
        const actions = [statement.Action].flat() as string[];
        if (!actions.some((action) => action.startsWith('secretsmanager:'))) continue;
        for (const target of [statement.Resource].flat()) {
          expect(target, 'a secret grant names its secret').toHaveProperty('Ref');
          const secret = secretOf[stable(target.Ref)] ?? target.Ref;
          const key = secret.startsWith('InboxStack') ? secret : stable(secret);
          for (const role of resource.Properties!.Roles) readers[key]!.push(stable(role.Ref));
        }
      }
    }

    // Assess
    for (const list of Object.values(readers)) list.sort();
    expect(readers).toEqual(SECRET_READERS);
    // A secret's resource policy may only deny (CDK's guard against deleting a secret that rotates).
    for (const resource of Object.values(template.Resources)) {
      if (resource.Type !== 'AWS::SecretsManager::ResourcePolicy') continue;
      for (const statement of resource.Properties!.ResourcePolicy.Statement) expect(statement.Effect).toBe('Deny');
    }
  });

  it('rotates every secret', () => {
    const rotated = Object.values(template.Resources)
      .filter((r) => r.Type === 'AWS::SecretsManager::RotationSchedule')
      .map((r) => stable(secretIdOf(template, r.Properties!.SecretId.Ref)));
    const secrets = Object.keys(template.Resources)
      .filter((id) => template.Resources[id]!.Type === 'AWS::SecretsManager::Secret')
      .map(stable);
    expect(rotated.sort()).toEqual(secrets.sort());
  });

  it('puts no password in the template: only generated secrets and dynamic references to them', () => {
    const offending: string[] = [];
    const walk = (value: unknown, path: string): void => {
      if (Array.isArray(value)) {
        for (const [i, v] of value.entries()) walk(v, `${path}[${i}]`);
        return;
      }
      if (value === null || typeof value !== 'object') return;
      for (const [key, child] of Object.entries(value)) {
        if (/password$/i.test(key)) {
          const text = show(child);
          if (!/^\{\{resolve:secretsmanager:<[A-Za-z0-9]+>:SecretString:password::\}\}$/.test(text)) offending.push(`${path}.${key} = ${text}`);
        }
        if (key === 'GenerateStringKey') expect(child).toBe('password');
        walk(child, `${path}.${key}`);
      }
    };
    walk(template, 'template');
    expect(offending).toEqual([]);
    const secretTemplates = Object.values(template.Resources)
      .filter((r) => r.Type === 'AWS::SecretsManager::Secret')
      .map((r) => Object.keys(JSON.parse(r.Properties!.GenerateSecretString.SecretStringTemplate)).sort());
    for (const keys of secretTemplates) expect(keys).not.toContain('password');
  });

  it('watches in every alarm only metrics a real run of the deployed functions emits, under their own service', () => {
    // Arrange
    const emitted = emittedMetrics(printed);
    expect(emitted.length, printed.join('\n').slice(0, 2000)).toBeGreaterThanOrEqual(2);

    // Act
    const watched = alarmMetrics(template);

    // Assess
    for (const metric of watched) {
      if (metric.namespace.startsWith('AWS/')) {
        expect(AWS_METRICS[metric.namespace], metric.alarm).toContain(metric.name);
        continue;
      }
      const publisher = emitted.find((e) => e.namespace === metric.namespace && e.service === metric.service);
      expect(publisher, `${metric.alarm}: something publishes ${metric.namespace} for service ${metric.service}`).toBeDefined();
      // The consumer's metrics carry service and source, the cleanup's service alone: an alarm on other dimensions never fires.
      expect(metric.dimensions, `${metric.alarm}: dimensions`).toBe(publisher!.dimensions);
      expect([...publisher!.metrics], metric.alarm).toContain(metric.name);
    }
    // The two alarms issue 11 adds are there, on the metrics the runtime names Parked and Failures.
    expect(watched.filter((m) => m.alarm.endsWith('Parked')).map((m) => m.name)).toEqual(['Parked']);
    expect(
      watched
        .filter((m) => m.alarm.endsWith('FailureRate'))
        .map((m) => m.name)
        .sort(),
    ).toEqual(['Duplicates', 'Failures', 'Parked', 'Processed']);
  });

  it('sends every alarm and recovery to one KMS-encrypted, TLS-only topic', () => {
    const topics = Object.entries(template.Resources).filter(([, r]) => r.Type === 'AWS::SNS::Topic');
    expect(topics).toHaveLength(1);
    const [topicId, topic] = topics[0]!;
    expect(topic.Properties!.KmsMasterKeyId).toEqual({ 'Fn::GetAtt': [expect.any(String), 'Arn'] });
    const key = template.Resources[topic.Properties!.KmsMasterKeyId['Fn::GetAtt'][0]]!;
    expect(key.Properties!.EnableKeyRotation).toBe(true);
    const policy = Object.values(template.Resources).find((r) => r.Type === 'AWS::SNS::TopicPolicy')!;
    expect(policy.Properties!.PolicyDocument.Statement).toContainEqual(
      expect.objectContaining({ Effect: 'Deny', Principal: '*', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
    );
    for (const [id, resource] of Object.entries(template.Resources)) {
      if (resource.Type !== 'AWS::CloudWatch::Alarm') continue;
      expect(resource.Properties!.AlarmActions, id).toEqual([{ Ref: topicId }]);
      expect(resource.Properties!.OKActions, id).toEqual([{ Ref: topicId }]);
    }
  });
});

/** The secret a rotation schedule's SecretId (an attachment or a secret) stands for. */
function secretIdOf(template: Template, ref: string): string {
  const resource = template.Resources[ref]!;
  return resource.Type === 'AWS::SecretsManager::SecretTargetAttachment' ? resource.Properties!.SecretId.Ref : ref;
}
