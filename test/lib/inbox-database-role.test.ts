import { Duration, Validations } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as rds from 'aws-cdk-lib/aws-rds';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { describe, expect, it } from 'vitest';
import { InboxCleanup, InboxConsumer, InboxDatabase, InboxDatabaseRole, InboxQueue, InboxSources } from '../../lib/index.js';
import type { InboxConsumerProps } from '../../lib/index.js';
import { FIXTURE_HANDLER, synthError, testStack } from './support.js';

function consumerStack(overrides: Partial<InboxConsumerProps> = {}) {
  const stack = testStack();
  const database = new InboxDatabase(stack, 'Db');
  const consumer = new InboxConsumer(stack, 'Worker', {
    database,
    source: InboxSources.sqs(new InboxQueue(stack, 'Orders').queue),
    consumerName: 'Order.Worker-2',
    entry: FIXTURE_HANDLER,
    ...overrides,
  });
  const cleanup = new InboxCleanup(stack, 'Cleanup', { database });
  return { stack, database, consumer, cleanup, template: Template.fromStack(stack) };
}

function readersOf(template: Template, secretRef: unknown): string[] {
  return Object.values(template.findResources('AWS::IAM::Policy'))
    .filter((policy) =>
      (policy as { Properties: { PolicyDocument: { Statement: Array<{ Action: unknown; Resource: unknown }> } } }).Properties.PolicyDocument.Statement.some(
        (s) => [s.Action].flat().includes('secretsmanager:GetSecretValue') && JSON.stringify([s.Resource].flat()).includes(JSON.stringify(secretRef)),
      ),
    )
    .map((policy) => (policy as { Properties: { Roles: Array<{ Ref: string }> } }).Properties.Roles[0]!.Ref)
    .sort();
}

