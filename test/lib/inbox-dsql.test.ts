import { Match, Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import { Duration } from 'aws-cdk-lib';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { InboxDsqlConsumer, InboxDsqlDatabase } from '../../lib/index.js';
import { InboxDsqlStack } from '../../demo/stacks/inbox-dsql-stack.js';
import { FIXTURE_HANDLER, synthError, testApp, testStack } from './support.js';

type Resource = { Properties: Record<string, any>; DeletionPolicy?: string };

let app: ReturnType<typeof testApp>;
let stack: InboxDsqlStack;
let template: Template;
const ids = { cluster: '', consumerRole: '', roleFunctionRole: '' };
beforeAll(() => {
  app = testApp();
  stack = new InboxDsqlStack(app, 'InboxDsqlStack', { entry: FIXTURE_HANDLER });
  template = Template.fromStack(stack);
  ids.cluster = stack.getLogicalId(stack.database.cluster);
  ids.consumerRole = stack.getLogicalId(stack.consumer.function.role!.node.defaultChild as never);
  ids.roleFunctionRole = stack.getLogicalId(stack.database.roleFunction.role.node.defaultChild as never);
});

/** Every IAM statement, with the roles its policy is attached to. */
const statements = () =>
  Object.values(template.findResources('AWS::IAM::Policy') as Record<string, Resource>).flatMap((policy) =>
    (policy.Properties.PolicyDocument.Statement as Array<Record<string, any>>).map((statement) => ({
      statement,
      roles: JSON.stringify(policy.Properties.Roles),
    })),
  );

describe('InboxDsqlDatabase and InboxDsqlConsumer: the inbox on Aurora DSQL', () => {
  it('creates the cluster with deletion protection, kept when it leaves the stack', () => {
    const cluster = template.findResources('AWS::DSQL::Cluster')[ids.cluster] as Resource;
    expect(cluster.Properties).toEqual({ DeletionProtectionEnabled: true });
    expect(cluster.DeletionPolicy).toBe('Retain');
  });

  it('lets the consumer dsql:DbConnect on its cluster only, and nothing but the role function DbConnectAdmin', () => {
    const all = statements();
    const connect = all.filter(({ statement }) => JSON.stringify(statement.Action).includes('dsql:'));
    expect(
      connect.map(({ statement, roles }) => [
        statement.Action,
        statement.Resource,
        roles.includes(ids.consumerRole) ? 'consumer' : roles.includes(ids.roleFunctionRole) ? 'role function' : roles,
      ]),
    ).toEqual(
      expect.arrayContaining([
        ['dsql:DbConnect', { 'Fn::GetAtt': [ids.cluster, 'ResourceArn'] }, 'consumer'],
        ['dsql:DbConnectAdmin', { 'Fn::GetAtt': [ids.cluster, 'ResourceArn'] }, 'role function'],
      ]),
    );
    expect(connect).toHaveLength(2);
    expect(JSON.stringify(all.filter(({ roles }) => roles.includes(ids.consumerRole)).map(({ statement }) => statement))).not.toMatch(
      /DbConnectAdmin|rds-data:|secretsmanager:/,
    );
  });

  it('maps the consumer role to the function IAM role at deploy, before the function exists', () => {
    const mapping = Object.values(template.findResources('Custom::InboxDsqlRole') as Record<string, Resource>);
    expect(mapping).toHaveLength(1);
    const properties = mapping[0]!.Properties;
    expect(properties.Role).toBe('inbox_consumer_order_worker');
    expect(properties.IamRoleArn).toEqual({ 'Fn::GetAtt': [ids.consumerRole, 'Arn'] });
    const sql = JSON.stringify(properties.Statements);
    expect(sql).toContain('CREATE ROLE \\\\\\"inbox_consumer_order_worker\\\\\\" WITH LOGIN');
    expect(sql).toContain('AWS IAM GRANT \\\\\\"inbox_consumer_order_worker\\\\\\" TO \'');
    expect(sql).toContain('GRANT SELECT, INSERT, UPDATE ON \\\\\\"public\\\\\\".\\\\\\"orders\\\\\\"');
    const fn = Object.entries(template.findResources('AWS::Lambda::Function') as Record<string, Resource & { DependsOn?: string[] }>).find(
      ([, resource]) => resource.Properties.Environment?.Variables?.INBOX_CONSUMER === 'order-worker',
    )![1];
    expect(fn.DependsOn).toEqual(expect.arrayContaining([stack.getLogicalId(stack.consumer.roleMapping.node.defaultChild as never)]));
    expect(fn.Properties.Environment.Variables).toMatchObject({
      INBOX_DSQL_ENDPOINT: { 'Fn::Join': ['', [{ 'Fn::GetAtt': [ids.cluster, 'Identifier'] }, '.dsql.', { Ref: 'AWS::Region' }, '.on.aws']] },
      INBOX_DSQL_REGION: { Ref: 'AWS::Region' },
      INBOX_DSQL_USER: 'inbox_consumer_order_worker',
    });
    expect(fn.Properties.VpcConfig).toBeUndefined();
  });

  it("alarms on the consumer as on Aurora: its dead-letter queue, its function's errors and its inbox metrics", () => {
    const dlq = stack.getLogicalId(stack.queue.deadLetterQueue!.node.defaultChild as never);
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [dlq, 'QueueName'] } }],
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { Namespace: 'AWS/Lambda', MetricName: 'Errors' });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'SqsInbox',
      Dimensions: Match.arrayWith([
        { Name: 'service', Value: 'order-worker' },
        { Name: 'source', Value: 'sqs' },
      ]),
    });
  });

  it('alarms on the cluster OCC conflicts and query timeouts', () => {
    for (const metric of ['OccConflicts', 'QueryTimeouts']) {
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Namespace: 'AWS/AuroraDSQL',
        MetricName: metric,
        Dimensions: [{ Name: 'ClusterId', Value: { 'Fn::GetAtt': [ids.cluster, 'Identifier'] } }],
        AlarmActions: [Match.anyValue()],
      });
    }
  });

  it('is clean under cdk-nag AwsSolutions', () => {
    const violations = new AwsSolutionsChecks()
      .validateScope(app)
      .violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath).join(',')}`);
    expect(violations).toEqual([]);
  });

  it('makes one cluster of a multi-Region pair, and refuses what DSQL would', () => {
    const mine = testStack('Peered');
    new InboxDsqlDatabase(mine, 'Dsql', { multiRegion: { witnessRegion: 'us-west-2', peerClusterArns: ['arn:aws:dsql:us-east-2:123456789012:cluster/abc'] } });
    Template.fromStack(mine).hasResourceProperties('AWS::DSQL::Cluster', {
      MultiRegionProperties: { WitnessRegion: 'us-west-2', Clusters: ['arn:aws:dsql:us-east-2:123456789012:cluster/abc'] },
    });
    expect(() => new InboxDsqlDatabase(testStack('Bad'), 'Dsql', { multiRegion: { witnessRegion: 'Oregon' }, occConflictsThreshold: 0 })).toThrow(
      /`multiRegion.witnessRegion` 'Oregon' is not a Region name[\s\S]*`occConflictsThreshold` must be a whole number >= 1, got 0/,
    );
    // The queue's invariants hold as on Aurora: a visibility timeout under 6 x the function timeout fails synth.
    const short = testStack('Short');
    new InboxDsqlConsumer(short, 'Worker', {
      database: new InboxDsqlDatabase(short, 'Dsql'),
      queue: new sqs.Queue(short, 'Q', { visibilityTimeout: Duration.seconds(60) }),
      consumerName: 'w',
      entry: FIXTURE_HANDLER,
    });
    expect(synthError(short)).toMatch(/visibility timeout/i);
    const database = new InboxDsqlDatabase(testStack('Admin'), 'Dsql');
    expect(() => database.addRole('Admin', { roleName: 'admin', grantee: database.roleFunction.function, purpose: 'consumer' })).toThrow(
      /'admin' is DSQL's own administrator/,
    );
  });
});
