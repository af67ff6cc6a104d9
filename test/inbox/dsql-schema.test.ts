import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CloudFormationCustomResourceEvent } from 'aws-lambda';
import { DSQL_ROLE_RESOURCE_TYPE, DSQL_SCHEMA_RESOURCE_TYPE, dsqlSchemaHandler } from '../../lambda/functions/dsql-schema/dsql-schema.js';
import type { DsqlRoleProperties, DsqlSchemaProperties } from '../../lambda/functions/dsql-schema/dsql-schema.js';
import { MigrationChangedError } from '../../lambda/inbox/errors.js';
import { DSQL_INBOX_MIGRATIONS } from '../../lambda/inbox/transport/dsql/migrations.js';
import { dsqlRoleStatements } from '../../lib/dsql/dsql-role-sql.js';
import { DSQL_PROFILE_EXEMPT, dsqlOnProfile, startDsqlProfile } from '../../local/dsql/profile.js';
import type { DsqlProfile } from '../../local/dsql/profile.js';
import { freshDatabase } from '../support/database.js';
import { EXAMPLE_ORDER_MIGRATIONS } from '../../demo/functions/example-migrations.js';
import { uniqueSuffix } from '../support/seed.js';

const IAM_ROLE = 'arn:aws:iam::123456789012:role/InboxDsqlStack-OrderWorkerRole-AbC123';
const ROLE = 'inbox_consumer_dsql_test';
// What consumers 'order-worker' and 'order_worker' both map to by default; per run, since roles are the server's.
const SHARED = `inbox_consumer_order_worker_${uniqueSuffix()}`;
let url: string;
let direct: pg.Pool;
let profile: DsqlProfile;
beforeAll(async () => {
  url = await freshDatabase('dsql_schema');
  direct = new pg.Pool({ connectionString: url, max: 2, options: DSQL_PROFILE_EXEMPT });
  // Strict: every statement the function sends, held to DSQL's supported SQL, the listed and the unlisted alike.
  profile = await startDsqlProfile(url, { strict: true });
});
afterAll(async () => {
  for (const role of [ROLE, SHARED]) {
    await direct.query(`DROP OWNED BY ${role}`).catch(() => {});
    await direct.query(`DROP ROLE IF EXISTS ${role}`).catch(() => {});
  }
  await profile.close();
  await direct.end();
});

const CLUSTER = { Endpoint: 'abcdefghijklmnopqrstuvwxyz.dsql.eu-west-1.on.aws', Region: 'eu-west-1' };
const event = (resourceType: string, properties: object, requestType: 'Create' | 'Update' = 'Create') =>
  ({
    RequestType: requestType,
    ResourceType: resourceType,
    ResourceProperties: { ServiceToken: 'arn:aws:lambda:eu-west-1:123456789012:function:x', ...CLUSTER, ...properties },
  }) as unknown as CloudFormationCustomResourceEvent;
const schemaEvent = (properties: Omit<DsqlSchemaProperties, keyof typeof CLUSTER>, requestType?: 'Create' | 'Update') =>
  event(DSQL_SCHEMA_RESOURCE_TYPE, properties, requestType);
const roleEvent = (statements: unknown, requestType?: 'Create' | 'Update', iamRoleArn = IAM_ROLE) =>
  event(
    DSQL_ROLE_RESOURCE_TYPE,
    { Role: ROLE, IamRoleArn: iamRoleArn, Statements: JSON.stringify(statements) } satisfies Omit<DsqlRoleProperties, keyof typeof CLUSTER>,
    requestType,
  );

// The DSQL profile plays the cluster, and its PostgreSQL the admin, for every statement it shares with DSQL; `AWS IAM GRANT` is DSQL's alone.
const handler = dsqlSchemaHandler(() => dsqlOnProfile(profile, { database: new URL(url).pathname.slice(1) }));
const credits = {
  name: 'credits',
  migrations: [
    { version: '1', name: 'create_credits', statements: ['CREATE TABLE IF NOT EXISTS public.credits (id text PRIMARY KEY, cents bigint NOT NULL)'] },
  ],
};
const SCHEMA = { Schema: 'inbox', Migrations: 'inbox,example-orders,credits', Sets: [EXAMPLE_ORDER_MIGRATIONS, credits] };
const tables = async () =>
  (
    await direct.query<{ name: string }>(
      `SELECT table_schema || '.' || table_name AS name FROM information_schema.tables WHERE table_schema IN ('inbox', 'public') ORDER BY 1`,
    )
  ).rows.map((row) => row.name);

