import { Annotations as CdkAnnotations, Duration, Stack } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import * as events from 'aws-cdk-lib/aws-events';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { describe, expect, it } from 'vitest';
import { createInboxApp } from '../../bin/inbox-app.js';
import { InboxConsumer, InboxDatabase, InboxOutboxRelay, InboxQueue, InboxSources } from '../../lib/index.js';
import type { InboxConsumerProps, InboxOutboxRelayProps } from '../../lib/index.js';
import { FIXTURE_HANDLER, logicalId, synthError, testAppProps, testStack } from './support.js';

/** A stack with a database, a queue to consume and an `invoices` queue to send to. */
function sendingStack(id = 'Test') {
  const stack = testStack(id);
  const database = new InboxDatabase(stack, 'Db');
  const orders = new InboxQueue(stack, 'Orders');
  const invoices = new InboxQueue(stack, 'Invoices');
  const consumer = (name: string, overrides: Partial<InboxConsumerProps> = {}, queue: sqs.IQueue = orders.queue) =>
    new InboxConsumer(stack, name, {
      database,
      source: InboxSources.sqs(queue),
      consumerName: name.toLowerCase(),
      entry: FIXTURE_HANDLER,
      ...overrides,
    });
  return { stack, database, orders, invoices, consumer };
}

/** A consumer sending to `invoices`, its relay, and the template. */
function relayStack(props: Partial<InboxOutboxRelayProps> = {}) {
  const s = sendingStack();
  const worker = s.consumer('Worker', { destinations: { invoices: s.invoices.queue } });
  const relay = new InboxOutboxRelay(s.stack, 'OutboxRelay', { database: s.database, consumers: [worker], ...props });
  let template: Template | undefined;
  return {
    ...s,
    worker,
    relay,
    /** Synthesized on first use, so that a test may add to the stack first. */
    get template() {
      return (template ??= Template.fromStack(s.stack));
    },
  };
}

/** The statements of a role's default policy, as `actions -> resources` with resources as logical ids. */
function grantsOf(stack: Stack, template: Template, role: { node: { defaultChild?: unknown } }): string[] {
  const roleId = stack.getLogicalId(role.node.defaultChild as never);
  const policies = Object.values(template.findResources('AWS::IAM::Policy', { Properties: { Roles: [{ Ref: roleId }] } })) as Array<{
    Properties: { PolicyDocument: { Statement: Array<{ Action: string | string[]; Resource: unknown }> } };
  }>;
  const id = (resource: unknown): string => {
    const r = resource as Record<string, any>;
    if (typeof resource === 'string') return resource;
    if ('Ref' in r) return r.Ref;
    if ('Fn::GetAtt' in r) return `${r['Fn::GetAtt'][0]}.${r['Fn::GetAtt'][1]}`;
    return JSON.stringify(resource).includes('cluster:') ? 'cluster' : JSON.stringify(resource);
  };
  return policies
    .flatMap((p) => p.Properties.PolicyDocument.Statement)
    .map((s) => `${[s.Action].flat().sort().join(' ')} -> ${[s.Resource].flat().map(id).sort().join(' ')}`)
    .sort();
}

/** A queue for a consumer with a 90-second timeout: its visibility timeout is 6 x that. */
const slowQueue = (stack: Stack) => new sqs.Queue(stack, 'SlowQueue', { visibilityTimeout: Duration.minutes(9), enforceSSL: true });

const arn = (stack: Stack, construct: { node: { defaultChild?: unknown } }) => `${stack.getLogicalId(construct.node.defaultChild as never)}.Arn`;

