import { Match, Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import { Duration } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as kinesis from 'aws-cdk-lib/aws-kinesis';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { ManagedKafkaEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { InboxCleanup, InboxConsumer, InboxDatabase, InboxDsqlConsumer, InboxDsqlDatabase, InboxOutboxRelay, InboxSources } from '../../lib/index.js';
import { MSK_CLUSTER_ARN } from './stream-support.js';
import { InboxDsqlStack } from '../../demo/stacks/inbox-dsql-stack.js';
import { FIXTURE_HANDLER, synthError, testApp, testStack } from './support.js';

type Resource = { Properties: Record<string, any>; DeletionPolicy?: string };

let app: ReturnType<typeof testApp>;
let stack: InboxDsqlStack;
let template: Template;
const ids = { cluster: '', consumerRole: '', roleFunctionRole: '', purgeRole: '', sweeperRole: '', schema: '' };
beforeAll(() => {
  app = testApp();
  stack = new InboxDsqlStack(app, 'InboxDsqlStack', { entry: FIXTURE_HANDLER });
  template = Template.fromStack(stack);
  ids.cluster = stack.getLogicalId(stack.database.cluster);
  ids.consumerRole = stack.getLogicalId(stack.consumer.function.role!.node.defaultChild as never);
  ids.roleFunctionRole = stack.getLogicalId(stack.database.roleFunction.role.node.defaultChild as never);
  ids.purgeRole = stack.getLogicalId(stack.cleanup.function.role!.node.defaultChild as never);
  ids.sweeperRole = stack.getLogicalId(stack.outboxRelay.function.role!.node.defaultChild as never);
  ids.schema = stack.getLogicalId(stack.database.schemaMigration.node.defaultChild as never);
});

/** The role mappings by database role. */
const mappings = () =>
  Object.fromEntries(
    Object.entries(template.findResources('Custom::InboxDsqlRole') as Record<string, Resource & { DependsOn?: string[] }>).map(([id, resource]) => [
      resource.Properties.Role as string,
      { id, ...resource },
    ]),
  );
/** The function whose environment has `variable` = `value`. */
const functionWith = (variable: string, value: string) =>
  Object.values(template.findResources('AWS::Lambda::Function') as Record<string, Resource & { DependsOn?: string[] }>).find(
    (resource) => resource.Properties.Environment?.Variables?.[variable] === value,
  )!;

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

  it('gives dsql:DbConnectAdmin to the schema function alone, and every other function dsql:DbConnect on its cluster only', () => {
    const all = statements();
    const owner = (roles: string) =>
      ([
        [ids.consumerRole, 'consumer'],
        [ids.purgeRole, 'purge'],
        [ids.sweeperRole, 'sweeper'],
        [ids.roleFunctionRole, 'schema function'],
      ].find(([id]) => roles.includes(`"${id}"`)) ?? [undefined, roles])[1];
    const dsqlActions = all
      .filter(({ statement }) => JSON.stringify(statement.Action).includes('dsql:'))
      .map(({ statement, roles }) => [statement.Action, statement.Resource, owner(roles)]);
    const onCluster = { 'Fn::GetAtt': [ids.cluster, 'ResourceArn'] };
    expect(dsqlActions.sort((a, b) => String(a[2]).localeCompare(String(b[2])))).toEqual([
      ['dsql:DbConnect', onCluster, 'consumer'],
      ['dsql:DbConnect', onCluster, 'purge'],
      ['dsql:DbConnectAdmin', onCluster, 'schema function'],
      ['dsql:DbConnect', onCluster, 'sweeper'],
    ]);
    // Every statement that names DbConnectAdmin, in any form (a list, a wildcard), is the schema function's.
    const admin = all.filter(({ statement }) => /DbConnectAdmin|"dsql:\*"|"\*"/.test(JSON.stringify(statement.Action)));
    expect(admin.map(({ roles }) => owner(roles))).toEqual(['schema function']);
    expect(JSON.stringify(all.filter(({ roles }) => !roles.includes(ids.roleFunctionRole)).map(({ statement }) => statement))).not.toMatch(
      /DbConnectAdmin|rds-data:|secretsmanager:/,
    );
  });

  it('applies the schema at deploy (the inbox tables, then the app sets), before any role is mapped', () => {
    const schema = template.findResources('Custom::InboxDsqlSchema')[ids.schema] as Resource & { DependsOn?: string[] };
    expect(schema.Properties).toMatchObject({ Schema: 'inbox', Migrations: 'inbox,example-orders', Fingerprint: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(schema.DependsOn).toEqual(expect.arrayContaining([ids.cluster]));
    const roles = mappings();
    expect(Object.keys(roles).sort()).toEqual(['inbox_consumer_order_worker', 'inbox_outbox_relay', 'inbox_purge']);
    for (const mapping of Object.values(roles)) {
      expect(mapping.DependsOn).toEqual(expect.arrayContaining([ids.schema]));
      expect(mapping.Properties.SchemaFingerprint).toBe(schema.Properties.Fingerprint);
    }
  });

  it('maps the consumer role to the function IAM role at deploy, before the function exists', () => {
    const mapping = mappings().inbox_consumer_order_worker!;
    const properties = mapping.Properties;
    expect(properties.IamRoleArn).toEqual({ 'Fn::GetAtt': [ids.consumerRole, 'Arn'] });
    const sql = JSON.stringify(properties.Statements);
    expect(sql).toContain('CREATE ROLE \\\\\\"inbox_consumer_order_worker\\\\\\" WITH LOGIN');
    expect(sql).toContain('AWS IAM GRANT \\\\\\"inbox_consumer_order_worker\\\\\\" TO \'');
    expect(sql).toContain('GRANT SELECT, INSERT, UPDATE ON \\\\\\"public\\\\\\".\\\\\\"orders\\\\\\"');
    const fn = functionWith('INBOX_CONSUMER', 'order-worker');
    expect(fn.DependsOn).toEqual(expect.arrayContaining([stack.getLogicalId(stack.consumer.roleMapping.node.defaultChild as never)]));
    expect(fn.Properties.Environment.Variables).toMatchObject({
      INBOX_DSQL_ENDPOINT: { 'Fn::Join': ['', [{ 'Fn::GetAtt': [ids.cluster, 'Identifier'] }, '.dsql.', { Ref: 'AWS::Region' }, '.on.aws']] },
      INBOX_DSQL_REGION: { Ref: 'AWS::Region' },
      INBOX_DSQL_USER: 'inbox_consumer_order_worker',
    });
    expect(fn.Properties.VpcConfig).toBeUndefined();
  });

  it('runs the purge and the outbox sweeper on a schedule, each as its own role with its own privileges', () => {
    const roles = mappings();
    const purge = functionWith('INBOX_DSQL_USER', 'inbox_purge');
    expect(purge.Properties.Handler).toBe('index.purge');
    expect(purge.Properties.Environment.Variables).toMatchObject({
      INBOX_RETENTION_SECONDS: String(30 * 24 * 3600),
      INBOX_DSQL_REGION: { Ref: 'AWS::Region' },
    });
    expect(purge.DependsOn).toEqual(expect.arrayContaining([roles.inbox_purge!.id]));
    expect(roles.inbox_purge!.Properties.IamRoleArn).toEqual({ 'Fn::GetAtt': [ids.purgeRole, 'Arn'] });
    expect(JSON.stringify(roles.inbox_purge!.Properties.Statements)).toMatch(/GRANT SELECT, DELETE ON [^,]*consumed_message/);
    const sweeper = functionWith('INBOX_DSQL_USER', 'inbox_outbox_relay');
    expect(sweeper.Properties.Handler).toBe('index.sweep');
    expect(sweeper.DependsOn).toEqual(expect.arrayContaining([roles.inbox_outbox_relay!.id]));
    expect(roles.inbox_outbox_relay!.Properties.IamRoleArn).toEqual({ 'Fn::GetAtt': [ids.sweeperRole, 'Arn'] });
    expect(JSON.stringify(roles.inbox_outbox_relay!.Properties.Statements)).toMatch(/GRANT SELECT, UPDATE, DELETE ON [^,]*outbox_message/);
    expect(JSON.stringify(roles.inbox_outbox_relay!.Properties.Statements)).not.toContain('consumed_message');
    for (const fn of [stack.cleanup.function, stack.outboxRelay.function]) {
      template.hasResourceProperties('AWS::Events::Rule', {
        Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [stack.getLogicalId(fn.node.defaultChild as never), 'Arn'] } })],
      });
    }
  });

  it('records the consumer a role is mapped for, and refuses at synth two consumer names that map to one role (order-worker and order_worker)', () => {
    const consumerIn = (mine: ReturnType<typeof testStack>, database: InboxDsqlDatabase, id: string, consumerName: string) =>
      new InboxDsqlConsumer(mine, id, {
        database,
        source: InboxSources.sqs(new sqs.Queue(mine, `${id}Queue`, { visibilityTimeout: Duration.minutes(3) })),
        consumerName,
        entry: FIXTURE_HANDLER,
      });
    const mine = testStack('Names');
    const database = new InboxDsqlDatabase(mine, 'Dsql');
    consumerIn(mine, database, 'Dotted', 'order.worker');
    // 'orderworker' strips to the same construct id as 'order.worker', under another role: both are mapped.
    consumerIn(mine, database, 'Plain', 'orderworker');
    const roles = Object.values(Template.fromStack(mine).findResources('Custom::InboxDsqlRole') as Record<string, Resource>).map((resource) => [
      resource.Properties.Role,
      resource.Properties.Consumer,
      resource.Properties.Schema,
    ]);
    expect(roles).toEqual([
      ['inbox_consumer_order_worker', 'order.worker', 'inbox'],
      ['inbox_consumer_orderworker', 'orderworker', 'inbox'],
    ]);
    expect(() => consumerIn(mine, database, 'Underscored', 'order_worker')).toThrow(
      /role 'inbox_consumer_order_worker' is already mapped on this cluster, for consumer 'order\.worker': both functions would sign in as it[\s\S]*Fix: give each function its own role/,
    );
  });

  it('keeps each purge batch within the 3,000 rows a DSQL transaction may modify', () => {
    const mine = testStack('Batch');
    const database = new InboxDsqlDatabase(mine, 'Dsql');
    expect(() => new InboxCleanup(mine, 'Cleanup', { database, purgeBatchSize: 5000 })).toThrow(
      /`purgeBatchSize` 5000 is above the 3000 rows one Aurora DSQL transaction may modify\. Fix: pass at most 3000/,
    );
    new InboxCleanup(mine, 'Fits', { database, purgeBatchSize: 3000 });
  });

  it("refuses a purge retention shorter than a DSQL consumer's redelivery window, as on Aurora", () => {
    const mine = testStack('Retention');
    const database = new InboxDsqlDatabase(mine, 'Dsql');
    new InboxDsqlConsumer(mine, 'Worker', {
      database,
      source: InboxSources.sqs(new sqs.Queue(mine, 'Q', { visibilityTimeout: Duration.minutes(3), retentionPeriod: Duration.days(4) })),
      consumerName: 'short-lived',
      entry: FIXTURE_HANDLER,
    });
    new InboxCleanup(mine, 'Cleanup', { database, retention: Duration.days(1) });
    expect(synthError(mine)).toMatch(/short-lived[\s\S]*(4 days|345600)/);
  });

  it('hands a DSQL consumer its outbox destinations as on Aurora: named, granted, and swept by a relay that lists it', () => {
    const consumerIn = (name: string, props: Partial<ConstructorParameters<typeof InboxDsqlConsumer>[2]> = {}) => {
      const mine = testStack(name);
      const database = new InboxDsqlDatabase(mine, 'Dsql');
      const receipts = new sqs.Queue(mine, 'Receipts');
      const consumer = new InboxDsqlConsumer(mine, 'Worker', {
        database,
        source: InboxSources.sqs(new sqs.Queue(mine, 'Q', { visibilityTimeout: Duration.minutes(3) })),
        consumerName: 'credits',
        entry: FIXTURE_HANDLER,
        destinations: { receipts },
        ...props,
      });
      return { mine, database, receipts, consumer };
    };
    // Without a relay, what a crashed invocation left unsent would never be sent.
    const alone = consumerIn('Alone');
    expect(synthError(alone.mine)).toMatch(/InboxDsqlConsumer Alone\/Worker sends to 'receipts' through its outbox, but no InboxOutboxRelay sweeps/);
    // With one that lists it: the consumer is told the queue's URL, and it and the sweeper may send there.
    const { mine, database, receipts, consumer } = consumerIn('Relayed');
    const relay = new InboxOutboxRelay(mine, 'Relay', { database, consumers: [consumer] });
    expect(relay.destinations).toEqual([receipts]);
    const synthesized = Template.fromStack(mine);
    const queueId = mine.getLogicalId(receipts.node.defaultChild as never);
    synthesized.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ INBOX_DSQL_USER: 'inbox_consumer_credits', INBOX_DESTINATIONS: Match.anyValue() }) },
    });
    for (const fn of [consumer.function, relay.function]) {
      synthesized.hasResourceProperties('AWS::IAM::Policy', {
        Roles: [{ Ref: mine.getLogicalId(fn.role!.node.defaultChild as never) }],
        PolicyDocument: {
          Statement: Match.arrayWith([Match.objectLike({ Action: 'sqs:SendMessage', Resource: { 'Fn::GetAtt': [queueId, 'Arn'] } })]),
        },
      });
    }
    // INBOX_DESTINATIONS by hand would be neither granted nor known to the relay.
    expect(() => consumerIn('ByHand', { environment: { INBOX_DESTINATIONS: '{}' } })).toThrow(
      /InboxDsqlConsumer ByHand\/Worker[\s\S]*`environment.INBOX_DESTINATIONS` is set by the construct from `destinations`/,
    );
  });

  it('refuses at synth an own migration of more than one statement, which DSQL cannot run in one transaction', () => {
    const mine = testStack('Sets');
    new InboxDsqlDatabase(mine, 'Dsql', {
      migrations: [
        {
          name: 'credits',
          migrations: [{ version: 1, name: 'two', statements: ['CREATE TABLE public.a (id text PRIMARY KEY)', 'CREATE TABLE public.b (id text PRIMARY KEY)'] }],
        },
      ],
    });
    expect(synthError(mine)).toMatch(/the set 'credits', version 1 \("two"\), holds 2 statements[\s\S]*split it into one migration per statement/);
    const unknown = testStack('Unknown');
    new InboxDsqlDatabase(unknown, 'Dsql', { migrations: ['nope'] });
    expect(synthError(unknown)).toMatch(/InboxDsqlDatabase `migrations` names 'nope', which is not a built-in migration set/);
  });

  it("refuses at synth DDL of an own migration that Aurora DSQL does not support, by the runtime's rules and their sources", () => {
    const mine = testStack('Unsupported');
    new InboxDsqlDatabase(mine, 'Dsql', {
      migrations: [
        {
          name: 'reservations',
          migrations: [
            { version: 1, name: 'stock', statements: ['CREATE TABLE public.stock (id bigserial PRIMARY KEY, sku text NOT NULL)'] },
            { version: 2, name: 'stock_sku', statements: ['CREATE INDEX stock_sku ON public.stock (sku)'] },
            { version: 3, name: 'fine', statements: ["CREATE TABLE public.notes (id uuid PRIMARY KEY, note text DEFAULT 'CREATE INDEX bigserial')"] },
            // Foreign keys: DSQL supports them since 26 August 2026 (supported-sql.ts, 'foreign-key-validated').
            { version: 4, name: 'lines', statements: ['CREATE TABLE public.lines (id uuid PRIMARY KEY, stock_id uuid REFERENCES public.stock (id))'] },
          ],
        },
      ],
    });
    const error = synthError(mine);
    expect(error).toMatch(
      /the set 'reservations', version 1 \("stock"\), holds what Aurora DSQL does not support \(serial, https:\/\/docs\.aws\.amazon\.com\/aurora-dsql\//,
    );
    expect(error).toMatch(/the set 'reservations', version 2 \("stock_sku"\), holds what Aurora DSQL does not support \(synchronous-index/);
    expect(error).not.toMatch(/version 3/);
    expect(error).not.toMatch(/version 4/);
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

  it('alarms on the purge and the sweeper as on Aurora: the oldest inbox row and the oldest unsent outbox row', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'OldestRowAgeSeconds',
      Dimensions: [{ Name: 'service', Value: stack.cleanup.serviceName }],
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'OutboxOldestUnsentAgeSeconds',
      Dimensions: [{ Name: 'service', Value: stack.outboxRelay.serviceName }],
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

  it('takes any source InboxConsumer takes, bound and checked the same way: a stream, a Kafka topic', () => {
    // Arrange
    const mine = testStack('Streams');
    const database = new InboxDsqlDatabase(mine, 'Dsql');
    const stream = new kinesis.Stream(mine, 'ClickStream', { retentionPeriod: Duration.hours(48) });
    const clicks = new InboxDsqlConsumer(mine, 'Clicks', { database, source: InboxSources.kinesis(stream), consumerName: 'clicks', entry: FIXTURE_HANDLER });
    const onDemand = new InboxDsqlConsumer(mine, 'Orders', {
      database,
      source: InboxSources.msk(MSK_CLUSTER_ARN, { topic: 'orders', topicRetention: Duration.days(3), provisionedPollers: false }),
      consumerName: 'orders',
      entry: FIXTURE_HANDLER,
    });

    // Act
    const synthesized = Template.fromStack(mine);
    const environment = (consumer: InboxDsqlConsumer) =>
      synthesized.toJSON().Resources[mine.getLogicalId(consumer.function.node.defaultChild as never)].Properties.Environment.Variables;

    // Assess: the stream's defaults (trim horizon, partial batch responses, bisect, 10 retries, an on-failure queue).
    expect(clicks.source.kind).toBe('kinesis');
    expect(clicks.stream).toBe(stream);
    synthesized.resourcePropertiesCountIs(
      'AWS::Lambda::EventSourceMapping',
      { StartingPosition: 'TRIM_HORIZON', FunctionResponseTypes: ['ReportBatchItemFailures'], BisectBatchOnFunctionError: true, MaximumRetryAttempts: 10 },
      1,
    );
    expect(clicks.deadLetterQueue).toBeDefined();
    expect(clicks.redeliveryWindowSeconds).toBe(48 * 3600);
    expect(environment(clicks)).toMatchObject({ INBOX_SOURCE: 'kinesis', INBOX_CONSUMER: 'clicks' });
    expect(environment(clicks).INBOX_REPORT_BATCH_ITEM_FAILURES).toBeUndefined();
    // Kafka on demand: the handler is told to fail whole invocations, as on Aurora.
    expect(onDemand.reportBatchItemFailures).toBe(false);
    expect(onDemand.kafkaConsumerGroupId).toBe('orders');
    expect(environment(onDemand)).toMatchObject({ INBOX_SOURCE: 'kafka', INBOX_REPORT_BATCH_ITEM_FAILURES: 'false' });
  });

  it("checks a DSQL consumer's stream as on Aurora: its mapping at synth, and the purge's retention against the stream's", () => {
    const mine = testStack('Checked');
    const database = new InboxDsqlDatabase(mine, 'Dsql');
    const table = new dynamodb.Table(mine, 'ItemTable', {
      partitionKey: { name: 'id', type: dynamodb.AttributeType.STRING },
      stream: dynamodb.StreamViewType.NEW_IMAGE,
    });
    const consumer = new InboxDsqlConsumer(mine, 'Items', { database, source: InboxSources.dynamoDb(table), consumerName: 'items', entry: FIXTURE_HANDLER });
    consumer.eventSourceMapping.destinationConfig = undefined;
    new InboxCleanup(mine, 'Cleanup', { database, retention: Duration.hours(12) });

    const message = synthError(mine);

    expect(message).toContain("[Checked/Items] the consumer's event source mapping has no on-failure destination");
    expect(message).toContain(
      "[Checked/Cleanup] InboxCleanup `retention` (12 hours) does not exceed the redelivery window of consumer 'items' (1 day: DynamoDB Streams",
    );
  });

  it('refuses a Kafka consumer group another Kafka event source of the app joins, whichever construct made it', () => {
    // Arrange: an InboxConsumer, then an InboxDsqlConsumer and a function of the user's own on the same group.
    const mine = testStack('Groups');
    const source = InboxSources.msk(MSK_CLUSTER_ARN, { topic: 'orders', topicRetention: Duration.days(3), consumerGroupId: 'shared' });
    new InboxConsumer(mine, 'Aurora', { database: new InboxDatabase(mine, 'Db'), source, consumerName: 'aurora', entry: FIXTURE_HANDLER });
    new InboxDsqlConsumer(mine, 'Dsql', { database: new InboxDsqlDatabase(mine, 'Cluster'), source, consumerName: 'dsql', entry: FIXTURE_HANDLER });
    const own = new lambda.Function(mine, 'Own', {
      runtime: lambda.Runtime.NODEJS_22_X,
      handler: 'index.handler',
      code: lambda.Code.fromInline('export const handler = () => {};'),
    });
    own.addEventSource(
      new ManagedKafkaEventSource({
        clusterArn: MSK_CLUSTER_ARN,
        topic: 'orders',
        consumerGroupId: 'shared',
        startingPosition: lambda.StartingPosition.LATEST,
      }),
    );
    const ownFirst = testStack('OwnFirst');
    const theirs = new lambda.Function(ownFirst, 'Own', {
      runtime: lambda.Runtime.NODEJS_22_X,
      handler: 'index.handler',
      code: lambda.Code.fromInline('export const handler = () => {};'),
    });
    theirs.addEventSource(
      new ManagedKafkaEventSource({
        clusterArn: MSK_CLUSTER_ARN,
        topic: 'orders',
        consumerGroupId: 'shared',
        startingPosition: lambda.StartingPosition.LATEST,
      }),
    );
    new InboxDsqlConsumer(ownFirst, 'Dsql', { database: new InboxDsqlDatabase(ownFirst, 'Cluster'), source, consumerName: 'dsql', entry: FIXTURE_HANDLER });

    // Act
    const message = synthError(mine);

    // Assess: the later of each pair reports, naming the mapping that joined first.
    expect(message).toContain(
      "[Groups/Dsql] the Kafka consumer group 'shared' is already used by the event source mapping Groups/Aurora/Handler/Function/KafkaEventSource:orders:",
    );
    expect(message.match(/is already used by/g)).toHaveLength(1);
    expect(synthError(ownFirst)).toContain(
      "[OwnFirst/Dsql] the Kafka consumer group 'shared' is already used by the event source mapping OwnFirst/Own/KafkaEventSource:",
    );
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
      source: InboxSources.sqs(new sqs.Queue(short, 'Q', { visibilityTimeout: Duration.seconds(60) })),
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