describe('InboxDatabaseRole (through InboxConsumer and InboxCleanup)', () => {
  it('gives the consumer and the purge each a generated secret of their own role; no password in the template', () => {
    const { template } = consumerStack();
    const secrets = Object.values(template.findResources('AWS::SecretsManager::Secret')).map(
      (s) => (s as { Properties: { GenerateSecretString: { SecretStringTemplate: string; GenerateStringKey: string } } }).Properties.GenerateSecretString,
    );
    expect(secrets.map((s) => JSON.parse(s.SecretStringTemplate)).sort((a, b) => a.username.localeCompare(b.username))).toEqual([
      { username: 'inbox_admin' },
      { username: 'inbox_consumer_order_worker_2', dbname: 'inbox' },
      { username: 'inbox_purge', dbname: 'inbox' },
    ]);
    for (const secret of secrets) expect(secret.GenerateStringKey).toBe('password');
    expect(JSON.stringify(template.toJSON())).not.toMatch(/"password"\s*:/i);
  });

  it('provisions each role after the schema migration, through the migration provider, with its purpose and grants', () => {
    const { template, stack, database, consumer } = consumerStack({ databaseGrants: [{ table: 'public.orders', privileges: ['SELECT', 'INSERT'] }] });
    // The same grants, for runScenario({ databaseGrants: worker.databaseGrants }).
    expect(consumer.databaseGrants).toEqual([{ table: 'public.orders', privileges: ['SELECT', 'INSERT'] }]);
    const migrationId = stack.getLogicalId(database.migration.node.defaultChild as never);
    template.hasResource('Custom::InboxDatabaseRole', {
      Properties: {
        ServiceToken: { 'Fn::GetAtt': [Match.stringLikeRegexp('MigrationProviderframeworkonEvent'), 'Arn'] },
        ResourceArn: Match.anyValue(),
        SecretArn: { Ref: Match.stringLikeRegexp('^DbClusterSecretAttachment') },
        Database: 'inbox',
        Role: 'inbox_consumer_order_worker_2',
        RoleSecretArn: { Ref: stack.getLogicalId(consumer.databaseRole.secret.node.defaultChild as never) },
        Purpose: 'consumer',
        Label: 'consumer Order.Worker-2',
        Grants: '[{"on":"public.orders","privileges":["SELECT","INSERT"]}]',
        // The database is created with the cluster here: the inbox's own, so PUBLIC's defaults are taken from it.
        PublicDefaults: 'revoke',
        // Its claims and parked messages are scoped to the name its handler claims under.
        Consumer: 'Order.Worker-2',
        SchemaFingerprint: database.migrationsFingerprint,
      },
      DependsOn: Match.arrayWith([migrationId]),
    });
    template.hasResourceProperties('Custom::InboxDatabaseRole', { Role: 'inbox_purge', Purpose: 'purge', Grants: '[]', Consumer: Match.absent() });
    // The function starts only once its role is there.
    template.hasResource('AWS::Lambda::Function', {
      Properties: Match.objectLike({ Environment: { Variables: Match.objectLike({ INBOX_CONSUMER: 'Order.Worker-2' }) } }),
      DependsOn: Match.arrayWith([stack.getLogicalId(consumer.databaseRole.resource.node.defaultChild as never)]),
    });
  });

  it("bounds the consumer role's statements below the handler's default call timeout (8 s), or as `databaseStatementTimeout` says; the purge's role not at all", () => {
    const roles = (template: Template) =>
      Object.values(template.findResources('Custom::InboxDatabaseRole')).map((r) => (r as { Properties: Record<string, unknown> }).Properties);
    const [consumer, purge] = ['consumer', 'purge'].map((purpose) => roles(consumerStack().template).find((p) => p.Purpose === purpose)!);
    expect(consumer!.StatementTimeoutMs).toBe('8000');
    expect(purge!).not.toHaveProperty('StatementTimeoutMs');
    const custom = roles(consumerStack({ databaseStatementTimeout: Duration.millis(2500) }).template).find((p) => p.Purpose === 'consumer')!;
    expect(custom.StatementTimeoutMs).toBe('2500');
    expect(() => consumerStack({ databaseStatementTimeout: Duration.millis(0) })).toThrow(/whole number of milliseconds >= 1/);
  });

  it('lets each secret be read by its own function and by the migration function that sets its password, no one else', () => {
    const { template, stack, database, consumer, cleanup } = consumerStack();
    const roleOf = (fn: { role?: { node: { defaultChild?: unknown } } }) => stack.getLogicalId(fn.role!.node.defaultChild as never);
    const ref = (secret: secretsmanager.ISecret) => ({ Ref: stack.getLogicalId(secret.node.defaultChild as never) });
    const migration = roleOf(database.migrationFunction);
    expect(readersOf(template, ref(database.secret))).toEqual([migration]);
    expect(readersOf(template, ref(consumer.databaseRole.secret))).toEqual([migration, roleOf(consumer.function)].sort());
    expect(readersOf(template, ref(cleanup.databaseRole!.secret))).toEqual([migration, roleOf(cleanup.function)].sort());
  });

  it('lets the purge call ExecuteStatement only', () => {
    const { template, stack, cleanup } = consumerStack();
    const roleId = stack.getLogicalId(cleanup.function.role!.node.defaultChild as never);
    const actions = Object.values(template.findResources('AWS::IAM::Policy', { Properties: { Roles: [{ Ref: roleId }] } })).flatMap((p) =>
      (p as { Properties: { PolicyDocument: { Statement: Array<{ Action: string | string[] }> } } }).Properties.PolicyDocument.Statement.flatMap((s) =>
        [s.Action].flat(),
      ),
    );
    expect(actions.filter((a) => a.startsWith('rds-data:'))).toEqual(['rds-data:ExecuteStatement']);
  });

  it('rotates each role secret after its role exists, and the master secret only after every role', () => {
    const { template, stack, database, consumer, cleanup } = consumerStack();
    const id = (c: { node: { defaultChild?: unknown } }) => stack.getLogicalId(c.node.defaultChild as never);
    template.hasResource('AWS::SecretsManager::RotationSchedule', {
      Properties: Match.objectLike({ SecretId: { Ref: id(consumer.databaseRole.secret) } }),
      DependsOn: [id(consumer.databaseRole.resource)],
    });
    template.hasResource('AWS::SecretsManager::RotationSchedule', {
      Properties: Match.objectLike({ SecretId: { Ref: id(database.secret) } }),
      DependsOn: [id(cleanup.databaseRole!.resource), id(database.migration), id(consumer.databaseRole.resource)].sort(),
    });
  });

  it('takes the role name from databaseRole', () => {
    const { template } = consumerStack({ databaseRole: 'orders_app' });
    template.hasResourceProperties('Custom::InboxDatabaseRole', { Role: 'orders_app' });
  });

  it('refuses a role name PostgreSQL would not keep, and grants that cannot work, naming each and the fix', () => {
    const attempt = (overrides: Partial<InboxConsumerProps>) => {
      try {
        consumerStack(overrides);
      } catch (error) {
        return (error as Error).message;
      }
      throw new Error('expected the consumer to be refused');
    };
    expect(attempt({ databaseRole: 'Orders' })).toContain("`databaseRole` 'Orders' is not a role name sqs-inbox accepts");
    expect(attempt({ databaseRole: 'rds_orders' })).toContain("starts with 'pg_' or 'rds', which PostgreSQL and Aurora reserve");
    expect(attempt({ databaseRole: 'x'.repeat(64) })).toContain('at most 63 characters');
    const grants = attempt({
      databaseGrants: [
        { table: 'orders', privileges: ['SELECT'] },
        { table: 'public.orders', privileges: [] },
        { table: 'pg_catalog.pg_authid', privileges: ['SELECT'] },
        { table: 'public.orders', privileges: ['DROP' as never] },
      ],
    });
    for (const expected of [
      "`databaseGrants[0]`.table 'orders' must be 'schema.name' in lower case, e.g. 'public.orders'.",
      '`databaseGrants[1]`.privileges must list at least one privilege',
      "`databaseGrants[2]`.table 'pg_catalog.pg_authid' is in a system schema",
      '`databaseGrants[3]`.privileges has "DROP"; use SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER, USAGE.',
    ]) {
      expect(grants).toContain(expected);
    }
  });

  it('refuses two roles of one name on one cluster, and the master user as a role', () => {
    const stack = testStack();
    const database = new InboxDatabase(stack, 'Db');
    new InboxConsumer(stack, 'A', {
      database,
      source: InboxSources.sqs(new InboxQueue(stack, 'Q1').queue),
      consumerName: 'a',
      entry: FIXTURE_HANDLER,
      databaseRole: 'shared_role',
    });
    new InboxConsumer(stack, 'B', {
      database,
      source: InboxSources.sqs(new InboxQueue(stack, 'Q2').queue),
      consumerName: 'b',
      entry: FIXTURE_HANDLER,
      databaseRole: 'shared_role',
    });
    new InboxCleanup(stack, 'Cleanup', { database, databaseRole: 'inbox_admin' });
    const message = synthError(stack);
    expect(message).toContain(
      "`databaseRole` 'shared_role' of Test/B/DatabaseRole (consumer b) is also the role of Test/A/DatabaseRole (consumer a) on the same cluster",
    );
    expect(message).toContain("`databaseRole` 'inbox_admin' of Test/Cleanup/DatabaseRole is the master user");
    expect(message.match(/shared_role/g)).toHaveLength(1); // reported once, by the later role
  });

  it('refuses at synth two consumer names that map to one default role (order-worker and order_worker), naming both', () => {
    const stack = testStack();
    const database = new InboxDatabase(stack, 'Db');
    for (const [id, consumerName] of [
      ['Dashed', 'order-worker'],
      ['Underscored', 'order_worker'],
    ] as const) {
      new InboxConsumer(stack, id, { database, source: InboxSources.sqs(new InboxQueue(stack, `${id}Queue`).queue), consumerName, entry: FIXTURE_HANDLER });
    }
    expect(synthError(stack)).toContain(
      "`databaseRole` 'inbox_consumer_order_worker' of Test/Underscored/DatabaseRole (consumer order_worker) is also the role of " +
        'Test/Dashed/DatabaseRole (consumer order-worker) on the same cluster',
    );
  });

  it("provisions a role on an imported cluster, leaving PUBLIC's privileges there and acknowledging that its secret is not rotated here", () => {
    const stack = testStack();
    const cluster = rds.DatabaseCluster.fromDatabaseClusterAttributes(stack, 'C', { clusterIdentifier: 'orders', dataApiEnabled: true });
    const secret = secretsmanager.Secret.fromSecretCompleteArn(stack, 'S', 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:orders-AbCdEf');
    const database = new InboxDatabase(stack, 'Db', { cluster, secret });
    const role = new InboxDatabaseRole(stack, 'Reporting', { database, roleName: 'inbox_reporting', purpose: 'consumer', label: 'consumer reporting' });
    const template = Template.fromStack(stack);
    template.resourceCountIs('AWS::SecretsManager::RotationSchedule', 0);
    // Someone else's database: PUBLIC's privileges there are theirs.
    template.hasResourceProperties('Custom::InboxDatabaseRole', { Role: 'inbox_reporting', PublicDefaults: 'keep' });
    template.hasResourceProperties('AWS::SecretsManager::SecretTargetAttachment', { TargetId: 'orders', TargetType: 'AWS::RDS::DBCluster' });
    expect(role.rotation).toBeUndefined();
    const acks = role.node
      .findChild('Secret')
      .node.metadata.filter((m) => m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
      .flatMap((m) => Object.keys(m.data as object));
    expect(acks).toEqual(['Annotation::AwsSolutions-SMG4']);
  });
});