describe('InboxOutboxRelay', () => {
  it('runs the sweeper every minute from an EventBridge rule, with no extra role', () => {
    // Arrange + Act
    const { template, stack, relay } = relayStack();

    // Assess
    template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(1 minute)',
      State: 'ENABLED',
      Targets: [
        Match.objectLike({
          Arn: { 'Fn::GetAtt': [logicalId(stack, relay.function), 'Arn'] },
          RetryPolicy: { MaximumRetryAttempts: 2, MaximumEventAgeInSeconds: 3600 },
        }),
      ],
    });
    template.hasResourceProperties('AWS::Lambda::Permission', {
      Action: 'lambda:InvokeFunction',
      Principal: 'events.amazonaws.com',
      FunctionName: { 'Fn::GetAtt': [logicalId(stack, relay.function), 'Arn'] },
    });
    template.resourceCountIs('AWS::Scheduler::Schedule', 0);
  });

  it('takes another schedule', () => {
    const { template, relay } = relayStack({ schedule: events.Schedule.rate(Duration.minutes(5)) });
    template.hasResourceProperties('AWS::Events::Rule', { ScheduleExpression: 'rate(5 minutes)' });
    expect(relay.schedule.expressionString).toBe('rate(5 minutes)');
  });

  it('runs the sweeper as an ARM64 Node.js 24 function outside the VPC, 2-minute timeout, own log group', () => {
    const { template, stack, relay } = relayStack();
    const fn = template.toJSON().Resources[logicalId(stack, relay.function)].Properties;
    expect(fn).toMatchObject({
      Runtime: 'nodejs24.x',
      Architectures: ['arm64'],
      Handler: 'index.handler',
      Timeout: 120,
      LoggingConfig: { LogGroup: { Ref: stack.getLogicalId(relay.logGroup.node.defaultChild as never) } },
    });
    expect(fn.VpcConfig).toBeUndefined();
  });

  it("tells the sweeper the table, its own role's secret, the runtime's defaults and its metric identity", () => {
    const { template, stack, relay } = relayStack();
    const env = template.toJSON().Resources[logicalId(stack, relay.function)].Properties.Environment.Variables;
    expect(env).toEqual({
      INBOX_RESOURCE_ARN: expect.objectContaining({ 'Fn::Join': expect.anything() }),
      INBOX_SECRET_ARN: { Ref: stack.getLogicalId(relay.databaseRole!.secret.node.defaultChild as never) },
      INBOX_DATABASE: 'inbox',
      INBOX_OUTBOX_MIN_AGE_SECONDS: '60',
      INBOX_OUTBOX_SWEEP_LIMIT: '500',
      INBOX_OUTBOX_SENT_RETENTION_SECONDS: String(7 * 86400),
      POWERTOOLS_METRICS_NAMESPACE: 'SqsInbox',
      POWERTOOLS_SERVICE_NAME: relay.serviceName,
    });
    expect(relay.serviceName).toMatch(/^inbox-outbox-Test-OutboxRelay-[A-F0-9]{8}$/);
  });

  it('passes minAge, sweepLimit and sentRetention through in seconds', () => {
    const { template, stack, relay } = relayStack({ minAge: Duration.minutes(2), sweepLimit: 50, sentRetention: Duration.days(1) });
    const env = template.toJSON().Resources[logicalId(stack, relay.function)].Properties.Environment.Variables;
    expect(env).toMatchObject({ INBOX_OUTBOX_MIN_AGE_SECONDS: '120', INBOX_OUTBOX_SWEEP_LIMIT: '50', INBOX_OUTBOX_SENT_RETENTION_SECONDS: '86400' });
  });

  it("signs in as its own role with the outbox purpose (outbox rows only), and may call ExecuteStatement, read its secret and send to its consumer's queue, nothing else", () => {
    // Arrange + Act
    const { template, stack, relay, invoices } = relayStack();

    // Assess
    template.hasResourceProperties('Custom::InboxDatabaseRole', {
      Role: 'inbox_outbox_relay',
      Purpose: 'outbox',
      Grants: '[]',
      Label: `outbox relay ${relay.serviceName}`,
    });
    expect(grantsOf(stack, template, relay.function.role!)).toEqual(
      [
        `logs:CreateLogStream logs:PutLogEvents -> ${arn(stack, relay.logGroup)}`,
        'rds-data:ExecuteStatement -> cluster',
        `secretsmanager:DescribeSecret secretsmanager:GetSecretValue -> ${stack.getLogicalId(relay.databaseRole!.secret.node.defaultChild as never)}`,
        `sqs:SendMessage -> ${arn(stack, invoices.queue)}`,
      ].sort(),
    );
    // The first run must find the role with its password and privileges.
    const fn = template.toJSON().Resources[logicalId(stack, relay.function)];
    expect(fn.DependsOn).toContain(stack.getLogicalId(relay.databaseRole!.resource.node.defaultChild as never));
  });

  it('takes another role name', () => {
    const { template } = relayStack({ databaseRole: 'orders_outbox' });
    template.hasResourceProperties('Custom::InboxDatabaseRole', { Role: 'orders_outbox', Purpose: 'outbox' });
  });

  it("may send to every destination of its consumers, each once, using a queue's customer managed key but not the AWS managed one", () => {
    // Arrange: two consumers sharing one destination; one queue under a customer managed key, one under alias/aws/sqs.
    const s = sendingStack();
    const key = new kms.Key(s.stack, 'InvoiceKey', { enableKeyRotation: true });
    const audit = new sqs.Queue(s.stack, 'Audit', { encryption: sqs.QueueEncryption.KMS, encryptionMasterKey: key, enforceSSL: true });
    const managed = new sqs.Queue(s.stack, 'Managed', { encryption: sqs.QueueEncryption.KMS_MANAGED, enforceSSL: true });
    const a = s.consumer('A', { destinations: { invoices: s.invoices.queue, audit } });
    const b = s.consumer('B', { destinations: { bills: s.invoices.queue, managed } });
    s.consumer('Silent');

    // Act
    const relay = new InboxOutboxRelay(s.stack, 'OutboxRelay', { database: s.database, consumers: [a, b, a] });
    const template = Template.fromStack(s.stack);

    // Assess
    expect(relay.consumers).toEqual([a, b]);
    expect(relay.destinations).toEqual([s.invoices.queue, audit, managed]);
    const sends = grantsOf(s.stack, template, relay.function.role!).filter((g) => /^(sqs|kms):/.test(g));
    expect(sends).toEqual(
      [
        `kms:Decrypt kms:GenerateDataKey -> ${arn(s.stack, key)}`,
        `sqs:SendMessage -> ${[arn(s.stack, s.invoices.queue), arn(s.stack, audit), arn(s.stack, managed)].sort().join(' ')}`,
      ].sort(),
    );
  });

  it('may also send to a queue added with addDestination, for rows written with a queue URL', () => {
    const { stack, relay, invoices } = relayStack();
    const extra = new sqs.Queue(stack, 'Extra', { enforceSSL: true });
    relay.addDestination(extra);
    relay.addDestination(extra);
    const sends = grantsOf(stack, Template.fromStack(stack), relay.function.role!).filter((g) => g.startsWith('sqs:'));
    expect(sends).toEqual([`sqs:SendMessage -> ${[arn(stack, invoices.queue), arn(stack, extra)].sort().join(' ')}`]);
    expect(relay.destinations).toEqual([invoices.queue, extra]);
  });

  it('leaves rows to their writer for the longest consumer timeout when it exceeds the runtime default of 60 seconds', () => {
    const s = sendingStack();
    const slow = s.consumer('Slow', { destinations: { invoices: s.invoices.queue }, timeout: Duration.seconds(90) }, slowQueue(s.stack));
    const fast = s.consumer('Fast', { destinations: { invoices: s.invoices.queue } });
    const relay = new InboxOutboxRelay(s.stack, 'OutboxRelay', { database: s.database, consumers: [fast, slow] });
    const env = Template.fromStack(s.stack).toJSON().Resources[logicalId(s.stack, relay.function)].Properties.Environment.Variables;
    expect(env.INBOX_OUTBOX_MIN_AGE_SECONDS).toBe('90');
    expect(Annotations.fromStack(s.stack).findWarning('*', Match.stringLikeRegexp('minAge'))).toEqual([]);
  });

  it('warns when minAge is shorter than a consumer timeout: the sweeper would send rows their writer is about to send', () => {
    const s = sendingStack();
    const slow = s.consumer('Slow', { destinations: { invoices: s.invoices.queue }, timeout: Duration.seconds(90) }, slowQueue(s.stack));
    new InboxOutboxRelay(s.stack, 'OutboxRelay', { database: s.database, consumers: [slow], minAge: Duration.seconds(30) });
    Annotations.fromStack(s.stack).hasWarning(
      '/Test/OutboxRelay',
      Match.stringLikeRegexp('`minAge` \\(30 seconds\\) is shorter than the longest `timeout` of its consumers \\(90 seconds\\)'),
    );
  });

  it('warns when it runs at least as often as the database auto-pauses, and not when it runs less often', () => {
    const run = (schedule: events.Schedule, acknowledged = false) => {
      const stack = testStack();
      const database = new InboxDatabase(stack, 'Db', { autoPause: Duration.minutes(10) });
      const worker = new InboxConsumer(stack, 'Worker', {
        database,
        source: InboxSources.sqs(new InboxQueue(stack, 'Orders').queue),
        consumerName: 'w',
        entry: FIXTURE_HANDLER,
        destinations: { invoices: new InboxQueue(stack, 'Invoices').queue },
      });
      const relay = new InboxOutboxRelay(stack, 'OutboxRelay', { database, consumers: [worker], schedule });
      if (acknowledged) CdkAnnotations.of(relay).acknowledgeWarning('sqs-inbox:outbox-relay-keeps-database-awake', 'the cluster runs anyway');
      return Annotations.fromStack(stack).findWarning('/Test/OutboxRelay', Match.stringLikeRegexp('never pauses'));
    };
    expect(run(events.Schedule.rate(Duration.minutes(1)))[0]?.entry.data).toMatch(
      /runs rate\(1 minute\), at least as often as the database auto-pauses \(10 minutes idle\)/,
    );
    expect(run(events.Schedule.rate(Duration.minutes(10)))).toHaveLength(1);
    expect(run(events.Schedule.rate(Duration.minutes(30)))).toEqual([]);
    // Accepted on purpose: acknowledged by its id.
    expect(run(events.Schedule.rate(Duration.minutes(1)), true)).toEqual([]);
    // Without auto-pause the cluster runs anyway.
    const { stack } = relayStack();
    expect(Annotations.fromStack(stack).findWarning('*', Match.stringLikeRegexp('never pauses'))).toEqual([]);
  });

  it('refuses props that cannot work, naming each and the fix, all at once', () => {
    const s = sendingStack();
    const other = new InboxDatabase(s.stack, 'OtherDb', { databaseName: 'billing' });
    const elsewhere = new InboxConsumer(s.stack, 'Elsewhere', {
      database: other,
      source: InboxSources.sqs(s.orders.queue),
      consumerName: 'billing',
      entry: FIXTURE_HANDLER,
    });
    expect(
      () =>
        new InboxOutboxRelay(s.stack, 'OutboxRelay', {
          database: s.database,
          consumers: [elsewhere],
          minAge: Duration.millis(1500),
          sentRetention: Duration.millis(500),
          sweepLimit: 0,
          schedule: events.Schedule.rate(Duration.days(2)),
        }),
    ).toThrow(
      new RegExp(
        [
          '`minAge` must be a whole number of seconds, got 1\\.5\\. Fix: ',
          '`sentRetention` must be a whole number of seconds, got 0\\.5\\. Fix: ',
          '`sweepLimit` must be a positive integer, got 0\\. Fix: ',
          "consumer 'billing' \\(Test/Elsewhere\\) writes its outbox in the inbox table of database 'billing'.* Fix: give it a relay over its own `database`",
          '`schedule` runs the sweeper rate\\(2 days\\).* Fix: run it at least daily',
        ].join('[\\s\\S]*'),
      ),
    );
  });

  it('refuses a timeout under 1 minute: a Data API call and an Aurora resume need that long', () => {
    const short = relayStack({ timeout: Duration.seconds(59) });
    expect(synthError(short.stack)).toMatch(/InboxOutboxRelay `timeout` is 59 seconds, .* Fix: set `timeout` to at least 1 minute/);
    const ok = sendingStack();
    const worker = ok.consumer('Worker', { destinations: { invoices: ok.invoices.queue } });
    new InboxOutboxRelay(ok.stack, 'OutboxRelay', { database: ok.database, consumers: [worker], timeout: Duration.minutes(1) });
    expect(() => Template.fromStack(ok.stack)).not.toThrow();
  });

  it('refuses a second relay over the same table: both would send every row left unsent', () => {
    const { stack, database, worker } = relayStack();
    new InboxOutboxRelay(stack, 'SecondRelay', { database, consumers: [worker] });
    expect(synthError(stack)).toMatch(
      /\[Test\/SecondRelay\] InboxOutboxRelay Test\/SecondRelay sweeps the inbox table .* as Test\/OutboxRelay does: .* Fix: use one InboxOutboxRelay per database/,
    );
  });
});

