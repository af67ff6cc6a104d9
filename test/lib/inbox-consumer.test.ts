import { type App, Duration, Stack, Token, Validations } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { describe, expect, it } from 'vitest';
import { InboxAlarms, InboxConsumer, InboxDatabase, InboxOutboxRelay, InboxQueue, InboxSources } from '../../lib/index.js';
import type { InboxSqsSourceOptions } from '../../lib/index.js';
import { FIXTURE_HANDLER, logicalId, policyStatements, synthError, testStack } from './support.js';

function consumerStack(overrides: Partial<ConstructorParameters<typeof InboxConsumer>[2]> = {}, options: InboxSqsSourceOptions = {}) {
  const stack = testStack();
  const inboxQueue = new InboxQueue(stack, 'Orders');
  const database = new InboxDatabase(stack, 'Db');
  const consumer = new InboxConsumer(stack, 'Worker', {
    database,
    source: InboxSources.sqs(inboxQueue.queue, options),
    consumerName: 'order-worker',
    entry: FIXTURE_HANDLER,
    ...overrides,
  });
  return { stack, inboxQueue, database, consumer, template: Template.fromStack(stack) };
}

describe('InboxConsumer', () => {
  it('runs the handler as an ARM64 Node.js 24 ESM function outside any VPC', () => {
    const { template, stack, consumer } = consumerStack({ handler: 'main' });
    const fn = template.toJSON().Resources[logicalId(stack, consumer.function)].Properties;
    expect(fn).toMatchObject({ Runtime: 'nodejs24.x', Architectures: ['arm64'], Handler: 'index.main', Timeout: 30, MemorySize: 512 });
    expect(fn.VpcConfig).toBeUndefined();
  });

  it('keeps Node.js 22 working when asked, and tells cdk-nag why it is not the newest', () => {
    const { template, consumer } = consumerStack({ runtime: lambda.Runtime.NODEJS_22_X });
    template.hasResourceProperties('AWS::Lambda::Function', { Handler: 'index.handler', Runtime: 'nodejs22.x' });
    const acknowledged = consumer.function.node.metadata.filter((m) => m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY);
    expect(acknowledged.map((m) => Object.keys(m.data as object))).toEqual([['Annotation::AwsSolutions-L1']]);
  });

  it('acknowledges no cdk-nag rule on the default runtime, the newest', () => {
    const { consumer } = consumerStack();
    expect(consumer.function.node.metadata.filter((m) => m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)).toEqual([]);
  });

  it('tells the handler where the inbox lives and which consumer it is', () => {
    const { template, stack, consumer, database } = consumerStack({ environment: { ORDERS_TABLE: 'orders' } });
    const env = template.toJSON().Resources[logicalId(stack, consumer.function)].Properties.Environment.Variables;
    const clusterId = stack.getLogicalId(database.cluster.node.defaultChild as never);
    expect(env).toEqual({
      ORDERS_TABLE: 'orders',
      INBOX_RESOURCE_ARN: expect.objectContaining({ 'Fn::Join': expect.arrayContaining([expect.arrayContaining([{ Ref: clusterId }])]) }),
      // Its own role's secret, never the master secret.
      INBOX_SECRET_ARN: { Ref: stack.getLogicalId(consumer.databaseRole.secret.node.defaultChild as never) },
      INBOX_DATABASE: 'inbox',
      INBOX_CONSUMER: 'order-worker',
      INBOX_SOURCE: 'sqs',
      POWERTOOLS_METRICS_NAMESPACE: 'SqsInbox',
      POWERTOOLS_SERVICE_NAME: 'order-worker',
    });
  });

  it('subscribes to the queue with partial batch responses, a batch size and a maximum concurrency', () => {
    const { template, stack, inboxQueue } = consumerStack({}, { batchSize: 7, maxConcurrency: 12 });
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: { 'Fn::GetAtt': [stack.getLogicalId(inboxQueue.queue.node.defaultChild as never), 'Arn'] },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BatchSize: 7,
      ScalingConfig: { MaximumConcurrency: 12 },
      MaximumBatchingWindowInSeconds: Match.absent(),
    });
  });

  it('defaults to batches of 10 and at most 5 concurrent invocations', () => {
    const { template } = consumerStack();
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', { BatchSize: 10, ScalingConfig: { MaximumConcurrency: 5 } });
  });

  it('passes a batching window through for a standard queue', () => {
    const stack = testStack();
    const queue = new sqs.Queue(stack, 'Events', { visibilityTimeout: Duration.seconds(185) }); // 6 x 30 s + the window
    new InboxConsumer(stack, 'Worker', {
      database: new InboxDatabase(stack, 'Db'),
      source: InboxSources.sqs(queue, { maxBatchingWindow: Duration.seconds(5), batchSize: 50 }),
      consumerName: 'events',
      entry: FIXTURE_HANDLER,
    });
    Template.fromStack(stack).hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      BatchSize: 50,
      MaximumBatchingWindowInSeconds: 5,
    });
  });

  it('may consume this queue, call the transaction operations of the Data API on this cluster and read its own secret, nothing else', () => {
    const { template, stack, consumer, inboxQueue, database } = consumerStack();
    const roleId = stack.getLogicalId(consumer.function.role!.node.defaultChild as never);
    const policy = Object.values(template.findResources('AWS::IAM::Policy', { Properties: { Roles: [{ Ref: roleId }] } }))[0] as {
      Properties: { PolicyDocument: { Statement: Array<{ Action: string | string[]; Resource: unknown }> } };
    };
    const byService = new Map<string, unknown>();
    for (const statement of policy.Properties.PolicyDocument.Statement) {
      for (const action of [statement.Action].flat()) byService.set(action, statement.Resource);
    }
    const queueArn = { 'Fn::GetAtt': [stack.getLogicalId(inboxQueue.queue.node.defaultChild as never), 'Arn'] };
    expect(byService.get('sqs:ReceiveMessage')).toEqual(queueArn);
    expect(byService.get('sqs:DeleteMessage')).toEqual(queueArn);
    expect(JSON.stringify(byService.get('rds-data:ExecuteStatement'))).toContain(stack.getLogicalId(database.cluster.node.defaultChild as never));
    expect(byService.get('secretsmanager:GetSecretValue')).toEqual({ Ref: stack.getLogicalId(consumer.databaseRole.secret.node.defaultChild as never) });
    expect([...byService.keys()].sort()).toEqual(
      [
        'logs:CreateLogStream',
        'logs:PutLogEvents',
        'rds-data:BeginTransaction',
        'rds-data:CommitTransaction',
        'rds-data:ExecuteStatement',
        'rds-data:RollbackTransaction',
        'secretsmanager:DescribeSecret',
        'secretsmanager:GetSecretValue',
        'sqs:ChangeMessageVisibility',
        'sqs:DeleteMessage',
        'sqs:GetQueueAttributes',
        'sqs:GetQueueUrl',
        'sqs:ReceiveMessage',
      ].sort(),
    );
    for (const statement of policy.Properties.PolicyDocument.Statement) expect(JSON.stringify(statement.Resource)).not.toMatch(/\*/);
  });

  it('may also batch statements only when asked (batchExecute), and grants the same to another principal on request', () => {
    const templates = new Map<Stack, Template>();
    const templateOf = (stack: Stack) => templates.get(stack) ?? templates.set(stack, Template.fromStack(stack)).get(stack)!;
    const actionsOf = (stack: Stack, role: iam.IRole) => {
      const roleId = stack.getLogicalId(role.node.defaultChild as never);
      const policy = Object.values(templateOf(stack).findResources('AWS::IAM::Policy', { Properties: { Roles: [{ Ref: roleId }] } }))[0] as {
        Properties: { PolicyDocument: { Statement: Array<{ Action: string | string[] }> } };
      };
      return policy.Properties.PolicyDocument.Statement.flatMap((statement) => [statement.Action].flat())
        .filter((a) => a.startsWith('rds-data:'))
        .sort();
    };
    const transaction = ['rds-data:BeginTransaction', 'rds-data:CommitTransaction', 'rds-data:ExecuteStatement', 'rds-data:RollbackTransaction'];

    const plain = consumerStack();
    const stack = testStack('Batching');
    const batching = new InboxConsumer(stack, 'Worker', {
      database: new InboxDatabase(stack, 'Db'),
      source: InboxSources.sqs(new InboxQueue(stack, 'Orders').queue),
      consumerName: 'w',
      entry: FIXTURE_HANDLER,
      batchExecute: true,
    });
    const reader = new iam.Role(stack, 'Reader', { assumedBy: new iam.AccountRootPrincipal() });
    batching.grantDataApiAccess(reader);

    expect(actionsOf(plain.stack, plain.consumer.function.role!)).toEqual(transaction);
    expect(actionsOf(stack, batching.function.role!)).toEqual([...transaction, 'rds-data:BatchExecuteStatement'].sort());
    expect(actionsOf(stack, reader)).toEqual([...transaction, 'rds-data:BatchExecuteStatement'].sort());
  });

  it('has no AWSLambdaBasicExecutionRole: the role may write only to its own log group, which has a retention', () => {
    const { template, stack, consumer } = consumerStack();
    const role = template.toJSON().Resources[stack.getLogicalId(consumer.function.role!.node.defaultChild as never)];
    expect(role.Properties.ManagedPolicyArns).toBeUndefined();
    template.hasResourceProperties('AWS::Lambda::Function', {
      FunctionName: Match.absent(),
      LoggingConfig: { LogGroup: { Ref: stack.getLogicalId(consumer.logGroup.node.defaultChild as never) } },
    });
    template.hasResourceProperties('AWS::Logs::LogGroup', { RetentionInDays: 30 });
  });

  it('exposes the consumer name, queue, dead-letter queue and redelivery window', () => {
    const { consumer, inboxQueue } = consumerStack();
    expect(consumer.consumerName).toBe('order-worker');
    expect(consumer.queue).toBe(inboxQueue.queue);
    expect(consumer.deadLetterQueue).toBe(inboxQueue.deadLetterQueue);
    expect(consumer.redeliveryWindowSeconds).toBe((4 + 14) * 86400);
  });

  it('assumes SQS maxima for the redelivery window of an imported queue unless told', () => {
    const stack = testStack();
    const database = new InboxDatabase(stack, 'Db');
    const queue = sqs.Queue.fromQueueArn(stack, 'Q', 'arn:aws:sqs:eu-west-1:123456789012:orders.fifo');
    const guessed = new InboxConsumer(stack, 'A', { database, source: InboxSources.sqs(queue), consumerName: 'a', entry: FIXTURE_HANDLER });
    const told = new InboxConsumer(stack, 'B', {
      database,
      source: InboxSources.sqs(queue, { redeliveryWindow: Duration.days(5) }),
      consumerName: 'b',
      entry: FIXTURE_HANDLER,
    });
    expect(guessed.redeliveryWindowSeconds).toBe(28 * 86400);
    expect(told.redeliveryWindowSeconds).toBe(5 * 86400);
  });

  it('refuses an empty consumer name', () => {
    const stack = testStack();
    const database = new InboxDatabase(stack, 'Db');
    const queue = new InboxQueue(stack, 'Q').queue;
    expect(() => new InboxConsumer(stack, 'W', { database, source: InboxSources.sqs(queue), consumerName: '', entry: FIXTURE_HANDLER })).toThrow(
      /`consumerName` is empty: .* Fix: use e\.g\. 'order-worker'\./,
    );
  });

  it.each([
    ['order worker', 'order-worker'],
    ['-leading-dash', 'leading-dash'],
    ['orders/eu', 'orders-eu'],
    ['x'.repeat(129), 'x'.repeat(128)],
  ])('refuses the consumer name %j the runtime would reject, suggesting %j', (consumerName, suggestion) => {
    const stack = testStack();
    const database = new InboxDatabase(stack, 'Db');
    const queue = new InboxQueue(stack, 'Q').queue;
    expect(() => new InboxConsumer(stack, 'W', { database, source: InboxSources.sqs(queue), consumerName, entry: FIXTURE_HANDLER })).toThrow(
      `\`consumerName\` '${consumerName}' is not a valid consumer name: it must be 1 to 128 letters, digits, '.', '_', ':' or '-', ` +
        `starting with a letter or digit. Fix: use e.g. '${suggestion}'.`,
    );
  });

  it('accepts every consumer name the runtime accepts, and tokens', () => {
    const stack = testStack();
    const database = new InboxDatabase(stack, 'Db');
    const queue = new InboxQueue(stack, 'Q').queue;
    for (const [i, consumerName] of ['a', 'Orders.v2:eu_west-1', '9'.repeat(128)].entries()) {
      expect(() => new InboxConsumer(stack, `W${i}`, { database, source: InboxSources.sqs(queue), consumerName, entry: FIXTURE_HANDLER })).not.toThrow();
    }
    const token = Token.asString({ Ref: 'ConsumerNameParameter' });
    expect(() => new InboxConsumer(stack, 'T', { database, source: InboxSources.sqs(queue), consumerName: token, entry: FIXTURE_HANDLER })).not.toThrow();
  });

  it('watches the dead-letter queue of an existing queue passed with it', () => {
    // Arrange: an imported FIFO queue and its imported dead-letter queue, as InboxQueue wraps them.
    const stack = testStack();
    const existing = new InboxQueue(stack, 'Orders', {
      queue: sqs.Queue.fromQueueArn(stack, 'Q', 'arn:aws:sqs:eu-west-1:123456789012:orders.fifo'),
      deadLetterQueue: sqs.Queue.fromQueueArn(stack, 'Dlq', 'arn:aws:sqs:eu-west-1:123456789012:orders-dlq.fifo'),
    });

    // Act
    const consumer = new InboxConsumer(stack, 'Worker', {
      database: new InboxDatabase(stack, 'Db'),
      source: InboxSources.sqs(existing.queue, { deadLetterQueue: existing.deadLetterQueue }),
      consumerName: 'order-worker',
      entry: FIXTURE_HANDLER,
    });
    new InboxAlarms(stack, 'Alarms', { consumers: [consumer] });
    const template = Template.fromStack(stack);

    // Assess
    expect(consumer.deadLetterQueue).toBe(existing.deadLetterQueue);
    const alarms = Object.entries(template.findResources('AWS::CloudWatch::Alarm')).filter(([id]) => id.includes('DeadLetterQueueNotEmpty'));
    expect(alarms).toHaveLength(1);
    expect(alarms[0]![1].Properties.Dimensions).toEqual([{ Name: 'QueueName', Value: 'orders-dlq.fifo' }]);
  });

  it('refuses a standard dead-letter queue passed for an existing FIFO queue', () => {
    const stack = testStack();
    new InboxConsumer(stack, 'Worker', {
      database: new InboxDatabase(stack, 'Db'),
      source: InboxSources.sqs(sqs.Queue.fromQueueArn(stack, 'Q', 'arn:aws:sqs:eu-west-1:123456789012:orders.fifo'), {
        deadLetterQueue: sqs.Queue.fromQueueArn(stack, 'Dlq', 'arn:aws:sqs:eu-west-1:123456789012:orders-dlq'),
      }),
      consumerName: 'order-worker',
      entry: FIXTURE_HANDLER,
    });
    expect(synthError(stack)).toContain(
      "the consumer's queue is a FIFO queue but its dead-letter queue is a standard queue. Fix: create the dead-letter queue with `fifo: true`",
    );
  });

  it('refuses a dead-letter queue other than the one configured on the queue', () => {
    const stack = testStack();
    const inboxQueue = new InboxQueue(stack, 'Orders');
    const other = sqs.Queue.fromQueueArn(stack, 'Dlq', 'arn:aws:sqs:eu-west-1:123456789012:other-dlq.fifo');
    expect(() => InboxSources.sqs(inboxQueue.queue, { deadLetterQueue: other })).toThrow(
      /^InboxSources\.sqs: `deadLetterQueue` is not the dead-letter queue configured on the queue\. Fix: /,
    );
    expect(() => InboxSources.sqs(inboxQueue.queue, { deadLetterQueue: inboxQueue.deadLetterQueue })).not.toThrow();
  });
});

