import { CreateQueueCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as migrationResource } from '../../lambda/functions/migration/migrate.js';
import { roleResourceHandler } from '../../lambda/functions/database-roles/role-resource.js';
import type { RoleResourceProperties } from '../../lambda/functions/database-roles/role-resource.js';
import { DataApiSession } from '../../lambda/inbox/transport/data-api/session.js';
import { sqsOutbox, sweepOutbox } from '../../lambda/inbox/outbox/index.js';
import { relayRows } from '../../lambda/inbox/outbox/relay.js';
import { inboxTables } from '../../lambda/inbox/sql/schema.js';
import { purge } from '../../lambda/inbox/sql/purge.js';
import { startDataApi } from '../../local/data-api/server.js';
import type { DataApiServer } from '../../local/data-api/server.js';
import { customResourceEvent, MIGRATION_RESOURCE, ROLE_RESOURCE } from '../support/custom-resource.js';
import { freshDatabase } from '../support/database.js';
import { dataApiClient } from '../support/inbox.js';
import { matrixTests, readMatrix, seedConsumerRows } from '../support/isolation-matrix.js';
import type { Actor } from '../support/isolation-matrix.js';
import { startSqsFixture } from '../support/sqs.js';
import type { SqsFixture } from '../support/sqs.js';
import { seededBytes, uniqueSuffix } from '../support/seed.js';

// The isolation matrix of docs/stack.md, cell by cell, on Aurora's form of the schema: every role made by the role
// custom resource's own code and signed in through the local Data API with its own secret.

// Roles are per PostgreSQL server, which test files share: every name here is unique to this run.
const run = uniqueSuffix();
const ROLE = {
  admin: `inbox_admin_${run}`,
  alpha: `inbox_consumer_alpha_${run}`,
  beta: `inbox_consumer_beta_${run}`,
  purge: `inbox_purge_${run}`,
  sweeper: `inbox_outbox_relay_${run}`,
};
type Name = keyof typeof ROLE;
const NAMES = Object.keys(ROLE) as Name[];
const secretOf = (name: Name) => `arn:aws:secretsmanager:us-east-1:123456789012:secret:${name}-${run}`;
const password = Object.fromEntries(NAMES.map((name) => [name, seededBytes(`the ${name} role's password`, 18).toString('base64')])) as Record<Name, string>;
const CONSUMERS = ['alpha', 'beta'] as const;

let superuser: pg.Pool;
let server: DataApiServer;
let client: ReturnType<typeof dataApiClient>;
let sqs: SqsFixture;
const sessionOf = (name: Name) =>
  new DataApiSession(
    { client, resourceArn: server.resourceArn, secretArn: secretOf(name), database: server.database },
    { callTimeoutMs: 10_000, resumeDelaysMs: [] },
  );

const roleResource = roleResourceHandler({
  readSecret: async (arn) => {
    const name = NAMES.find((candidate) => secretOf(candidate) === arn)!;
    return { username: ROLE[name], password: password[name] };
  },
  log: () => {},
  resumeDelaysMs: [],
});

/** The Create of a role's custom resource, as InboxDatabaseRole writes it. */
const create = (name: Name, properties: Partial<RoleResourceProperties>) =>
  customResourceEvent(ROLE_RESOURCE, 'Create', {
    ResourceArn: server.resourceArn,
    SecretArn: secretOf('admin'),
    Database: server.database,
    Role: ROLE[name],
    RoleSecretArn: secretOf(name),
    Grants: '[]',
    PublicDefaults: 'revoke',
    ...properties,
  });

beforeAll(async () => {
  const url = await freshDatabase('isolation');
  superuser = new pg.Pool({ connectionString: url, max: 2 });
  const database = new URL(url).pathname.slice(1);
  // Aurora's master user: not a superuser, may create roles, owns the database it was created with.
  await superuser.query(`CREATE ROLE ${ROLE.admin} LOGIN CREATEROLE PASSWORD '${password.admin}'`);
  await superuser.query(`ALTER DATABASE ${database} OWNER TO ${ROLE.admin}`);
  const secrets = Object.fromEntries(NAMES.map((name) => [secretOf(name), { username: ROLE[name], password: password[name] }]));
  server = await startDataApi({ databaseUrl: url, secrets });
  client = dataApiClient(server);
  process.env.INBOX_DATA_API_ENDPOINT = server.endpoint;
  const migration = { ResourceArn: server.resourceArn, SecretArn: secretOf('admin'), Database: server.database, Migrations: 'inbox' };
  await migrationResource(customResourceEvent(MIGRATION_RESOURCE, 'Create', migration));
  for (const consumer of CONSUMERS) await roleResource(create(consumer, { Purpose: 'consumer', Label: `consumer ${consumer}`, Consumer: consumer }));
  await roleResource(create('purge', { Purpose: 'purge', Label: 'purge' }));
  await roleResource(create('sweeper', { Purpose: 'outbox', Label: 'outbox relay' }));
  await seedConsumerRows((sql, params) => superuser.query(sql, params), CONSUMERS);
  sqs = await startSqsFixture();
}, 60_000);

afterAll(async () => {
  delete process.env.INBOX_DATA_API_ENDPOINT;
  await sqs?.close();
  client?.destroy();
  await server?.close();
  for (const role of Object.values(ROLE)) {
    await superuser.query(`DROP OWNED BY ${role}`).catch(() => {});
    await superuser.query(`DROP ROLE IF EXISTS ${role}`).catch(() => {});
  }
  await superuser?.end();
});