describe('a consumer that sends, and its relay', () => {
  it('is refused without a relay over its database, with the fix', () => {
    const s = sendingStack();
    s.consumer('Worker', { destinations: { invoices: s.invoices.queue, refunds: s.orders.queue } });
    expect(synthError(s.stack)).toContain(
      "[Test/Worker] InboxConsumer Test/Worker sends to 'invoices', 'refunds' through its outbox, but no InboxOutboxRelay sweeps the inbox " +
        "table of database 'inbox'",
    );
    expect(synthError(s.stack)).toContain("Fix: add `new InboxOutboxRelay(this, 'OutboxRelay', { database, consumers: [consumer] })`");
  });

  it("is refused when the relay over its database does not list it: the sweeper could not send to the consumer's queues", () => {
    const s = sendingStack();
    const listed = s.consumer('Listed', { destinations: { invoices: s.invoices.queue } });
    s.consumer('Forgotten', { destinations: { refunds: s.orders.queue } });
    new InboxOutboxRelay(s.stack, 'OutboxRelay', { database: s.database, consumers: [listed] });
    const message = synthError(s.stack);
    expect(message).toContain(
      "[Test/Forgotten] InboxConsumer Test/Forgotten sends to 'refunds' through its outbox, but the InboxOutboxRelay over its table " +
        '(Test/OutboxRelay) does not list it in `consumers`',
    );
    expect(message).toContain("Fix: add the consumer to that relay's `consumers`.");
    expect(message).not.toContain('[Test/Listed]');
  });

  it('is not satisfied by a relay over another database', () => {
    const s = sendingStack();
    s.consumer('Worker', { destinations: { invoices: s.invoices.queue } });
    const other = new InboxDatabase(s.stack, 'OtherDb', { databaseName: 'billing' });
    new InboxOutboxRelay(s.stack, 'OutboxRelay', { database: other, consumers: [] });
    expect(synthError(s.stack)).toContain('no InboxOutboxRelay sweeps');
  });

  it('is satisfied by a relay in another stack of the app, over the same database', () => {
    // Arrange: as InboxStreamsStack does, the other stack wraps the same cluster in its own InboxDatabase, whose
    // migration function provisions the relay's role there.
    const s = sendingStack();
    const worker = s.consumer('Worker', { destinations: { invoices: s.invoices.queue } });
    const ops = new Stack(s.stack.node.root, 'Ops');
    const database = new InboxDatabase(ops, 'Db', { cluster: s.database.cluster, secret: s.database.secret });
    expect(database.tableKey).toBe(s.database.tableKey);

    // Act
    const relay = new InboxOutboxRelay(ops, 'OutboxRelay', { database, consumers: [worker] });

    // Assess
    expect(() => Template.fromStack(s.stack)).not.toThrow();
    const sends = grantsOf(ops, Template.fromStack(ops), relay.function.role!).filter((g) => g.startsWith('sqs:'));
    expect(sends).toHaveLength(1);
  });

  it('needs no relay when it sends nothing', () => {
    const s = sendingStack();
    s.consumer('Worker');
    expect(() => Template.fromStack(s.stack)).not.toThrow();
  });
});