describe('the DSQL schema function: the migrations, then the role mapping, one statement per transaction', () => {
  it('applies the inbox tables in their DSQL form and the app sets at deploy, and a second run is a no-op', async () => {
    const created = await handler(schemaEvent(SCHEMA));
    expect(created.PhysicalResourceId).toBe(`sqs-inbox-dsql-schema:${CLUSTER.Endpoint}:inbox`);
    expect(await tables()).toEqual([
      'inbox.consumed_message',
      'inbox.outbox_message',
      'inbox.parked_message',
      'inbox.role_scope',
      'inbox.schema_migration',
      'public.credits',
      'public.orders',
    ]);
    const inbox = DSQL_INBOX_MIGRATIONS.migrations;
    expect(created.Data).toMatchObject({
      Applied: inbox.length + 1 + 1,
      Versions: JSON.stringify({ inbox: inbox.at(-1)!.version, 'example-orders': 1, credits: 1 }),
    });
    const { rows: indexes } = await direct.query(`SELECT indexname FROM pg_indexes WHERE schemaname = 'inbox' AND indexname = 'consumed_message_processed_at'`);
    expect(indexes).toHaveLength(1);

    const again = await handler(schemaEvent(SCHEMA, 'Update'));
    expect(again.Data).toMatchObject({ Applied: 0 });
    expect(profile.violations).toEqual([]);
  });

  it('fails the deploy when an applied migration of the app changed, naming its version', async () => {
    await handler(schemaEvent(SCHEMA));
    const changed = {
      ...credits,
      migrations: [{ ...credits.migrations[0]!, statements: ['CREATE TABLE IF NOT EXISTS public.credits (id text PRIMARY KEY)'] }],
    };
    await expect(handler(schemaEvent({ ...SCHEMA, Sets: [EXAMPLE_ORDER_MIGRATIONS, changed] }, 'Update'))).rejects.toThrow(MigrationChangedError);
    await expect(handler(schemaEvent({ ...SCHEMA, Migrations: 'inbox,example-orders,credits,unknown' }))).rejects.toThrow(/unknown migration set "unknown"/);
  });

  it('maps a role with the consumer privileges once the tables exist, and a rerun (an Update) changes nothing', async () => {
    await handler(schemaEvent(SCHEMA));
    const statements = dsqlRoleStatements({ role: ROLE, iamRoleArn: IAM_ROLE, purpose: 'consumer', grants: [], schema: 'inbox' });
    const portable = statements.filter((statement) => !statement.sql.startsWith('AWS IAM'));
    const created = await handler(roleEvent(portable));
    expect(created).toEqual({ PhysicalResourceId: expect.stringContaining(`:${ROLE}`), Data: { Ran: portable.length, AlreadyDone: 0 } });
    const rerun = await handler(roleEvent(portable, 'Update'));
    expect(rerun.Data).toEqual({ Ran: portable.length - 1, AlreadyDone: 1 });
    const { rows } = await direct.query(
      `SELECT has_table_privilege('${ROLE}', 'inbox.consumed_message', 'INSERT') AS claims,
              has_table_privilege('${ROLE}', 'inbox.consumed_message', 'DELETE') AS deletes,
              (SELECT rolcanlogin FROM pg_roles WHERE rolname = '${ROLE}') AS login`,
    );
    expect(rows).toEqual([{ claims: true, deletes: false, login: true }]);
  });

  it('sends the IAM grant to the IAM role, and names the statement that fails', async () => {
    const statements = dsqlRoleStatements({ role: ROLE, iamRoleArn: IAM_ROLE, purpose: 'consumer', grants: [], schema: 'inbox' });
    expect(statements[1]).toEqual({ sql: `AWS IAM GRANT "${ROLE}" TO '${IAM_ROLE}'`, ignoreDuplicate: true });
    // PostgreSQL has no AWS IAM GRANT: the failure names the statement, and nothing after it runs.
    await expect(handler(roleEvent(statements))).rejects.toThrow(
      /role mapping statement 2 of \d+ failed: AWS IAM GRANT "inbox_consumer_dsql_test" TO 'arn:aws:iam::123456789012:role\//,
    );
    await expect(handler(roleEvent(statements, 'Create', 'arn:aws:iam::123456789012:user/me'))).rejects.toThrow(/is not an IAM role ARN/);
  });

  it('refuses a role mapped before for another consumer (order-worker, then order_worker) before it runs a statement, and lets the resource that mapped it rename its consumer', async () => {
    // Arrange: the first app's consumer, mapped and recorded; the second's asks for the same role with a grant of its own.
    await handler(schemaEvent(SCHEMA));
    const mapping = (consumer: string, grants: { table: string; privileges: 'SELECT'[] }[] = []) => ({
      Role: SHARED,
      IamRoleArn: IAM_ROLE,
      Consumer: consumer,
      Schema: 'inbox',
      Statements: JSON.stringify(
        dsqlRoleStatements({ role: SHARED, iamRoleArn: IAM_ROLE, purpose: 'consumer', grants, schema: 'inbox' }).filter((s) => !s.sql.startsWith('AWS IAM')),
      ),
    });
    await handler(event(DSQL_ROLE_RESOURCE_TYPE, mapping('order-worker')));
    const second = mapping('order_worker', [{ table: 'public.credits', privileges: ['SELECT'] }]);

    // Act + Assess: refused, naming the fix, with nothing of the second mapping run.
    await expect(handler(event(DSQL_ROLE_RESOURCE_TYPE, second))).rejects.toThrow(
      new RegExp(
        `role "${SHARED}" is mapped for consumer "order-worker" on this cluster, not for "order_worker"[\\s\\S]*Fix: give this consumer a \`databaseRole\` of its own`,
      ),
    );
    const { rows: credits } = await direct.query(`SELECT has_table_privilege('${SHARED}', 'public.credits', 'SELECT') AS granted`);
    expect(credits).toEqual([{ granted: false }]);

    // Act + Assess: an Update of the same resource renames the consumer it serves; the old name is then refused in turn.
    const renamed = mapping('order-worker-v2');
    await handler({ ...event(DSQL_ROLE_RESOURCE_TYPE, renamed, 'Update'), OldResourceProperties: { ...CLUSTER, ...mapping('order-worker') } } as never);
    const { rows } = await direct.query('SELECT consumer_name FROM inbox.role_scope WHERE role_name = $1', [SHARED]);
    expect(rows).toEqual([{ consumer_name: 'order-worker-v2' }]);
    await expect(handler(event(DSQL_ROLE_RESOURCE_TYPE, mapping('order-worker')))).rejects.toThrow(/is mapped for consumer "order-worker-v2"/);
    expect(profile.violations).toEqual([]);
  });
});