describe('InboxConsumer destinations (the outbox)', () => {
  /** A consumer sending to `destinations`, with the relay synth requires, and the consumer's own policy statements. */
  function sender(destinations: (stack: Stack) => Record<string, sqs.IQueue>, stack = testStack()) {
    const database = new InboxDatabase(stack, 'Db');
    const orders = new InboxQueue(stack, 'Orders');
    const consumer = new InboxConsumer(stack, 'Worker', {
      database,
      source: InboxSources.sqs(orders.queue),
      consumerName: 'order-worker',
      entry: FIXTURE_HANDLER,
      destinations: destinations(stack),
    });
    new InboxOutboxRelay(stack, 'OutboxRelay', { database, consumers: [consumer] });
    const template = Template.fromStack(stack);
    const roleId = stack.getLogicalId(consumer.function.role!.node.defaultChild as never);
    const statements = Object.values(template.findResources('AWS::IAM::Policy', { Properties: { Roles: [{ Ref: roleId }] } })).flatMap(
      (p) =>
        (p as { Properties: { PolicyDocument: { Statement: Array<{ Action: string | string[]; Resource: unknown }> } } }).Properties.PolicyDocument.Statement,
    );
    const env = template.toJSON().Resources[logicalId(stack, consumer.function)].Properties.Environment.Variables as Record<string, unknown>;
    return { stack, orders, consumer, template, statements, env };
  }
  const ref = (stack: Stack, queue: sqs.IQueue) => ({ Ref: stack.getLogicalId(queue.node.defaultChild as never) });
  const queueArn = (stack: Stack, queue: sqs.IQueue) => ({ 'Fn::GetAtt': [stack.getLogicalId(queue.node.defaultChild as never), 'Arn'] });

  /** Evaluates the Fn::Join CloudFormation makes of INBOX_DESTINATIONS, with each Ref replaced by a fake URL. */
  function deployed(value: unknown, urls: Record<string, string>): string {
    if (typeof value === 'string') return value;
    const v = value as Record<string, any>;
    if ('Fn::Join' in v) return (v['Fn::Join'][1] as unknown[]).map((part) => deployed(part, urls)).join(v['Fn::Join'][0]);
    if ('Ref' in v && urls[v.Ref] !== undefined) return urls[v.Ref]!;
    throw new Error(`unexpected ${JSON.stringify(value)}`);
  }

  it('may call exactly sqs:SendMessage on each destination, nothing else on them (SendMessageBatch needs no more)', () => {
    // Arrange + Act: a FIFO queue, a standard queue, and one queue under two names.
    let invoices!: sqs.IQueue;
    let audit!: sqs.IQueue;
    const { stack, statements, orders } = sender((s) => {
      invoices = new InboxQueue(s, 'Invoices').queue;
      audit = new sqs.Queue(s, 'Audit', { enforceSSL: true });
      return { invoices, bills: invoices, audit };
    });

    // Assess: one statement, sqs:SendMessage on exactly these two queues; the source queue keeps its consume grant only.
    const sends = statements.filter((s) => [s.Action].flat().some((a) => a === 'sqs:SendMessage'));
    expect(sends).toEqual([{ Action: 'sqs:SendMessage', Effect: 'Allow', Resource: expect.any(Array) }]);
    expect(sends[0]!.Resource).toHaveLength(2);
    expect(sends[0]!.Resource).toEqual(expect.arrayContaining([queueArn(stack, invoices), queueArn(stack, audit)]));
    const onDestinations = statements.filter((s) => JSON.stringify(s.Resource).match(/Invoices|Audit/));
    expect(onDestinations.flatMap((s) => [s.Action].flat())).toEqual(['sqs:SendMessage']);
    expect(
      statements
        .filter((s) => JSON.stringify(s.Resource).includes(stack.getLogicalId(orders.queue.node.defaultChild as never)))
        .flatMap((s) => [s.Action].flat()),
    ).not.toContain('sqs:SendMessage');
    expect(statements.flatMap((s) => [s.Action].flat()).filter((a) => a.startsWith('kms:'))).toEqual([]);
  });

  it("may use a destination's customer managed key to encrypt (GenerateDataKey, Decrypt), and needs no grant for the AWS managed key", () => {
    let key!: kms.Key;
    const { stack, statements } = sender((s) => {
      key = new kms.Key(s, 'InvoiceKey', { enableKeyRotation: true });
      return {
        invoices: new sqs.Queue(s, 'Invoices', { encryption: sqs.QueueEncryption.KMS, encryptionMasterKey: key, enforceSSL: true }),
        managed: new sqs.Queue(s, 'Managed', { encryption: sqs.QueueEncryption.KMS_MANAGED, enforceSSL: true }),
      };
    });
    const kmsStatements = statements.filter((s) => [s.Action].flat().some((a) => a.startsWith('kms:')));
    expect(kmsStatements).toEqual([
      {
        Action: ['kms:Decrypt', 'kms:GenerateDataKey'],
        Effect: 'Allow',
        Resource: { 'Fn::GetAtt': [stack.getLogicalId(key.node.defaultChild as never), 'Arn'] },
      },
    ]);
  });

  it('tells the handler its destinations as INBOX_DESTINATIONS: JSON of name -> queue URL, the URLs resolved at deploy', () => {
    // Arrange + Act
    let invoices!: sqs.IQueue;
    let audit!: sqs.IQueue;
    const { stack, env, consumer } = sender((s) => {
      invoices = new InboxQueue(s, 'Invoices').queue;
      audit = new sqs.Queue(s, 'Audit', { enforceSSL: true });
      return { invoices, 'audit "eu"': audit };
    });

    // Assess: a Fn::Join over the queues' Refs (a queue's Ref is its URL) that CloudFormation turns into valid JSON.
    const urls = {
      [ref(stack, invoices).Ref]: 'https://sqs.eu-west-1.amazonaws.com/123456789012/Invoices.fifo',
      [ref(stack, audit).Ref]: 'https://sqs.eu-west-1.amazonaws.com/123456789012/Audit',
    };
    expect(JSON.parse(deployed(env.INBOX_DESTINATIONS, urls))).toEqual({
      'audit "eu"': 'https://sqs.eu-west-1.amazonaws.com/123456789012/Audit',
      invoices: 'https://sqs.eu-west-1.amazonaws.com/123456789012/Invoices.fifo',
    });
    expect(consumer.destinations).toEqual({ invoices, 'audit "eu"': audit });
  });

  it('takes a queue of another stack, an imported queue, and its own source queue', () => {
    // Arrange
    const app = testStack('Queues').node.root as App;
    const queues = new Stack(app, 'Shared');
    const shared = new InboxQueue(queues, 'Invoices').queue;

    // Act
    const { stack, env, orders } = sender(
      (s) => ({
        shared,
        imported: sqs.Queue.fromQueueArn(s, 'Imported', 'arn:aws:sqs:eu-west-1:123456789012:refunds'),
        // Allowed, and nothing special: a consumer may hand a message back to its own queue.
        self: new InboxQueue(s, 'Self').queue,
      }),
      new Stack(app, 'Test'),
    );

    // Assess
    const joined = JSON.stringify(env.INBOX_DESTINATIONS);
    // CDK's cross-stack reference (Fn::GetStackOutput or Fn::ImportValue, by feature flag) to the other stack's queue URL.
    expect(joined).toMatch(/"Fn::(GetStackOutput|ImportValue)"/);
    expect(joined).toContain('OutputRefInvoicesQueue');
    expect(joined).toContain('https://sqs.eu-west-1.');
    expect(joined).toContain('/123456789012/refunds');
    expect(orders).toBeDefined();
    expect(stack.dependencies.map((d) => d.stackName)).toContain('Shared');
  });

  it('sets no INBOX_DESTINATIONS and grants no send without destinations', () => {
    const { template, stack, consumer } = consumerStack();
    const env = template.toJSON().Resources[logicalId(stack, consumer.function)].Properties.Environment.Variables;
    expect(env).not.toHaveProperty('INBOX_DESTINATIONS');
    expect(JSON.stringify(policyStatements(template))).not.toContain('sqs:SendMessage');
    expect(consumer.destinations).toEqual({});
  });

  it('refuses names the runtime could never look up, values that are not queues, and INBOX_DESTINATIONS by hand, all at once', () => {
    const stack = testStack();
    const database = new InboxDatabase(stack, 'Db');
    const queue = new InboxQueue(stack, 'Orders').queue;
    expect(
      () =>
        new InboxConsumer(stack, 'Worker', {
          database,
          source: InboxSources.sqs(queue),
          consumerName: 'w',
          entry: FIXTURE_HANDLER,
          destinations: { '': queue, 'https://sqs.eu-west-1.amazonaws.com/123456789012/invoices': queue, missing: undefined as never },
          environment: { INBOX_DESTINATIONS: '{"invoices":"https://sqs.eu-west-1.amazonaws.com/123456789012/invoices"}' },
        }),
    ).toThrow(
      new RegExp(
        [
          '`destinations` has an empty name, .* Fix: give the queue a name',
          "`destinations` name 'https://sqs\\.eu-west-1\\.amazonaws\\.com/123456789012/invoices' looks like a URL: .* Fix: use a plain name",
          '`destinations\\.missing` must be an sqs\\.IQueue\\. Fix: ',
          '`environment\\.INBOX_DESTINATIONS` is set by the construct from `destinations`\\. Fix: ',
        ].join('[\\s\\S]*'),
      ),
    );
    expect(
      () =>
        new InboxConsumer(stack, 'Hand', {
          database,
          source: InboxSources.sqs(queue),
          consumerName: 'h',
          entry: FIXTURE_HANDLER,
          environment: { INBOX_DESTINATIONS: '{}' },
        }),
    ).toThrow(/`environment\.INBOX_DESTINATIONS` is set by the construct from `destinations`/);
  });

  it('accepts any other name: the runtime looks up any string that is not an http(s) URL', () => {
    const stack = testStack();
    const database = new InboxDatabase(stack, 'Db');
    const queue = new InboxQueue(stack, 'Orders').queue;
    const consumer = new InboxConsumer(stack, 'Worker', {
      database,
      source: InboxSources.sqs(queue),
      consumerName: 'w',
      entry: FIXTURE_HANDLER,
      destinations: { invoices: queue, 'eu/refunds v2': queue, 'sqs.eu-west-1.amazonaws.com': queue },
    });
    expect(Object.keys(consumer.destinations)).toHaveLength(3);
  });
});
