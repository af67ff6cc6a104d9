import { Duration, Validations } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as rds from 'aws-cdk-lib/aws-rds';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { describe, expect, it } from 'vitest';
import { InboxDatabase } from '../../lib/index.js';
import type { InboxDatabaseProps } from '../../lib/index.js';
import { testStack } from './support.js';

function databaseStack(props: InboxDatabaseProps = {}) {
  const stack = testStack();
  const database = new InboxDatabase(stack, 'Db', props);
  return { stack, database, template: Template.fromStack(stack) };
}

function acknowledged(construct: { node: { metadata: Array<{ type: string; data: unknown }> } }): string[] {
  return construct.node.metadata
    .filter((m) => m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
    .flatMap((m) => Object.keys(m.data as Record<string, string>).map((id) => id.replace(/^Annotation::/, '')));
}

function constructionError(props: InboxDatabaseProps): string {
  try {
    new InboxDatabase(testStack(), 'Db', props);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('expected InboxDatabase to refuse the props');
}

describe('InboxDatabase production defaults', () => {
  it('keeps automated backups 7 days unless told otherwise', () => {
    databaseStack().template.hasResourceProperties('AWS::RDS::DBCluster', { BackupRetentionPeriod: 7 });
    databaseStack({ backupRetention: Duration.days(21) }).template.hasResourceProperties('AWS::RDS::DBCluster', { BackupRetentionPeriod: 21 });
  });

  it('exports the PostgreSQL log to CloudWatch Logs with a one-month retention, or as told, or not at all', () => {
    const { template } = databaseStack();
    template.hasResourceProperties('AWS::RDS::DBCluster', { EnableCloudwatchLogsExports: ['postgresql'] });
    template.hasResourceProperties('Custom::LogRetention', {
      LogGroupName: { 'Fn::Join': ['', ['/aws/rds/cluster/', { Ref: Match.stringLikeRegexp('^DbCluster') }, '/postgresql']] },
      RetentionInDays: 30,
    });
    databaseStack({ postgresLogRetention: logs.RetentionDays.ONE_YEAR }).template.hasResourceProperties('Custom::LogRetention', { RetentionInDays: 365 });
    const off = databaseStack({ exportPostgresLogs: false }).template;
    off.hasResourceProperties('AWS::RDS::DBCluster', { EnableCloudwatchLogsExports: Match.absent() });
    off.resourceCountIs('Custom::LogRetention', 0);
  });

  it('sets the log retention with a role of its own, not AWSLambdaBasicExecutionRole', () => {
    const { template, stack } = databaseStack();
    const retentionFunction = Object.values(template.findResources('AWS::Lambda::Function')).find((fn) => JSON.stringify(fn).includes('LogRetention')) as {
      Properties: { Role: { 'Fn::GetAtt': [string, string] } };
    };
    const roleId = retentionFunction.Properties.Role['Fn::GetAtt'][0];
    expect(roleId).toBe(stack.getLogicalId(stack.node.findChild('SqsInboxLogRetentionRole').node.defaultChild as never));
    expect(template.toJSON().Resources[roleId].Properties.ManagedPolicyArns).toBeUndefined();
  });

  it('gives the cluster a security group without egress: it only answers connections', () => {
    const { template, stack, database } = databaseStack();
    const groupId = stack.getLogicalId(database.securityGroup!.node.defaultChild as never);
    template.hasResourceProperties('AWS::RDS::DBCluster', { VpcSecurityGroupIds: [{ 'Fn::GetAtt': [groupId, 'GroupId'] }] });
    // CDK's placeholder for "no egress": one rule that matches no traffic.
    expect(template.toJSON().Resources[groupId].Properties.SecurityGroupEgress).toEqual([
      { CidrIp: '255.255.255.255/32', Description: 'Disallow all traffic', FromPort: 252, IpProtocol: 'icmp', ToPort: 86 },
    ]);
    template.resourceCountIs('AWS::EC2::SecurityGroupEgress', 2); // the rotation functions' only two ways out
    for (const egress of Object.values(template.findResources('AWS::EC2::SecurityGroupEgress'))) {
      expect((egress as { Properties: { GroupId: unknown } }).Properties.GroupId).not.toEqual({ 'Fn::GetAtt': [groupId, 'GroupId'] });
    }
  });

  it('uses security groups passed in instead', () => {
    const stack = testStack();
    const vpc = new ec2.Vpc(stack, 'Vpc', { natGateways: 0, subnetConfiguration: [{ name: 'i', subnetType: ec2.SubnetType.PRIVATE_ISOLATED }] });
    const mine = new ec2.SecurityGroup(stack, 'Mine', { vpc });
    const database = new InboxDatabase(stack, 'Db', { vpc, securityGroups: [mine] });
    expect(database.securityGroup).toBeUndefined();
    Template.fromStack(stack).hasResourceProperties('AWS::RDS::DBCluster', {
      VpcSecurityGroupIds: [{ 'Fn::GetAtt': [stack.getLogicalId(mine.node.defaultChild as never), 'GroupId'] }],
    });
  });

  it('adds a reader in the writer promotion tier only when asked', () => {
    databaseStack().template.resourceCountIs('AWS::RDS::DBInstance', 1);
    const { template } = databaseStack({ readerInstance: true });
    template.resourceCountIs('AWS::RDS::DBInstance', 2);
    const tiers = Object.values(template.findResources('AWS::RDS::DBInstance')).map(
      (i) => (i as { Properties: { PromotionTier: number } }).Properties.PromotionTier,
    );
    expect(tiers.sort()).toEqual([0, 1]); // scaleWithWriter: tiers 0-1 follow the writer's capacity
  });

  it('rotates the master secret every 30 days in the VPC, through a Secrets Manager endpoint, after the migration', () => {
    const { template, stack, database } = databaseStack();
    const rotationGroup = stack.getLogicalId(database.rotation!.securityGroup.node.defaultChild as never);
    template.hasResourceProperties('AWS::SecretsManager::RotationSchedule', {
      SecretId: { Ref: Match.stringLikeRegexp('^DbClusterSecretAttachment') },
      RotationRules: { ScheduleExpression: 'rate(30 days)' },
      HostedRotationLambda: Match.objectLike({ RotationType: 'PostgreSQLSingleUser', VpcSecurityGroupIds: { 'Fn::GetAtt': [rotationGroup, 'GroupId'] } }),
    });
    template.hasResource('AWS::SecretsManager::RotationSchedule', {
      DependsOn: Match.arrayWith([stack.getLogicalId(database.migration.node.defaultChild as never)]),
    });
    template.hasResourceProperties('AWS::EC2::VPCEndpoint', {
      ServiceName: { 'Fn::Join': ['', ['com.amazonaws.', { Ref: 'AWS::Region' }, '.secretsmanager']] },
      PrivateDnsEnabled: true,
      VpcEndpointType: 'Interface',
    });
    // The rotation functions may reach the cluster's port and the endpoint's HTTPS, nothing else.
    const clusterGroup = stack.getLogicalId(database.securityGroup!.node.defaultChild as never);
    const endpointGroup = stack.getLogicalId(database.rotation!.node.findChild('EndpointSecurityGroup').node.defaultChild as never);
    const egress = Object.values(template.findResources('AWS::EC2::SecurityGroupEgress')).map((e) => (e as { Properties: Record<string, any> }).Properties);
    expect(egress).toHaveLength(2);
    expect(egress.map((e) => [e.GroupId, e.DestinationSecurityGroupId, e.FromPort])).toEqual(
      expect.arrayContaining([
        [
          { 'Fn::GetAtt': [rotationGroup, 'GroupId'] },
          { 'Fn::GetAtt': [clusterGroup, 'GroupId'] },
          { 'Fn::GetAtt': [expect.stringMatching(/^DbCluster/), 'Endpoint.Port'] },
        ],
        [{ 'Fn::GetAtt': [rotationGroup, 'GroupId'] }, { 'Fn::GetAtt': [endpointGroup, 'GroupId'] }, 443],
      ]),
    );
    expect(template.toJSON().Resources[rotationGroup].Properties.SecurityGroupEgress).toBeUndefined();
    expect(acknowledged(database.cluster)).not.toContain('AwsSolutions-SMG4');
  });

  it('rotates on another interval when told, and leaves the endpoint to a VPC passed in', () => {
    const stack = testStack();
    const vpc = new ec2.Vpc(stack, 'Vpc', { natGateways: 0, subnetConfiguration: [{ name: 'i', subnetType: ec2.SubnetType.PRIVATE_ISOLATED }] });
    new InboxDatabase(stack, 'Db', { vpc, rotationInterval: Duration.days(7) });
    const template = Template.fromStack(stack);
    template.hasResourceProperties('AWS::SecretsManager::RotationSchedule', { RotationRules: { ScheduleExpression: 'rate(7 days)' } });
    template.resourceCountIs('AWS::EC2::VPCEndpoint', 0);
    // Without the endpoint, the rotation functions reach Secrets Manager over the VPC's own route: HTTPS only.
    template.hasResourceProperties('AWS::EC2::SecurityGroup', {
      GroupDescription: Match.stringLikeRegexp('rotation functions'),
      SecurityGroupEgress: [Match.objectLike({ CidrIp: '0.0.0.0/0', FromPort: 443, ToPort: 443, IpProtocol: 'tcp' })],
    });
  });

  it('acknowledges the missing rotation with its reason when rotation is turned off, and only then', () => {
    const { template, database } = databaseStack({ secretRotation: false });
    template.resourceCountIs('AWS::SecretsManager::RotationSchedule', 0);
    template.resourceCountIs('AWS::EC2::VPCEndpoint', 0);
    expect(database.rotation).toBeUndefined();
    expect(acknowledged(database.secret)).toEqual(['AwsSolutions-SMG4']);
    expect(acknowledged(databaseStack().database.secret)).toEqual([]);
  });

  it('refuses impossible values of the new props, naming each and the fix, all at once', () => {
    const message = constructionError({
      backupRetention: Duration.days(36),
      rotationInterval: Duration.hours(12),
      exportPostgresLogs: false,
      postgresLogRetention: logs.RetentionDays.ONE_DAY,
    });
    expect(message).toContain('`backupRetention` must be whole days from 1 to 35 (what Aurora accepts), got 36 days. Fix:');
    expect(message).toContain('`rotationInterval` must be whole days from 1 to 1000 (what Secrets Manager accepts), got 12 hours. Fix:');
    expect(message).toContain('`postgresLogRetention` only applies when the log is exported, but `exportPostgresLogs` is false. Fix:');
    expect(constructionError({ secretRotation: false, rotationInterval: Duration.days(3) })).toContain(
      '`rotationInterval` and `secretsManagerEndpoint` only apply with rotation on, but `secretRotation` is false. Fix:',
    );
  });

  it('refuses the new-cluster props next to an existing cluster', () => {
    const stack = testStack();
    const cluster = rds.DatabaseCluster.fromDatabaseClusterAttributes(stack, 'C', { clusterIdentifier: 'orders', dataApiEnabled: true });
    const secret = secretsmanager.Secret.fromSecretNameV2(stack, 'S', 'orders');
    expect(() => new InboxDatabase(stack, 'Db', { cluster, secret, backupRetention: Duration.days(7), readerInstance: true, secretRotation: true })).toThrow(
      '`backupRetention`, `readerInstance`, `secretRotation` only apply to a new cluster, but `cluster` was given.',
    );
  });

  it("rotates the roles' secrets on an existing cluster through the rotation passed in, and only with a cluster", () => {
    const stack = testStack();
    const owner = new InboxDatabase(stack, 'Owner');
    const shared = new InboxDatabase(stack, 'Shared', { cluster: owner.cluster, secret: owner.secret, rotation: owner.rotation! });
    expect(shared.rotation).toBe(owner.rotation);
    expect(constructionError({ rotation: owner.rotation! })).toContain('`rotation` is the rotation of an existing `cluster`, but none was given. Fix:');
  });

  it('acknowledges the missing rotation of an existing cluster, whose network it does not know', () => {
    const stack = testStack();
    const cluster = rds.DatabaseCluster.fromDatabaseClusterAttributes(stack, 'C', { clusterIdentifier: 'orders', dataApiEnabled: true });
    const secret = secretsmanager.Secret.fromSecretNameV2(stack, 'S', 'orders');
    const database = new InboxDatabase(stack, 'Db', { cluster, secret });
    expect(database.rotation).toBeUndefined();
    expect(acknowledged(secret)).toEqual(['AwsSolutions-SMG4']);
  });

  it('lets the migration framework invoke only the migration handler: no <arn>:* versions wildcard', () => {
    const { template, stack, database } = databaseStack();
    const roleId = stack.getLogicalId(database.node.findChild('MigrationProviderRole').node.defaultChild as never);
    const statements = Object.values(template.findResources('AWS::IAM::Policy', { Properties: { Roles: [{ Ref: roleId }] } })).flatMap(
      (p) => (p as { Properties: { PolicyDocument: { Statement: Array<{ Action: unknown; Resource: unknown }> } } }).Properties.PolicyDocument.Statement,
    );
    expect(statements).toContainEqual(
      expect.objectContaining({
        Action: ['lambda:GetFunction', 'lambda:InvokeFunction'],
        Resource: { 'Fn::GetAtt': [stack.getLogicalId(database.migrationFunction.node.defaultChild as never), 'Arn'] },
      }),
    );
    expect(JSON.stringify(statements)).not.toContain('*');
  });
});