describe('InboxStack and the outbox', () => {
  it('creates no relay while its order worker sends nothing (the default)', () => {
    const { stack } = createInboxApp(testAppProps());
    expect(stack.outboxRelay).toBeUndefined();
    expect(stack.invoices).toBeUndefined();
    expect(Object.keys(stack.consumer.destinations)).toEqual([]);
  });

  it("with invoices: the order worker may send to the FIFO 'invoices' queue, and a relay with its alarms sweeps what it leaves", () => {
    // Arrange + Act: the deployable app with -c invoices=true.
    const { stack } = createInboxApp(testAppProps({ invoices: 'true' }));
    const template = Template.fromStack(stack);

    // Assess
    expect(stack.invoices).toBeDefined();
    expect(stack.consumer.destinations).toEqual({ invoices: stack.invoices!.queue });
    expect(stack.outboxRelay?.consumers).toEqual([stack.consumer]);
    const env = template.toJSON().Resources[logicalId(stack, stack.consumer.function)].Properties.Environment.Variables;
    expect(env.INBOX_DESTINATIONS).toEqual({
      'Fn::Join': ['', ['{"invoices":"', { Ref: stack.getLogicalId(stack.invoices!.queue.node.defaultChild as never) }, '"}']],
    });
    template.hasResourceProperties('AWS::SQS::Queue', { FifoQueue: true, QueueName: Match.absent() });
    template.hasResourceProperties('AWS::Events::Rule', { ScheduleExpression: 'rate(1 minute)' });
    template.resourceCountIs('AWS::CloudWatch::Alarm', 10 + 2);
    expect(template.toJSON().Outputs.InvoicesQueueUrl.Value).toEqual({ Ref: stack.getLogicalId(stack.invoices!.queue.node.defaultChild as never) });
    // The relay keeps the example's auto-paused database awake: said at synth.
    Annotations.fromStack(stack).hasWarning('/InboxStack/OutboxRelay', Match.stringLikeRegexp('never pauses'));
  });
});
