import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CloudFormationCustomResourceEvent } from 'aws-lambda';
import { INBOX_MIGRATIONS, migrate } from '../../lambda/inbox/operations.js';
import { PostgresSession } from '../../lambda/inbox/transport/postgres/index.js';
import { dsqlRoleHandler } from '../../lambda/functions/dsql-roles/dsql-roles.js';
import type { DsqlRoleProperties } from '../../lambda/functions/dsql-roles/dsql-roles.js';
import { dsqlRoleStatements } from '../../lib/dsql/dsql-role-sql.js';
import { freshDatabase } from '../support/database.js';

const IAM_ROLE = 'arn:aws:iam::123456789012:role/InboxDsqlStack-OrderWorkerRole-AbC123';
let url: string;
let admin: pg.Pool;
beforeAll(async () => {
  url = await freshDatabase('dsql_roles');
  admin = new pg.Pool({ connectionString: url, max: 2 });
  await migrate(new PostgresSession({ pool: admin }, { callTimeoutMs: 10_000 }), [INBOX_MIGRATIONS]);
});
afterAll(async () => {
  await admin.query('DROP OWNED BY inbox_consumer_dsql_test').catch(() => {});
  await admin.query('DROP ROLE IF EXISTS inbox_consumer_dsql_test').catch(() => {});
  await admin.end();
});

const event = (statements: unknown, requestType: 'Create' | 'Update' = 'Create') =>
  ({
    RequestType: requestType,
    ResourceType: 'Custom::InboxDsqlRole',
    ResourceProperties: {
      ServiceToken: 'arn:aws:lambda:eu-west-1:123456789012:function:x',
      Endpoint: 'abcdefghijklmnopqrstuvwxyz.dsql.eu-west-1.on.aws',
      Region: 'eu-west-1',
      Role: 'inbox_consumer_dsql_test',
      IamRoleArn: IAM_ROLE,
      Statements: JSON.stringify(statements),
    } satisfies DsqlRoleProperties & { ServiceToken: string },
  }) as unknown as CloudFormationCustomResourceEvent;

// PostgreSQL plays DSQL's admin for every statement it shares with DSQL; `AWS IAM GRANT` is DSQL's alone.
const handler = dsqlRoleHandler(async () => {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return client;
});
const statements = dsqlRoleStatements({ role: 'inbox_consumer_dsql_test', iamRoleArn: IAM_ROLE, purpose: 'consumer', grants: [], schema: 'inbox' });

describe('the DSQL role function: the role mapping, one statement per transaction', () => {
  it('creates the role and grants it the consumer privileges, and a rerun (an Update) changes nothing', async () => {
    const portable = statements.filter((statement) => !statement.sql.startsWith('AWS IAM'));
    const created = await handler(event(portable));
    expect(created).toEqual({ PhysicalResourceId: expect.stringContaining(':inbox_consumer_dsql_test'), Data: { Ran: portable.length, AlreadyDone: 0 } });
    const rerun = await handler(event(portable, 'Update'));
    expect(rerun.Data).toEqual({ Ran: portable.length - 1, AlreadyDone: 1 });
    const { rows } = await admin.query(
      `SELECT has_table_privilege('inbox_consumer_dsql_test', 'inbox.consumed_message', 'INSERT') AS claims,
              has_table_privilege('inbox_consumer_dsql_test', 'inbox.consumed_message', 'DELETE') AS deletes,
              (SELECT rolcanlogin FROM pg_roles WHERE rolname = 'inbox_consumer_dsql_test') AS login`,
    );
    expect(rows).toEqual([{ claims: true, deletes: false, login: true }]);
  });

  it('sends the IAM grant to the IAM role, and names the statement that fails', async () => {
    expect(statements[1]).toEqual({ sql: `AWS IAM GRANT "inbox_consumer_dsql_test" TO '${IAM_ROLE}'`, ignoreDuplicate: true });
    // PostgreSQL has no AWS IAM GRANT: the failure names the statement, and nothing after it runs.
    await expect(handler(event(statements))).rejects.toThrow(
      /role mapping statement 2 of \d+ failed: AWS IAM GRANT "inbox_consumer_dsql_test" TO 'arn:aws:iam::123456789012:role\//,
    );
    await expect(
      handler({
        ...event(statements),
        ResourceProperties: { ...event(statements).ResourceProperties, IamRoleArn: 'arn:aws:iam::123456789012:user/me' },
      } as CloudFormationCustomResourceEvent),
    ).rejects.toThrow(/is not an IAM role ARN/);
  });
});