describe('the isolation matrix of docs/stack.md, on Aurora (signed in through the local Data API)', () => {
  matrixTests(readMatrix('aurora'), {
    // The matrix's columns, as the roles they name.
    actors: {
      'consumer A': (): Actor => ({ session: sessionOf('alpha'), consumer: 'alpha' }),
      'consumer B': (): Actor => ({ session: sessionOf('beta'), consumer: 'beta' }),
      purge: (): Actor => ({ session: sessionOf('purge') }),
      'sweeper / relay (InboxOutboxRelay)': (): Actor => ({ session: sessionOf('sweeper') }),
      migration: (): Actor => ({ session: sessionOf('admin') }),
    },
    query: () => (sql, params) => superuser.query(sql, params),
    consumers: CONSUMERS,
  });
});

describe('what the outbox scope means for the consumers, the relay and the sweeper', () => {
  it("keeps consumer B from marking consumer A's unsent outbox row sent, reading its body or deleting it", async () => {
    // Arrange
    const { rows } = await superuser.query<{ id: string }>("SELECT id FROM inbox.outbox_message WHERE idempotency_key = 'o-alpha'");
    const id = Number(rows[0]!.id);
    const beta = sessionOf('beta');

    // Act: what a hostile consumer B would try, each on its own (a refused statement ends its transaction).
    const marked = await beta.execute('UPDATE inbox.outbox_message SET sent_at = now(), attempts = attempts + 1 WHERE id = :id', { id });
    const read = await beta.execute('SELECT body FROM inbox.outbox_message WHERE id = :id', { id });
    const listed = await beta.execute('SELECT body FROM inbox.outbox_message WHERE consumer_name = :consumer', { consumer: 'alpha' });
    const deleting = beta.execute('DELETE FROM inbox.outbox_message WHERE id = :id', { id });

    // Assess: nothing changed, nothing read; A's row is still unsent, with its body.
    expect(marked.updated).toBe(0);
    expect([read.rows, listed.rows]).toEqual([[], []]);
    await expect(deleting).rejects.toThrow(/permission denied/);
    const after = await superuser.query('SELECT sent_at, attempts, body FROM inbox.outbox_message WHERE id = $1', [id]);
    expect(after.rows).toEqual([{ sent_at: null, attempts: 0, body: "alpha's outbox body" }]);
  });

  it("holds consumer A's FIFO row back behind consumer B's older unsent one it cannot read, and sends it once B's is sent", async () => {
    // Arrange: a FIFO queue; B's row of group g is older than A's, and A cannot see it.
    const { QueueUrl } = await sqs.client.send(new CreateQueueCommand({ QueueName: `order-${run}.fifo`, Attributes: { FifoQueue: 'true' } }));
    const insert = (consumer: string, key: string) =>
      superuser.query<{ id: string }>(
        `INSERT INTO inbox.outbox_message (consumer_name, message_key, position, idempotency_key, destination, body, group_id)
         VALUES ($1, $2, 0, $2, $3, $2, 'g') RETURNING id`,
        [consumer, key, QueueUrl],
      );
    const older = Number((await insert('beta', `b-${run}`)).rows[0]!.id);
    const mine = Number((await insert('alpha', `a-${run}`)).rows[0]!.id);
    const alpha = sessionOf('alpha');
    const { transport } = sqsOutbox({ client: sqs.client });
    expect((await alpha.execute('SELECT id FROM inbox.outbox_message WHERE id = :id', { id: older })).rows).toEqual([]);

    // Act: A's relay while B's row is unsent, then B's relay, then A's again.
    const held = await relayRows(alpha, inboxTables(), transport, [mine]);
    const first = await relayRows(sessionOf('beta'), inboxTables(), transport, [older]);
    const released = await relayRows(alpha, inboxTables(), transport, [mine]);

    // Assess: the queue got B's message, then A's.
    expect([held, first, released]).toEqual([
      { sent: 0, deferred: 1 },
      { sent: 1, deferred: 0 },
      { sent: 1, deferred: 0 },
    ]);
    const { Messages } = await sqs.client.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10 }));
    expect(Messages?.map((message) => message.Body)).toEqual([`b-${run}`, `a-${run}`]);
  });

  it("lets the sweeper, signed in as its role, send every consumer's unsent rows, and the purge delete every consumer's old claims", async () => {
    // Arrange: each consumer's seeded row of the FIFO group is unsent, and old enough for the sweep.
    const { QueueUrl } = await sqs.client.send(new CreateQueueCommand({ QueueName: `sweep-${run}.fifo`, Attributes: { FifoQueue: 'true' } }));
    await superuser.query("UPDATE inbox.outbox_message SET sent_at = now() WHERE sent_at IS NULL AND consumer_name NOT IN ('alpha', 'beta')");
    await superuser.query(
      `UPDATE inbox.outbox_message SET destination = $1, created_at = now() - interval '1 hour'
        WHERE idempotency_key IN ('o-alpha', 'o-beta') AND sent_at IS NULL`,
      [QueueUrl],
    );
    await superuser.query("UPDATE inbox.consumed_message SET processed_at = now() - interval '2 days' WHERE message_id IN ('m-alpha', 'm-beta')");

    // Act
    const swept = await sweepOutbox(sessionOf('sweeper'), { transport: sqsOutbox({ client: sqs.client }).transport });
    const purged = await purge(sessionOf('purge'), { retentionSeconds: 86_400 });

    // Assess
    expect(swept).toMatchObject({ sent: 2, deferred: 0, failures: [] });
    expect(purged.deleted).toBe(2);
    const { Messages } = await sqs.client.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10 }));
    expect(Messages?.map((message) => message.Body)).toEqual(["alpha's outbox body", "beta's outbox body"]);
  });
});
