import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as rds from 'aws-cdk-lib/aws-rds';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { describe, expect, it } from 'vitest';
import { InboxDatabase } from '../../lib/index.js';
import { logicalId, policyStatements, testStack } from './support.js';

const DATA_API_ACTIONS = ['rds-data:BeginTransaction', 'rds-data:CommitTransaction', 'rds-data:ExecuteStatement', 'rds-data:RollbackTransaction'];

const SECRET_READ = ['secretsmanager:DescribeSecret', 'secretsmanager:GetSecretValue'];

const ORDERS = { name: 'orders', migrations: [{ version: 1, name: 'orders', statements: ['CREATE TABLE public.orders (order_id text PRIMARY KEY)'] }] };

function expectedFingerprint(): string {
  const hash = createHash('sha256');
  hash.update(readFileSync(fileURLToPath(new URL('../../lambda/inbox/sql/schema.ts', import.meta.url))));
  return hash.digest('hex');
}

describe('InboxDatabase', () => {
  it('creates an encrypted Aurora Serverless v2 PostgreSQL 17 cluster with the Data API, protected by default', () => {
    const stack = testStack();
    new InboxDatabase(stack, 'Db');
    const template = Template.fromStack(stack);

    template.hasResource('AWS::RDS::DBCluster', {
      Properties: Match.objectLike({
        Engine: 'aurora-postgresql',
        EngineVersion: Match.stringLikeRegexp('^17\\.'),
        EnableHttpEndpoint: true,
        StorageEncrypted: true,
        DeletionProtection: true,
        EnableIAMDatabaseAuthentication: true,
        DatabaseName: 'inbox',
        ServerlessV2ScalingConfiguration: { MinCapacity: 0.5, MaxCapacity: 2 },
        MasterUsername: Match.anyValue(),
      }),
      DeletionPolicy: 'Snapshot',
      UpdateReplacePolicy: 'Snapshot',
    });
    template.hasResourceProperties('AWS::RDS::DBInstance', { DBInstanceClass: 'db.serverless' });
    template.resourceCountIs('AWS::SecretsManager::Secret', 1);
  });

  it('picks an engine version that supports both the Data API (17.4+) and auto-pause', () => {
    const stack = testStack();
    new InboxDatabase(stack, 'Db');
    const cluster = Object.values(Template.fromStack(stack).findResources('AWS::RDS::DBCluster'))[0] as {
      Properties: { EngineVersion: string };
    };
    const [major, minor] = cluster.Properties.EngineVersion.split('.').map(Number);
    expect(major).toBe(17);
    expect(minor).toBeGreaterThanOrEqual(4);
  });

  it('auto-pauses only when asked: min capacity 0 with the pause duration', () => {
    const stack = testStack();
    new InboxDatabase(stack, 'Db', { autoPause: Duration.minutes(10), maxCapacity: 4 });
    Template.fromStack(stack).hasResourceProperties('AWS::RDS::DBCluster', {
      ServerlessV2ScalingConfiguration: { MinCapacity: 0, MaxCapacity: 4, SecondsUntilAutoPause: 600 },
    });
  });

  it('honours deletionProtection and removalPolicy', () => {
    const stack = testStack();
    new InboxDatabase(stack, 'Db', { deletionProtection: false, removalPolicy: RemovalPolicy.DESTROY });
    Template.fromStack(stack).hasResource('AWS::RDS::DBCluster', {
      Properties: Match.objectLike({ DeletionProtection: false }),
      DeletionPolicy: 'Delete',
    });
  });

  it('creates a NAT-free VPC of isolated subnets with flow logs, and places only the cluster in it', () => {
    const stack = testStack();
    new InboxDatabase(stack, 'Db');
    const template = Template.fromStack(stack);

    template.resourceCountIs('AWS::EC2::NatGateway', 0);
    template.resourceCountIs('AWS::EC2::InternetGateway', 0);
    template.resourceCountIs('AWS::EC2::Subnet', 2);
    template.allResourcesProperties('AWS::EC2::Subnet', { MapPublicIpOnLaunch: false });
    template.hasResourceProperties('AWS::EC2::FlowLog', { TrafficType: 'ALL', LogDestinationType: 'cloud-watch-logs' });
    template.allResourcesProperties('AWS::Lambda::Function', { VpcConfig: Match.absent() });
  });

  it('uses a VPC and subnets passed in instead of creating one', () => {
    const stack = testStack();
    const vpc = new ec2.Vpc(stack, 'Mine', { natGateways: 0, maxAzs: 2 });
    const db = new InboxDatabase(stack, 'Db', { vpc, vpcSubnets: { subnetType: ec2.SubnetType.PUBLIC } });
    const template = Template.fromStack(stack);

    expect(db.vpc).toBe(vpc);
    template.resourceCountIs('AWS::EC2::VPC', 1);
    // The cluster's subnet group holds exactly the selected (public) subnets, not the default isolated ones.
    const publicSubnets = vpc.publicSubnets.map((subnet) => ({ Ref: stack.getLogicalId(subnet.node.defaultChild as ec2.CfnSubnet) }));
    expect(publicSubnets).toHaveLength(2);
    template.resourceCountIs('AWS::RDS::DBSubnetGroup', 1);
    template.hasResourceProperties('AWS::RDS::DBSubnetGroup', { SubnetIds: publicSubnets });
  });

  it('keeps the generated secret whenever the cluster outlives the stack (snapshot or retain)', () => {
    const secretPolicy = (removalPolicy?: RemovalPolicy) => {
      const stack = testStack();
      new InboxDatabase(stack, 'Db', removalPolicy === undefined ? {} : { removalPolicy });
      const secrets = Object.values(Template.fromStack(stack).findResources('AWS::SecretsManager::Secret'));
      expect(secrets).toHaveLength(1);
      return [secrets[0]!.DeletionPolicy, secrets[0]!.UpdateReplacePolicy];
    };
    expect(secretPolicy()).toEqual(['Retain', 'Retain']);
    expect(secretPolicy(RemovalPolicy.SNAPSHOT)).toEqual(['Retain', 'Retain']);
    expect(secretPolicy(RemovalPolicy.RETAIN)).toEqual(['Retain', 'Retain']);
    expect(secretPolicy(RemovalPolicy.DESTROY)).toEqual(['Delete', 'Delete']);
  });

  it('applies the schema with a Provider-framework custom resource that re-runs when the migrations change', () => {
    const stack = testStack();
    const db = new InboxDatabase(stack, 'Db');
    const template = Template.fromStack(stack);

    const clusterId = stack.getLogicalId(db.cluster.node.defaultChild as rds.CfnDBCluster);
    template.hasResourceProperties('Custom::InboxMigration', {
      ServiceToken: { 'Fn::GetAtt': [Match.stringLikeRegexp('MigrationProviderframeworkonEvent'), 'Arn'] },
      ResourceArn: Match.objectLike({ 'Fn::Join': Match.arrayWith([Match.arrayWith([{ Ref: clusterId }])]) }),
      SecretArn: { Ref: Match.stringLikeRegexp('ClusterSecretAttachment') },
      Database: 'inbox',
      Migrations: 'inbox',
      Fingerprint: expectedFingerprint(),
    });
    template.hasResourceProperties('AWS::Lambda::Function', {
      Handler: 'index.handler',
      Environment: Match.absent(),
      Timeout: 300,
    });
  });

  it('always applies the inbox migration set first, and only once', () => {
    const stack = testStack();
    new InboxDatabase(stack, 'Db', { migrations: [ORDERS, 'inbox'] });
    Template.fromStack(stack).hasResourceProperties('Custom::InboxMigration', { Migrations: 'inbox,orders' });
  });

  it('orders the migration after the writer instance, not just the cluster', () => {
    const stack = testStack();
    new InboxDatabase(stack, 'Db');
    const template = Template.fromStack(stack);
    const writerId = Object.keys(template.findResources('AWS::RDS::DBInstance'))[0]!;
    template.hasResource('Custom::InboxMigration', { DependsOn: Match.arrayWith([writerId]) });
  });

  it('lets the migration handler use the Data API on this cluster and read this secret, nothing more', () => {
    const stack = testStack();
    const db = new InboxDatabase(stack, 'Db');
    const template = Template.fromStack(stack);
    const clusterId = stack.getLogicalId(db.cluster.node.defaultChild as rds.CfnDBCluster);
    const roleId = stack.getLogicalId(db.migrationFunction.role!.node.defaultChild as never);

    const policy = Object.values(
      template.findResources('AWS::IAM::Policy', {
        Properties: { Roles: [{ Ref: roleId }] },
      }),
    )[0] as { Properties: { PolicyDocument: { Statement: Array<Record<string, unknown>> } } };
    const statements = policy.Properties.PolicyDocument.Statement;
    expect(statements).toContainEqual(
      expect.objectContaining({
        Action: DATA_API_ACTIONS,
        Resource: expect.objectContaining({ 'Fn::Join': expect.arrayContaining([expect.arrayContaining([{ Ref: clusterId }])]) }),
      }),
    );
    expect(statements).toContainEqual(
      expect.objectContaining({
        Action: SECRET_READ,
        Resource: { Ref: expect.stringMatching(/ClusterSecretAttachment/) },
      }),
    );
    for (const statement of statements) expect(JSON.stringify(statement.Resource)).not.toMatch(/\*/);
  });

  it('gives every function, including the Provider framework, its own log group with a retention', () => {
    const stack = testStack();
    new InboxDatabase(stack, 'Db');
    const template = Template.fromStack(stack);
    const functions = template.findResources('AWS::Lambda::Function');
    const logGroups = template.findResources('AWS::Logs::LogGroup');
    for (const [id, fn] of Object.entries(functions)) {
      if (id.startsWith('CustomVpcRestrictDefaultSG')) continue; // CDK's own singleton, not ours
      // CDK's log-retention singleton gives its own log group a 1-day retention itself, on its first run.
      if (id.startsWith('LogRetentionaae0aa3c5b4d4f87b02d85b201efdd8a')) continue;
      const ref = (fn as { Properties: { LoggingConfig?: { LogGroup?: { Ref: string } } } }).Properties.LoggingConfig?.LogGroup?.Ref;
      expect(ref, `${id} has an explicit log group`).toBeDefined();
      expect((logGroups[ref!] as { Properties: { RetentionInDays?: number } }).Properties.RetentionInDays).toBe(30);
    }
  });

  it('uses an existing cluster and secret without creating a cluster, VPC or secret', () => {
    const stack = testStack();
    const cluster = rds.DatabaseCluster.fromDatabaseClusterAttributes(stack, 'Existing', {
      clusterIdentifier: 'orders',
      dataApiEnabled: true,
    });
    const secret = secretsmanager.Secret.fromSecretCompleteArn(stack, 'Secret', 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:orders-AbCdEf');
    const db = new InboxDatabase(stack, 'Db', { cluster, secret, databaseName: 'orders' });
    const template = Template.fromStack(stack);

    expect(db.cluster).toBe(cluster);
    template.resourceCountIs('AWS::RDS::DBCluster', 0);
    template.resourceCountIs('AWS::EC2::VPC', 0);
    template.resourceCountIs('AWS::SecretsManager::Secret', 0);
    template.hasResourceProperties('Custom::InboxMigration', {
      SecretArn: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:orders-AbCdEf',
      Database: 'orders',
    });
    expect(policyStatements(template)).toContainEqual(
      expect.objectContaining({ Action: SECRET_READ, Resource: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:orders-AbCdEf' }),
    );
  });

  it('refuses an existing cluster whose Data API is not enabled, naming the fix', () => {
    const stack = testStack();
    const cluster = rds.DatabaseCluster.fromDatabaseClusterAttributes(stack, 'Existing', { clusterIdentifier: 'orders' });
    const secret = secretsmanager.Secret.fromSecretNameV2(stack, 'Secret', 'orders');
    expect(() => new InboxDatabase(stack, 'Db', { cluster, secret })).toThrow(/does not have the Data API enabled.*Fix: .*dataApiEnabled: true/s);
  });

  it('refuses a cluster without a secret, and new-cluster props next to an existing cluster, all at once', () => {
    const stack = testStack();
    const cluster = rds.DatabaseCluster.fromDatabaseClusterAttributes(stack, 'Existing', {
      clusterIdentifier: 'orders',
      dataApiEnabled: true,
    });
    let message = '';
    try {
      new InboxDatabase(stack, 'Db', { cluster, autoPause: Duration.minutes(5), minCapacity: 1 });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain('`cluster` was given without `secret`. Fix: pass the Secrets Manager `secret`');
    expect(message).toContain('`minCapacity`, `autoPause` only apply to a new cluster');
    expect(message).toContain('`autoPause` needs a minimum capacity of 0 ACUs, but `minCapacity` is 1. Fix:');
  });

  it('exposes the created resources', () => {
    const stack = testStack();
    const db = new InboxDatabase(stack, 'Db');
    expect(db.cluster).toBeInstanceOf(rds.DatabaseCluster);
    expect(db.databaseName).toBe('inbox');
    expect(db.migration.node.id).toBe('Migration');
    expect(logicalId(stack, db.migrationFunction)).toMatch(/^DbMigrateFunction/);
  });
});
