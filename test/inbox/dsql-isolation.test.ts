import type { CloudFormationCustomResourceEvent } from 'aws-lambda';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DSQL_ROLE_RESOURCE_TYPE, DSQL_SCHEMA_RESOURCE_TYPE, dsqlSchemaHandler } from '../../lambda/functions/dsql-schema/dsql-schema.js';
import { dsql } from '../../lambda/inbox/transport/dsql/index.js';
import type { DsqlTarget } from '../../lambda/inbox/transport/dsql/index.js';
import type { InboxSession } from '../../lambda/inbox/transport/session.js';
import { dsqlRoleStatements } from '../../lib/dsql/dsql-role-sql.js';
import type { InboxRolePurpose } from '../../lib/database/inbox-database-role.js';
import { DSQL_PROFILE_EXEMPT, dsqlOnProfile, startDsqlProfile } from '../../local/dsql/profile.js';
import type { DsqlProfile } from '../../local/dsql/profile.js';
import { CreateQueueCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { sqsOutbox, sweepOutbox } from '../../lambda/inbox/outbox/index.js';
import { startSqsFixture } from '../support/sqs.js';
import { freshDatabase } from '../support/database.js';
import { MATRIX_FIFO, matrixTests, readMatrix, seedConsumerRows } from '../support/isolation-matrix.js';
import type { Actor } from '../support/isolation-matrix.js';
import { driverOf } from '../../lambda/inbox/transport/transport.js';
import { seededBytes, uniqueSuffix } from '../support/seed.js';

// The DSQL isolation matrix of docs/stack.md, cell by cell, on the DSQL profile: the schema and every role made by the
// DSQL schema function's own code from the statements InboxDsqlDatabase writes (lib/dsql/dsql-role-sql.ts), each role
// signing in as itself. PostgreSQL has no `AWS IAM GRANT`: a password stands in for the IAM token, set by the test.

const run = uniqueSuffix();
const ROLE = {
  alpha: `inbox_consumer_alpha_${run}`,
  beta: `inbox_consumer_beta_${run}`,
  gamma: `inbox_consumer_gamma_${run}`,
  purge: `inbox_purge_${run}`,
  sweeper: `inbox_outbox_relay_${run}`,
};
const PASSWORD = seededBytes("the roles' password", 18).toString('base64');
const CLUSTER = { Endpoint: 'abcdefghijklmnopqrstuvwxyz.dsql.eu-west-1.on.aws', Region: 'eu-west-1' };
const IAM_ROLE = 'arn:aws:iam::123456789012:role/InboxDsqlStack-Function-AbC123';

let url: string;
let direct: pg.Pool;
let profile: DsqlProfile;
const targets: DsqlTarget[] = [];

const event = (resourceType: string, properties: object) =>
  ({
    RequestType: 'Create',
    ResourceType: resourceType,
    ResourceProperties: { ServiceToken: 'arn:aws:lambda:eu-west-1:123456789012:function:x', ...CLUSTER, ...properties },
  }) as unknown as CloudFormationCustomResourceEvent;

const handler = dsqlSchemaHandler(() => dsqlOnProfile(profile, { database: new URL(url).pathname.slice(1) }));

/** Maps a role as InboxDsqlDatabase would, but for the IAM grant PostgreSQL lacks; then gives it the test's password. */
async function mapRole(role: string, purpose: InboxRolePurpose, schema: string, consumer?: string): Promise<void> {
  const statements = dsqlRoleStatements({ role, iamRoleArn: IAM_ROLE, purpose, grants: [], schema }).filter(
    (statement) => !statement.sql.startsWith('AWS IAM'),
  );
  await handler(
    event(DSQL_ROLE_RESOURCE_TYPE, {
      Role: role,
      IamRoleArn: IAM_ROLE,
      Statements: JSON.stringify(statements),
      ...(consumer === undefined ? {} : { Consumer: consumer, Schema: schema }),
    }),
  );
  await direct.query(`ALTER ROLE ${role} PASSWORD '${PASSWORD}'`);
}

function sessionAs(user: string, password = PASSWORD): InboxSession {
  const target = dsql({
    endpoint: profile.host,
    port: profile.port,
    region: 'us-east-1',
    user,
    database: new URL(url).pathname.slice(1),
    ssl: false,
    password: async () => password,
    maxConnections: 2,
  });
  targets.push(target);
  return driverOf(target).open({ callTimeoutMs: 10_000, resumeDelaysMs: [] });
}

beforeAll(async () => {
  url = await freshDatabase('dsql_isolation');
  direct = new pg.Pool({ connectionString: url, max: 2, options: DSQL_PROFILE_EXEMPT });
  // Strict: every statement the schema function sends, held to DSQL's supported SQL, the listed and the unlisted alike.
  profile = await startDsqlProfile(url, { strict: true });
  for (const schema of ['inbox', 'other']) await handler(event(DSQL_SCHEMA_RESOURCE_TYPE, { Schema: schema, Migrations: 'inbox' }));
  await mapRole(ROLE.alpha, 'consumer', 'inbox', 'alpha');
  await mapRole(ROLE.beta, 'consumer', 'inbox', 'beta');
  await mapRole(ROLE.gamma, 'consumer', 'other', 'gamma');
  await mapRole(ROLE.purge, 'purge', 'inbox');
  await mapRole(ROLE.sweeper, 'outbox', 'inbox');
  await seedConsumerRows((sql, params) => direct.query(sql, params), ['alpha', 'beta']);
}, 60_000);

afterAll(async () => {
  for (const target of targets) await target.pool.end().catch(() => {});
  await profile?.close();
  for (const role of Object.values(ROLE)) {
    await direct.query(`DROP OWNED BY ${role}`).catch(() => {});
    await direct.query(`DROP ROLE IF EXISTS ${role}`).catch(() => {});
  }
  await direct?.end();
});

const migrationSession = () =>
  driverOf(dsqlOnProfile(profile, { database: new URL(url).pathname.slice(1) })).open({ callTimeoutMs: 10_000, resumeDelaysMs: [] });

describe('the isolation matrix of docs/stack.md, on the DSQL profile', () => {
  matrixTests(readMatrix('dsql'), {
    // The matrix's columns, as the roles they name.
    actors: {
      'consumer A': (): Actor => ({ session: sessionAs(ROLE.alpha), consumer: 'alpha' }),
      'consumer B': (): Actor => ({ session: sessionAs(ROLE.beta), consumer: 'beta' }),
      'consumer C (its own schema)': (): Actor => ({ session: sessionAs(ROLE.gamma), consumer: 'gamma' }),
      purge: (): Actor => ({ session: sessionAs(ROLE.purge) }),
      'sweeper / relay (InboxOutboxRelay)': (): Actor => ({ session: sessionAs(ROLE.sweeper) }),
      // DSQL's admin, which the schema function signs in as: the profile's superuser plays it.
      migration: (): Actor => ({ session: migrationSession() }),
    },
    query: () => (sql, params) => direct.query(sql, params),
    consumers: ['alpha', 'beta'],
  });

  it("keeps consumer C to its own schema, where it claims, parks and sends as on Aurora, and records each consumer's role", async () => {
    const gamma = sessionAs(ROLE.gamma);
    await gamma.execute("INSERT INTO other.consumed_message (consumer_name, message_id) VALUES ('gamma', 'm-1')");
    await gamma.execute(
      `INSERT INTO other.outbox_message (consumer_name, message_key, position, idempotency_key, destination, body, group_id)
       VALUES ('gamma', 'm-1', 0, 'k-1', :destination, 'b', 'g')`,
      { destination: MATRIX_FIFO },
    );
    const held = await gamma.execute(`SELECT other.outbox_older_unsent(:destination, 'g', 9223372036854775807, '{}'::bigint[]) AS held`, {
      destination: MATRIX_FIFO,
    });
    expect(held.rows).toEqual([{ held: true }]);
    const { rows } = await direct.query("SELECT 'inbox' AS schema, * FROM inbox.role_scope UNION ALL SELECT 'other', * FROM other.role_scope ORDER BY 3");
    expect(rows).toEqual([
      { schema: 'inbox', role_name: ROLE.alpha, consumer_name: 'alpha' },
      { schema: 'inbox', role_name: ROLE.beta, consumer_name: 'beta' },
      { schema: 'other', role_name: ROLE.gamma, consumer_name: 'gamma' },
    ]);
    expect(profile.violations).toEqual([]);
  });

  it("lets the sweeper, signed in as its DSQL role, send every consumer's unsent rows of the schema, in order", async () => {
    // Arrange: the seeded rows of both consumers, old enough for the sweep, bound for a local FIFO queue.
    const sqs = await startSqsFixture();
    try {
      const { QueueUrl } = await sqs.client.send(new CreateQueueCommand({ QueueName: `sweep-${run}.fifo`, Attributes: { FifoQueue: 'true' } }));
      await direct.query(
        "UPDATE inbox.outbox_message SET destination = $1, created_at = now() - interval '1 hour' WHERE idempotency_key IN ('o-alpha', 'o-beta')",
        [QueueUrl],
      );

      // Act
      const swept = await sweepOutbox(sessionAs(ROLE.sweeper), { transport: sqsOutbox({ client: sqs.client }).transport });

      // Assess
      expect(swept).toMatchObject({ sent: 2, failures: [] });
      const { Messages } = await sqs.client.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10 }));
      expect(Messages?.map((message) => message.Body)).toEqual(["alpha's outbox body", "beta's outbox body"]);
    } finally {
      await sqs.close();
    }
  });
});
