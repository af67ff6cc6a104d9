import type { Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import { Duration } from 'aws-cdk-lib';
import * as rds from 'aws-cdk-lib/aws-rds';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { connectToPostgres, InboxConsumer, InboxDatabase, InboxDatabaseProxy, InboxFunction, InboxSources } from '../../lib/index.js';
import { InboxProxyStack } from '../../demo/stacks/inbox-proxy-stack.js';
import { FIXTURE_HANDLER, policyStatements, synthError, testApp, testStack } from './support.js';

type Resource = { Properties: Record<string, any> };

let app: ReturnType<typeof testApp>;
let stack: InboxProxyStack;
let template: Template;
const ids = { consumerRole: '', consumerSg: '', proxySg: '', proxyRole: '', proxy: '', roleSecret: '' };
beforeAll(() => {
  app = testApp();
  stack = new InboxProxyStack(app, 'InboxProxyStack');
  template = Template.fromStack(stack);
  ids.consumerRole = stack.getLogicalId(stack.consumer.function.role!.node.defaultChild as never);
  ids.consumerSg = stack.getLogicalId(stack.consumer.securityGroup!.node.defaultChild as never);
  ids.proxySg = stack.getLogicalId(stack.proxy.securityGroup.node.defaultChild as never);
  ids.proxyRole = stack.getLogicalId(stack.proxy.role.node.defaultChild as never);
  ids.proxy = stack.getLogicalId(stack.proxy.proxy);
  ids.roleSecret = stack.getLogicalId(stack.consumer.databaseRole.secret.node.defaultChild as never);
});

/** The statements of the policies attached to one role. */
const statementsOf = (roleId: string) =>
  Object.values(template.findResources('AWS::IAM::Policy') as Record<string, Resource>)
    .filter((policy) => JSON.stringify(policy.Properties.Roles).includes(`"${roleId}"`))
    .flatMap((policy) => policy.Properties.PolicyDocument.Statement as Array<Record<string, any>>);

describe('InboxDatabaseProxy: the consumer on the wire through RDS Proxy', () => {
  it('requires TLS, and IAM authentication for the one database role its consumer signs in as', () => {
    template.hasResourceProperties('AWS::RDS::DBProxy', {
      EngineFamily: 'POSTGRESQL',
      RequireTLS: true,
      Auth: [
        {
          AuthScheme: 'SECRETS',
          IAMAuth: 'REQUIRED',
          ClientPasswordAuthType: 'POSTGRES_SCRAM_SHA_256',
          SecretArn: { Ref: Match.stringLikeRegexp(`^${ids.roleSecret.slice(0, 20)}`) },
        },
      ],
    });
    // The target registers once the writer instance is up.
    const [targetGroup] = Object.values(template.findResources('AWS::RDS::DBProxyTargetGroup') as Record<string, Resource & { DependsOn?: string[] }>);
    expect(targetGroup!.Properties).toMatchObject({ TargetGroupName: 'default', DBClusterIdentifiers: [{ Ref: expect.stringMatching(/^DatabaseCluster/) }] });
    expect(targetGroup!.DependsOn).toEqual(expect.arrayContaining([expect.stringMatching(/^DatabaseClusterwriter/)]));
    // Only the proxy's role reads the role's secret; the function does not.
    expect(JSON.stringify(statementsOf(ids.proxyRole))).toContain('secretsmanager:GetSecretValue');
    expect(JSON.stringify(statementsOf(ids.consumerRole))).not.toContain('secretsmanager:');
  });

  it('lets the consumer rds-db:connect through the proxy as its own role only, and call no Data API', () => {
    const statements = statementsOf(ids.consumerRole);
    const connect = statements.filter((statement) => statement.Action === 'rds-db:connect');
    expect(connect).toHaveLength(1);
    const arn = JSON.stringify(connect[0]!.Resource);
    expect(arn).toContain(':rds-db:');
    expect(arn).toContain(':dbuser:');
    expect(arn).toContain(`"/inbox_consumer_order_worker"`);
    expect(arn).toContain(`"${ids.proxy}","DBProxyArn"`);
    expect(JSON.stringify(statements)).not.toMatch(/rds-data:|rds-db:\*|"\*"\s*,?\s*"Resource"/);
    expect(JSON.stringify(policyStatements(template))).not.toContain('rds-db:connect","Resource":"*"');
  });

  it('tells the handler where to connect, and nothing of the Data API', () => {
    const fn = Object.values(template.findResources('AWS::Lambda::Function') as Record<string, Resource>).find(
      (resource) => resource.Properties.Environment?.Variables?.INBOX_CONSUMER === 'order-worker',
    )!;
    const env = fn.Properties.Environment.Variables;
    expect(env).toMatchObject({
      INBOX_PG_HOST: { 'Fn::GetAtt': [ids.proxy, 'Endpoint'] },
      INBOX_PG_PORT: '5432',
      INBOX_PG_DATABASE: 'inbox',
      INBOX_PG_USER: 'inbox_consumer_order_worker',
      INBOX_PG_IAM_AUTH: 'true',
    });
    expect(env.INBOX_RESOURCE_ARN).toBeUndefined();
    expect(env.INBOX_SECRET_ARN).toBeUndefined();
    expect(fn.Properties.VpcConfig.SecurityGroupIds).toEqual([{ 'Fn::GetAtt': [ids.consumerSg, 'GroupId'] }]);
  });

  it('opens the network from the consumer to the proxy, and from the proxy to the cluster, on their ports only', () => {
    const consumerSg = template.findResources('AWS::EC2::SecurityGroup')[ids.consumerSg] as Resource;
    expect(JSON.stringify(consumerSg.Properties.SecurityGroupEgress ?? [])).not.toContain('0.0.0.0/0');
    const egress = Object.values(template.findResources('AWS::EC2::SecurityGroupEgress') as Record<string, Resource>)
      .map((rule) => rule.Properties)
      .filter((rule) => JSON.stringify(rule.GroupId).includes(ids.consumerSg));
    expect(egress).toEqual([
      expect.objectContaining({ DestinationSecurityGroupId: { 'Fn::GetAtt': [ids.proxySg, 'GroupId'] }, FromPort: 5432, ToPort: 5432, IpProtocol: 'tcp' }),
    ]);
    template.hasResourceProperties('AWS::EC2::SecurityGroupIngress', {
      GroupId: { 'Fn::GetAtt': [ids.proxySg, 'GroupId'] },
      SourceSecurityGroupId: { 'Fn::GetAtt': [ids.consumerSg, 'GroupId'] },
      FromPort: 5432,
    });
    template.hasResourceProperties('AWS::EC2::SecurityGroupEgress', {
      GroupId: { 'Fn::GetAtt': [ids.proxySg, 'GroupId'] },
      DestinationSecurityGroupId: Match.anyValue(),
      FromPort: { 'Fn::GetAtt': [Match.anyValue(), 'Endpoint.Port'] },
    });
  });

  it("alarms on the proxy's refused sign-ins and its waits for a connection, to the stack's alarm topic", () => {
    for (const [metric, threshold] of [
      ['ClientConnectionsSetupFailedAuth', 0],
      ['DatabaseConnectionsBorrowLatency', 100_000],
    ] as const) {
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Namespace: 'AWS/RDS',
        MetricName: metric,
        Dimensions: [{ Name: 'ProxyName', Value: { Ref: ids.proxy } }],
        Threshold: threshold,
        AlarmActions: [{ Ref: Match.stringLikeRegexp('^AlarmsTopic') }],
      });
    }
  });

  it('keeps the Data API path for the migrations and the purge', () => {
    const cleanupRole = stack.getLogicalId(stack.cleanup.function.role!.node.defaultChild as never);
    expect(JSON.stringify(statementsOf(cleanupRole))).toContain('rds-data:ExecuteStatement');
    template.resourceCountIs('Custom::InboxMigration', 1);
    template.resourceCountIs('Custom::InboxDatabaseRole', 2);
  });

  it('is clean under cdk-nag AwsSolutions', () => {
    const violations = new AwsSolutionsChecks()
      .validateScope(app)
      .violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath).join(',')}`);
    expect(violations).toEqual([]);
  });

  it('refuses a proxy of another database, a Data API prop beside it, and a proxy nobody uses', () => {
    const mine = testStack('Refused');
    const database = new InboxDatabase(mine, 'Db');
    const other = new InboxDatabase(mine, 'Other');
    const proxy = new InboxDatabaseProxy(mine, 'Proxy', { database: other });
    const queue = new sqs.Queue(mine, 'Q');
    expect(
      () =>
        new InboxConsumer(mine, 'Worker', { database, proxy, source: InboxSources.sqs(queue), consumerName: 'w', entry: FIXTURE_HANDLER, batchExecute: true }),
    ).toThrow(/`proxy` Refused\/Proxy fronts the cluster of Refused\/Other[\s\S]*`batchExecute` grants a Data API action/);
    expect(synthError(mine as Stack)).toMatch(/InboxDatabaseProxy Refused\/Proxy: no consumer uses this proxy[\s\S]*Fix: pass it as `proxy`/);
    const imported = testStack('Imported');
    const importedDatabase = new InboxDatabase(imported, 'Db', {
      cluster: rds.DatabaseCluster.fromDatabaseClusterAttributes(imported, 'Cluster', { clusterIdentifier: 'orders', dataApiEnabled: true }),
      secret: secretsmanager.Secret.fromSecretNameV2(imported, 'Secret', 'orders-admin'),
    });
    expect(() => new InboxDatabaseProxy(imported, 'Proxy', { database: importedDatabase })).toThrow(
      /the database's cluster is imported, so its VPC is not known here. Fix: pass `vpc`/,
    );
    expect(() => new InboxDatabaseProxy(testStack('Idle'), 'P', { database: new InboxDatabase(testStack('X'), 'Db'), maxConnectionsPercent: 0 })).toThrow(
      /`maxConnectionsPercent` must be a whole number from 1 to 100, got 0/,
    );
  });
});

describe('connectToPostgres: a PostgreSQL of your own', () => {
  it('hands the function the connection settings and the secret, and lets it read that secret only', () => {
    const mine = testStack('Own');
    const secret = new secretsmanager.Secret(mine, 'OrdersDbSecret');
    const worker = new InboxFunction(mine, 'Worker', {
      entry: FIXTURE_HANDLER,
      environment: { INBOX_CONSUMER: 'orders' },
      timeout: Duration.seconds(30),
      description: 'orders',
    });
    connectToPostgres(worker.function, { host: 'orders.abc123.eu-west-1.rds.amazonaws.com', databaseName: 'orders', secret });
    const own = Template.fromStack(mine);
    own.hasResourceProperties('AWS::Lambda::Function', {
      Environment: {
        Variables: {
          INBOX_CONSUMER: 'orders',
          INBOX_PG_HOST: 'orders.abc123.eu-west-1.rds.amazonaws.com',
          INBOX_PG_PORT: '5432',
          INBOX_PG_DATABASE: 'orders',
          INBOX_PG_SECRET_ARN: { Ref: mine.getLogicalId(secret.node.defaultChild as never) },
        },
      },
    });
    const reads = policyStatements(own).filter((statement) => JSON.stringify(statement.Action).includes('secretsmanager:GetSecretValue'));
    expect(reads.map((statement) => statement.Resource)).toEqual([{ Ref: mine.getLogicalId(secret.node.defaultChild as never) }]);
    expect(() => connectToPostgres(worker.function, { host: 'postgres://x', port: 70_000, databaseName: 'orders', secret })).toThrow(
      /`host` 'postgres:\/\/x' is not a host name[\s\S]*`port` 70000 is not a port number/,
    );
  });
});
