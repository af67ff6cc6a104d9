import type { CloudFormationCustomResourceEvent } from 'aws-lambda';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as migrationResource } from '../../lambda/functions/migration/migrate.js';
import { roleResourceHandler } from '../../lambda/functions/database-roles/role-resource.js';
import type { RoleResourceProperties } from '../../lambda/functions/database-roles/role-resource.js';
import type { DatabaseCredentials } from '../../lambda/functions/database-roles/secret-values.js';
import { dataApi, DataApiError, inbox, PermanentError } from '../../lambda/inbox/index.js';
import { DataApiSession } from '../../lambda/inbox/transport/data-api/session.js';
import { purge } from '../../lambda/inbox/sql/purge.js';
import { startDataApi } from '../../local/data-api/server.js';
import type { DataApiServer } from '../../local/data-api/server.js';
import { customResourceEvent, MIGRATION_RESOURCE, ROLE_RESOURCE } from '../support/custom-resource.js';
import { freshDatabase } from '../support/database.js';
import { dataApiClient, lambdaContext, recordingLogger, recordingMetrics, sqsRecord } from '../support/inbox.js';
import { parkedMessages } from '../../lambda/inbox/parked/parking.js';
import { EXAMPLE_ORDER_MIGRATIONS } from '../../demo/functions/example-migrations.js';
import { seededBytes, uniqueSuffix } from '../support/seed.js';

// Roles are per PostgreSQL server, which test files share: every name here is unique to this run.
const run = uniqueSuffix();
const ROLES = {
  bystander: `bystander_${run}`,
  admin: `inbox_admin_${run}`,
  consumer: `inbox_consumer_orders_${run}`,
  purge: `inbox_purge_${run}`,
  outbox: `inbox_outbox_${run}`,
  credits: `inbox_consumer_credits_${run}`,
  foreign: `someone_${run}`,
  bounded: `inbox_bounded_${run}`,
  // What consumers 'order-worker' and 'order_worker' both map to by default.
  shared: `inbox_consumer_order_worker_${run}`,
};
const ARN = (name: string) => `arn:aws:secretsmanager:us-east-1:123456789012:secret:${name}-${run}`;
const SECRET = {
  admin: ARN('admin'),
  consumer: ARN('consumer'),
  purge: ARN('purge'),
  outbox: ARN('outbox'),
  credits: ARN('credits'),
  previous: ARN('previous'),
  bounded: ARN('bounded'),
  firstApp: ARN('first-app'),
  secondApp: ARN('second-app'),
  // The consumer's role after its password was rotated outside the deploy (rotation updates the secret).
  rotated: ARN('rotated'),
};
// As Secrets Manager generates them: printable ASCII.
const PASSWORD = {
  admin: seededBytes("the admin role's password", 18).toString('base64'),
  consumer: seededBytes("the consumer role's password", 18).toString('base64'),
  purge: seededBytes("the purge role's password", 18).toString('base64'),
  outbox: seededBytes("the outbox role's password", 18).toString('base64'),
  credits: seededBytes("the credits role's password", 18).toString('base64'),
  bounded: seededBytes("the bounded role's password", 18).toString('base64'),
  firstApp: seededBytes("the firstApp role's password", 18).toString('base64'),
  secondApp: seededBytes("the secondApp role's password", 18).toString('base64'),
};
const ORDERS_GRANT = JSON.stringify([{ on: 'public.orders', privileges: ['SELECT', 'INSERT', 'UPDATE'] }]);

/** What Secrets Manager holds: the role secrets the migration function reads at deploy. */
const secretsManager: Record<string, DatabaseCredentials> = {
  [SECRET.consumer]: { username: ROLES.consumer, password: PASSWORD.consumer },
  [SECRET.purge]: { username: ROLES.purge, password: PASSWORD.purge },
  [SECRET.outbox]: { username: ROLES.outbox, password: PASSWORD.outbox },
  [SECRET.credits]: { username: ROLES.credits, password: PASSWORD.credits },
  [SECRET.bounded]: { username: ROLES.bounded, password: PASSWORD.bounded },
  [SECRET.firstApp]: { username: ROLES.shared, password: PASSWORD.firstApp },
  [SECRET.secondApp]: { username: ROLES.shared, password: PASSWORD.secondApp },
};

let server: DataApiServer;
let superuser: pg.Pool;
let databaseUrl: string;

/**
 * Signs in straight to PostgreSQL as `user`: the local Data API keeps a pool per user, so a second password
 * for a user it already connected as would not be checked there.
 */
async function signsIn(user: string, password: string): Promise<boolean> {
  const url = new URL(databaseUrl);
  url.username = user;
  url.password = encodeURIComponent(password);
  const direct = new pg.Client({ connectionString: url.toString() });
  try {
    await direct.connect();
    return true;
  } catch (error) {
    expect((error as Error).message).toMatch(/password authentication failed/);
    return false;
  } finally {
    await direct.end().catch(() => {});
  }
}
let client: ReturnType<typeof dataApiClient>;
const logLines: string[] = [];
let firstReport: { revokedFromPublic: string[]; privileges: string[]; scope: string[] };
const roleResource = roleResourceHandler({
  readSecret: async (arn) => {
    const found = secretsManager[arn];
    if (!found) throw new Error(`no secret ${arn}`);
    return found;
  },
  log: (line) => logLines.push(line),
  resumeDelaysMs: [],
});

function sessionAs(secretArn: string): DataApiSession {
  return new DataApiSession({ client, resourceArn: server.resourceArn, secretArn, database: server.database }, { callTimeoutMs: 10_000, resumeDelaysMs: [] });
}

function roleEvent(
  requestType: 'Create' | 'Update' | 'Delete',
  overrides: Partial<RoleResourceProperties> = {},
  old?: Partial<RoleResourceProperties>,
): CloudFormationCustomResourceEvent {
  const properties: RoleResourceProperties = {
    ResourceArn: server.resourceArn,
    SecretArn: SECRET.admin,
    Database: server.database,
    Role: ROLES.consumer,
    RoleSecretArn: SECRET.consumer,
    Purpose: 'consumer',
    Label: 'consumer orders',
    Grants: ORDERS_GRANT,
    PublicDefaults: 'revoke',
    Consumer: 'orders',
    ...overrides,
  };
  return customResourceEvent(ROLE_RESOURCE, requestType, properties, {
    physicalId: `sqs-inbox-role:${server.database}:${properties.Role}`,
    old: { ...properties, ...old },
  });
}

/** The statement must be refused by PostgreSQL's privilege checks, not fail for another reason. */
async function refused(session: DataApiSession, sql: string): Promise<string> {
  try {
    await session.execute(sql);
  } catch (error) {
    expect(error, sql).toBeInstanceOf(DataApiError);
    const message = (error as Error).message;
    expect(message, sql).toMatch(/permission denied|must be owner/);
    return message;
  }
  throw new Error(`expected PostgreSQL to refuse: ${sql}`);
}

describe('database roles, signed in through the local Data API', () => {
  beforeAll(async () => {
    const url = await freshDatabase('roles');
    databaseUrl = url;
    superuser = new pg.Pool({ connectionString: url, max: 2 });
    const database = new URL(url).pathname.slice(1);
    // Aurora's master user: not a superuser, may create roles, owns the database it was created with.
    await superuser.query(`CREATE ROLE ${ROLES.admin} LOGIN CREATEROLE PASSWORD '${PASSWORD.admin}'`);
    await superuser.query(`ALTER DATABASE ${database} OWNER TO ${ROLES.admin}`);
    await superuser.query(`CREATE ROLE ${ROLES.foreign} LOGIN`);
    // Another role of the database, signing in through PUBLIC's CONNECT; and PostgreSQL 14's default of CREATE on
    // the public schema for PUBLIC, which 15 dropped.
    await superuser.query(`CREATE ROLE ${ROLES.bystander} LOGIN PASSWORD 'bystander'`);
    await superuser.query('GRANT CREATE ON SCHEMA public TO PUBLIC');
    server = await startDataApi({
      databaseUrl: url,
      secrets: {
        [SECRET.admin]: { username: ROLES.admin, password: PASSWORD.admin },
        [SECRET.consumer]: secretsManager[SECRET.consumer]!,
        [SECRET.purge]: secretsManager[SECRET.purge]!,
        [SECRET.outbox]: secretsManager[SECRET.outbox]!,
        [SECRET.credits]: secretsManager[SECRET.credits]!,
        [SECRET.bounded]: secretsManager[SECRET.bounded]!,
        [SECRET.rotated]: { username: ROLES.consumer, password: 'rotated-outside-the-deploy' },
      },
    });
    client = dataApiClient(server);
    process.env.INBOX_DATA_API_ENDPOINT = server.endpoint;
    const migration = {
      ResourceArn: server.resourceArn,
      SecretArn: SECRET.admin,
      Database: server.database,
      Migrations: 'inbox,example-orders',
      Sets: [EXAMPLE_ORDER_MIGRATIONS],
    };
    await migrationResource(customResourceEvent(MIGRATION_RESOURCE, 'Create', migration));
    // A table of the application that no inbox role was granted.
    await sessionAs(SECRET.admin).execute('CREATE TABLE public.payroll (employee text PRIMARY KEY, salary integer)');
    await roleResource(roleEvent('Create'));
    firstReport = JSON.parse(logLines.at(-1)!);
    await roleResource(roleEvent('Create', { Role: ROLES.purge, RoleSecretArn: SECRET.purge, Purpose: 'purge', Label: 'purge', Grants: '[]', Consumer: '' }));
    await roleResource(
      roleEvent('Create', { Role: ROLES.outbox, RoleSecretArn: SECRET.outbox, Purpose: 'outbox', Label: 'outbox', Grants: '[]', Consumer: '' }),
    );
  }, 60_000);

  afterAll(async () => {
    delete process.env.INBOX_DATA_API_ENDPOINT;
    client?.destroy();
    await server?.close();
    for (const role of Object.values(ROLES)) {
      await superuser.query(`DROP OWNED BY ${role}`).catch(() => {});
      await superuser.query(`DROP ROLE IF EXISTS ${role}`).catch(() => {});
    }
    await superuser?.end();
  });

  it('leaves the inbox schema owned by the migration user, the only one holding the master secret', async () => {
    const { rows } = await superuser.query("SELECT nspowner::regrole::text AS owner FROM pg_namespace WHERE nspname = 'inbox'");
    expect(rows).toEqual([{ owner: ROLES.admin }]);
  });

  it("creates each role with its own secret's password, stored only as a SCRAM verifier", async () => {
    const { rows } = await sessionAs(SECRET.consumer).execute('SELECT current_user AS me');
    expect(rows).toEqual([{ me: ROLES.consumer }]);
    expect((await sessionAs(SECRET.purge).execute('SELECT current_user AS me')).rows).toEqual([{ me: ROLES.purge }]);
    // The secret's password signs in, another one does not: the role got exactly the generated password.
    expect(await signsIn(ROLES.consumer, PASSWORD.consumer)).toBe(true);
    expect(await signsIn(ROLES.consumer, 'not-the-generated-password')).toBe(false);
    expect(await signsIn(ROLES.purge, PASSWORD.purge)).toBe(true);
    const stored = await superuser.query(
      'SELECT rolname, rolpassword, rolsuper, rolcreaterole, rolcreatedb FROM pg_authid WHERE rolname = ANY($1) ORDER BY rolname',
      [[ROLES.consumer, ROLES.purge]],
    );
    for (const role of stored.rows) {
      expect(role.rolpassword).toMatch(/^SCRAM-SHA-256\$4096:[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$/);
      expect([role.rolsuper, role.rolcreaterole, role.rolcreatedb]).toEqual([false, false, false]);
    }
  });

  it('lets the consumer claim, apply its effect, recognise a duplicate, park and replay, signed in as its role', async () => {
    // Arrange: the real handler, configured with the consumer's secret only.
    let rejecting = true;
    const handler = inbox<{ orderId: string }>({
      consumer: 'orders',
      database: dataApi({ resourceArn: server.resourceArn, secretArn: SECRET.consumer, database: server.database, client }),
      onPermanentError: 'park',
      logger: recordingLogger(),
      metrics: recordingMetrics(),
      apply: async (tx, message) => {
        if (rejecting && message.body.orderId === 'order-2') throw new PermanentError('not yet');
        await tx.execute(
          `INSERT INTO public.orders (order_id, status, shipped_count) VALUES (:id, 'shipped', 1)
           ON CONFLICT (order_id) DO UPDATE SET shipped_count = orders.shipped_count + 1`,
          { id: message.body.orderId },
        );
      },
    });
    const first = sqsRecord({ body: { orderId: 'order-1' }, key: `k1-${run}` });
    const parkedRecord = sqsRecord({ body: { orderId: 'order-2' }, key: `k2-${run}` });

    // Act
    const results = [
      await handler({ Records: [first, parkedRecord] }, lambdaContext() as never),
      await handler({ Records: [first] }, lambdaContext() as never),
    ];
    const [parked] = await parkedMessages(handler).list();
    rejecting = false;
    const replay = await parkedMessages(handler).replay(parked!.id);

    // Assess
    expect(results).toEqual([{ batchItemFailures: [] }, { batchItemFailures: [] }]);
    expect(replay).toBe('replayed');
    const orders = await superuser.query('SELECT order_id, shipped_count FROM public.orders ORDER BY order_id');
    expect(orders.rows).toEqual([
      { order_id: 'order-1', shipped_count: 1 },
      { order_id: 'order-2', shipped_count: 1 },
    ]);
  });

  /** Two ways to hold a statement inside PostgreSQL past the call timeout, each ended by `release()`. */
  const holds = {
    'a row lock': async (orderId: string) => {
      const holder = await superuser.connect();
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM public.orders WHERE order_id = $1 FOR UPDATE', [orderId]);
      return async () => {
        await holder.query('COMMIT');
        holder.release();
      };
    },
    "the local server's slow-statement fault": async () => {
      server.faults.slowStatement({ ms: 1_500, match: (sql) => sql.includes('UPDATE public.orders') });
      return async () => server.faults.clear();
    },
  };

  it.each(Object.keys(holds) as (keyof typeof holds)[])(
    "bounds a single statement on the server with the role's statement_timeout: held past the call timeout (by %s), it is cancelled and never lands later",
    async (how) => {
      // Arrange: a consumer role whose sessions cancel a statement after 600 ms, under a 1 s call timeout.
      await roleResource(
        roleEvent('Create', { Role: ROLES.bounded, RoleSecretArn: SECRET.bounded, Label: 'consumer bounded', StatementTimeoutMs: '600', Consumer: 'bounded' }),
      );
      expect((await sessionAs(SECRET.bounded).execute('SHOW statement_timeout')).rows).toEqual([{ statement_timeout: '600ms' }]);
      // A call cannot leave its pooled connection unbounded for the next one: each starts from the role's value.
      await sessionAs(SECRET.bounded).execute("SELECT set_config('statement_timeout', '0', false)");
      expect((await sessionAs(SECRET.bounded).execute('SHOW statement_timeout')).rows).toEqual([{ statement_timeout: '600ms' }]);
      const logger = recordingLogger();
      const handler = inbox<{ orderId: string }>({
        consumer: 'bounded',
        database: dataApi({ resourceArn: server.resourceArn, secretArn: SECRET.bounded, database: server.database, client }),
        callTimeoutMs: 1_000,
        logger,
        metrics: recordingMetrics(),
        statement: {
          sql: "UPDATE public.orders SET status = 'shipped', shipped_count = shipped_count + 1 WHERE order_id = :id AND EXISTS (SELECT 1 FROM claimed)",
          params: (message) => ({ id: message.body.orderId }),
        },
      });
      const orderId = `held-${run}-${how.length}`;
      await superuser.query("INSERT INTO public.orders (order_id, status, shipped_count) VALUES ($1, 'new', 0)", [orderId]);
      const release = await holds[how](orderId);
      const record = sqsRecord({ body: { orderId }, key: orderId });

      // Act: the statement is held inside PostgreSQL; the hold ends after the record failed, and the
      // statement, had it outlived its client, would then commit.
      const response = await handler({ Records: [record] }, lambdaContext() as never);
      await release();
      await new Promise((resolve) => setTimeout(resolve, 1_000));

      // Assess: failed, as a statement the server cancelled (its outcome known: nothing committed), and
      // neither the claim nor the effect landed once the hold was gone.
      expect(response.batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
      const order = await superuser.query('SELECT status, shipped_count FROM public.orders WHERE order_id = $1', [orderId]);
      expect(order.rows).toEqual([{ status: 'new', shipped_count: 0 }]);
      expect((await superuser.query('SELECT 1 FROM inbox.consumed_message WHERE message_id = $1', [orderId])).rows).toEqual([]);
      const failure = logger.lines.find((line) => line.message.startsWith('record failed'))!.extra[0] as { error: { message: string } };
      expect(failure.error.message).toContain('canceling statement due to statement timeout');
    },
  );

  it('refuses the consumer anything beyond its claims and its grants: no DROP, DELETE, DDL, other tables or roles', async () => {
    const consumer = sessionAs(SECRET.consumer);
    for (const sql of [
      'DROP TABLE inbox.consumed_message',
      'ALTER TABLE inbox.consumed_message ADD COLUMN evil integer',
      'DELETE FROM inbox.consumed_message',
      'UPDATE inbox.consumed_message SET processed_at = now()',
      'TRUNCATE inbox.parked_message',
      "UPDATE inbox.parked_message SET body = 'rewritten'",
      'DELETE FROM inbox.parked_message',
      'SELECT * FROM inbox.schema_migration',
      'DELETE FROM public.orders',
      'SELECT * FROM public.payroll',
      'CREATE TABLE public.evil (id integer)',
      'CREATE TABLE inbox.evil (id integer)',
      'CREATE ROLE evil',
      `ALTER ROLE ${ROLES.consumer} CREATEROLE`,
      `GRANT ${ROLES.admin} TO ${ROLES.consumer}`,
    ]) {
      await refused(consumer, sql);
    }
  });

  it("takes PUBLIC's CONNECT, TEMPORARY and CREATE on public from the inbox's own database; each role gets only its CONNECT", async () => {
    // Assess: what the first deploy revoked from PUBLIC, and what the consumer holds instead.
    expect(firstReport.revokedFromPublic).toEqual([`CONNECT, TEMPORARY ON DATABASE "${server.database}"`, 'CREATE ON SCHEMA "public"']);
    expect(firstReport.privileges).toContain(`CONNECT ON DATABASE "${server.database}"`);
    const acl = await superuser.query(
      `SELECT a.grantee::regrole::text AS grantee, a.privilege_type AS privilege FROM pg_database d, aclexplode(d.datacl) a
        WHERE d.datname = current_database() AND a.grantee = ANY(ARRAY[$1, $2, $3]::regrole[]) ORDER BY 1, 2`,
      [ROLES.consumer, ROLES.purge, ROLES.outbox],
    );
    expect(acl.rows).toEqual([ROLES.consumer, ROLES.outbox, ROLES.purge].sort().map((grantee) => ({ grantee, privilege: 'CONNECT' })));
    // No inbox role may create a temporary table or an object in the public schema.
    for (const secret of [SECRET.consumer, SECRET.purge, SECRET.outbox]) {
      await refused(sessionAs(secret), 'CREATE TEMPORARY TABLE scratch (id integer)');
      await refused(sessionAs(secret), 'CREATE TABLE public.evil (id integer)');
    }
    // Every other role of this database lost PUBLIC's CONNECT too: the documented price of taking it from PUBLIC.
    const url = new URL(databaseUrl);
    url.username = ROLES.bystander;
    url.password = 'bystander';
    const bystander = new pg.Client({ connectionString: url.toString() });
    await expect(bystander.connect()).rejects.toThrow(/permission denied for database/);
    await bystander.end().catch(() => {});
  });

  it("scopes the consumer to its own claims, parked messages and outbox rows: another consumer's are neither seen nor written", async () => {
    // Arrange: a neighbour consumer on the same database, with a claim, a parked message and an unsent outbox row.
    await superuser.query(`INSERT INTO inbox.consumed_message (consumer_name, message_id) VALUES ('neighbour', 'secret-${run}')`);
    await superuser.query(
      `INSERT INTO inbox.parked_message (consumer_name, sqs_message_id, body, attributes, error_class, error_message, attempt)
       VALUES ('neighbour', 'p-${run}', 'the neighbour''s body', '{}', 'PermanentError', 'no', 1)`,
    );
    await superuser.query(
      `INSERT INTO inbox.outbox_message (consumer_name, message_key, position, idempotency_key, destination, body)
       VALUES ('neighbour', 'k', 0, 'n-${run}', 'https://sqs.us-east-1.amazonaws.com/123456789012/q.fifo', 'x')`,
    );
    const consumer = sessionAs(SECRET.consumer);
    const count = async (sql: string) => Number((await consumer.execute(sql)).rows[0]!.n);

    // Act + Assess: reads see none of the neighbour's claims, parked bodies or outbox bodies.
    expect(await count("SELECT count(*) AS n FROM inbox.consumed_message WHERE consumer_name = 'neighbour'")).toBe(0);
    expect(await count("SELECT count(*) AS n FROM inbox.parked_message WHERE consumer_name = 'neighbour'")).toBe(0);
    expect(await count(`SELECT count(*) AS n FROM inbox.outbox_message WHERE idempotency_key = 'n-${run}'`)).toBe(0);
    // Marking the neighbour's unsent row sent (so that it is never delivered) changes nothing.
    const marked = await consumer.execute(`UPDATE inbox.outbox_message SET sent_at = now() WHERE idempotency_key = 'n-${run}'`);
    expect(marked.updated).toBe(0);
    expect((await superuser.query(`SELECT sent_at FROM inbox.outbox_message WHERE idempotency_key = 'n-${run}'`)).rows).toEqual([{ sent_at: null }]);
    // Writes under another consumer's name are refused: no claim that would make the neighbour skip a message.
    for (const sql of [
      `INSERT INTO inbox.consumed_message (consumer_name, message_id) VALUES ('neighbour', 'forged-${run}')`,
      `INSERT INTO inbox.parked_message (consumer_name, sqs_message_id, body, attributes, error_class, error_message, attempt)
       VALUES ('neighbour', 'forged-${run}', 'b', '{}', 'E', 'e', 1)`,
      `INSERT INTO inbox.outbox_message (consumer_name, message_key, position, idempotency_key, destination, body)
       VALUES ('neighbour', 'k', 0, 'forged-${run}', 'https://sqs.us-east-1.amazonaws.com/123456789012/q', 'x')`,
    ]) {
      await expect(consumer.execute(sql), sql).rejects.toThrow(/violates row-level security policy/);
    }
    // Its own name works (the relay's FIFO check across consumers: test/inbox/isolation.test.ts).
    await consumer.execute(`INSERT INTO inbox.consumed_message (consumer_name, message_id) VALUES ('orders', 'own-${run}')`);
    expect(await count(`SELECT count(*) AS n FROM inbox.consumed_message WHERE consumer_name = 'orders' AND message_id = 'own-${run}'`)).toBe(1);
    // The purge is not scoped: it still sees every consumer's claims.
    expect(
      Number((await sessionAs(SECRET.purge).execute(`SELECT count(*) AS n FROM inbox.consumed_message WHERE message_id = 'secret-${run}'`)).rows[0]!.n),
    ).toBe(1);
    expect(firstReport.scope).toEqual(['orders']);
  });

  it('lets the purge delete old inbox rows and nothing else: no INSERT, no parked messages, no other tables', async () => {
    // Arrange: two claims, one of them older than the retention.
    await superuser.query(
      `INSERT INTO inbox.consumed_message (consumer_name, message_id, processed_at) VALUES ('other', 'old-${run}', now() - interval '2 days'), ('other', 'new-${run}', now())`,
    );
    const purger = sessionAs(SECRET.purge);

    // Act
    const report = await purge(purger, { retentionSeconds: 86_400 });

    // Assess
    expect(report.deleted).toBe(1);
    const left = await superuser.query(`SELECT message_id FROM inbox.consumed_message WHERE consumer_name = 'other'`);
    expect(left.rows).toEqual([{ message_id: `new-${run}` }]);
    for (const sql of [
      "INSERT INTO inbox.consumed_message (consumer_name, message_id) VALUES ('evil', 'x')",
      "UPDATE inbox.consumed_message SET payload_sha256 = '\\x00'",
      'SELECT * FROM inbox.parked_message',
      'SELECT * FROM public.orders',
      'DROP TABLE inbox.consumed_message',
      'CREATE TABLE public.evil (id integer)',
    ]) {
      await refused(purger, sql);
    }
  });

  it('lets the outbox sweeper read, mark and delete outbox rows and nothing else: no claim, no parked message, no other table', async () => {
    await superuser.query(
      `INSERT INTO inbox.outbox_message (consumer_name, message_key, position, idempotency_key, destination, body)
       VALUES ('other', 'k', 0, 'sweep-${run}', 'https://sqs.us-east-1.amazonaws.com/123456789012/q', 'x')`,
    );
    const sweeper = sessionAs(SECRET.outbox);
    const { rows } = await sweeper.execute(`SELECT id FROM inbox.outbox_message WHERE idempotency_key = 'sweep-${run}'`);
    await sweeper.execute('UPDATE inbox.outbox_message SET sent_at = now(), attempts = attempts + 1, last_error = NULL WHERE id = :id', {
      id: Number(rows[0]!.id),
    });
    await sweeper.execute('DELETE FROM inbox.outbox_message WHERE id = :id', { id: Number(rows[0]!.id) });
    for (const sql of [
      'SELECT * FROM inbox.consumed_message',
      "DELETE FROM inbox.consumed_message WHERE consumer_name = 'other'",
      "INSERT INTO inbox.outbox_message (consumer_name, message_key, position, idempotency_key, destination, body) VALUES ('e', 'k', 0, 'e', 'https://x', 'x')",
      "UPDATE inbox.outbox_message SET body = 'changed'",
      'SELECT * FROM inbox.parked_message',
      'SELECT * FROM public.orders',
    ]) {
      await refused(sweeper, sql);
    }
  });

  it("grants an INSERT the sequences its table's serial columns draw from, so the first deploy's inserts work", async () => {
    // Arrange: a bigserial key, an identity key, and a default drawn from a sequence of its own.
    const admin = sessionAs(SECRET.admin);
    await admin.execute('CREATE TABLE public.credits (id bigserial PRIMARY KEY, account text NOT NULL, amount integer NOT NULL)');
    await admin.execute('CREATE TABLE public.ledger (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, account text NOT NULL)');
    await admin.execute('CREATE SEQUENCE public.voucher_number');
    await admin.execute("CREATE TABLE public.vouchers (code text PRIMARY KEY, number bigint NOT NULL DEFAULT nextval('public.voucher_number'))");
    const insertOnly = ['credits', 'ledger', 'vouchers'].map((table) => ({ on: `public.${table}`, privileges: ['INSERT'] }));
    const credits = { Role: ROLES.credits, RoleSecretArn: SECRET.credits, Label: 'consumer credits', Grants: JSON.stringify(insertOnly) };

    // Act
    await roleResource(roleEvent('Create', credits));
    const consumer = sessionAs(SECRET.credits);
    await consumer.execute("INSERT INTO public.credits (account, amount) VALUES ('acct-1', 5)");
    await consumer.execute("INSERT INTO public.ledger (account) VALUES ('acct-1')");
    await consumer.execute("INSERT INTO public.vouchers (code) VALUES ('v-1')");

    // Assess
    const inserted = await superuser.query(
      'SELECT (SELECT count(*) FROM public.credits)::int + (SELECT count(*) FROM public.ledger)::int + (SELECT count(*) FROM public.vouchers)::int AS n',
    );
    expect(inserted.rows).toEqual([{ n: 3 }]);
    expect(JSON.parse(logLines.at(-1)!).granted).toEqual(
      expect.arrayContaining(['USAGE ON SEQUENCE "public"."credits_id_seq"', 'USAGE ON SEQUENCE "public"."voucher_number"']),
    );
    // Nothing on the identity column's sequence: PostgreSQL draws identity values without a privilege check.
    expect(JSON.parse(logLines.at(-1)!).privileges.filter((p: string) => p.includes('ledger'))).toEqual(['INSERT ON TABLE "public"."ledger"']);

    // Act: INSERT taken away, the sequences go with it.
    const selectOnly = JSON.stringify([{ on: 'public.credits', privileges: ['SELECT'] }]);
    await roleResource(roleEvent('Update', { ...credits, Grants: selectOnly }, credits));
    expect(JSON.parse(logLines.at(-1)!).revoked).toEqual(expect.arrayContaining(['USAGE ON SEQUENCE "public"."credits_id_seq"']));
    await refused(consumer, "SELECT nextval('public.credits_id_seq')");
  });

  it('brings the privileges to what an update says (revoking the rest), and leaves the password to rotation', async () => {
    // Arrange: the password was rotated since the deploy that created the role.
    await superuser.query(`ALTER ROLE ${ROLES.consumer} PASSWORD 'rotated-outside-the-deploy'`);
    const narrower = JSON.stringify([{ on: 'public.orders', privileges: ['SELECT'] }]);

    // Act: same secret, fewer grants.
    await roleResource(roleEvent('Update', { Grants: narrower }, { Grants: ORDERS_GRANT }));

    // Assess
    expect(await signsIn(ROLES.consumer, 'rotated-outside-the-deploy')).toBe(true);
    // Signed in with the rotated password, as the function does after rotation: the deploy's secret signs in
    // only over a connection the local Data API kept from before the rotation, which a loaded run may not keep.
    const consumer = sessionAs(SECRET.rotated);
    expect((await consumer.execute('SELECT count(*) AS n FROM public.orders')).rows[0]!.n).toBeDefined();
    await refused(consumer, "INSERT INTO public.orders (order_id, status) VALUES ('order-3', 'shipped')");
    expect(JSON.parse(logLines.at(-1)!)).toMatchObject({
      role: ROLES.consumer,
      passwordSet: false,
      revoked: ['INSERT ON TABLE "public"."orders"', 'UPDATE ON TABLE "public"."orders"'],
    });

    // Act: a new secret for the role sets its password again.
    await roleResource(roleEvent('Update', { Grants: ORDERS_GRANT }, { Grants: narrower, RoleSecretArn: SECRET.previous }));
    expect(JSON.parse(logLines.at(-1)!)).toMatchObject({
      passwordSet: true,
      granted: ['INSERT ON TABLE "public"."orders"', 'UPDATE ON TABLE "public"."orders"'],
    });
    expect(await signsIn(ROLES.consumer, PASSWORD.consumer)).toBe(true);
    expect(await signsIn(ROLES.consumer, 'rotated-outside-the-deploy')).toBe(false);
  });

  it("grants the consumer the app's own table that the same deploy's migration created before it", async () => {
    // Arrange: a deploy that adds the app's own set (as InboxDatabase `migrations` carries it: scalars as strings) and a grant on its table.
    const ledger = [
      {
        name: 'ledger',
        migrations: [{ version: '1', name: 'create_ledger', statements: ['CREATE TABLE public.journal (entry text PRIMARY KEY, cents bigint NOT NULL)'] }],
      },
    ];
    const before = {
      ResourceArn: server.resourceArn,
      SecretArn: SECRET.admin,
      Database: server.database,
      Migrations: 'inbox,example-orders',
      Sets: [EXAMPLE_ORDER_MIGRATIONS],
    };
    const grants = JSON.stringify([...JSON.parse(ORDERS_GRANT), { on: 'public.journal', privileges: ['SELECT', 'INSERT'] }]);

    // Act: in the order the template's DependsOn gives them, the migration first, then the role.
    await migrationResource(
      customResourceEvent(
        MIGRATION_RESOURCE,
        'Update',
        { ...before, Migrations: 'inbox,example-orders,ledger', Sets: [EXAMPLE_ORDER_MIGRATIONS, ...ledger] },
        { physicalId: `sqs-inbox-schema:${server.database}:inbox`, old: before },
      ),
    );
    await roleResource(roleEvent('Update', { Grants: grants }, { Grants: ORDERS_GRANT }));

    // Assess
    const consumer = sessionAs(SECRET.consumer);
    await consumer.execute("INSERT INTO public.journal (entry, cents) VALUES ('credit-1', 250)");
    expect((await consumer.execute('SELECT entry, cents FROM public.journal')).rows).toEqual([{ entry: 'credit-1', cents: 250 }]);
    await refused(consumer, "DELETE FROM public.journal WHERE entry = 'credit-1'");
  });

  it('logs role names and privileges, never a password or its verifier', () => {
    const log = logLines.join('\n');
    expect(log).toContain(ROLES.consumer);
    expect(log).toContain('INSERT ON TABLE \\"inbox\\".\\"consumed_message\\"');
    expect(log).toContain('DELETE ON TABLE \\"inbox\\".\\"consumed_message\\"');
    for (const password of [PASSWORD.consumer, PASSWORD.purge, PASSWORD.admin]) expect(log).not.toContain(password);
    expect(log).not.toContain('SCRAM-SHA-256');
  });

  it('refuses to adopt a role it did not create, or the master user, and a grant on a table that does not exist', async () => {
    await expect(roleResource(roleEvent('Create', { Role: ROLES.foreign }))).rejects.toThrow(
      `role "${ROLES.foreign}" already exists and was not created by sqs-inbox, so it is neither adopted nor changed. Fix:`,
    );
    await expect(roleResource(roleEvent('Create', { Role: ROLES.admin }))).rejects.toThrow(/is the user the migration signs in as \(the master user\)\. Fix:/);
    await expect(roleResource(roleEvent('Create', { Grants: JSON.stringify([{ on: 'public.invoices', privileges: ['SELECT'] }]) }))).rejects.toThrow(
      /public\.invoices does not exist, so it cannot be granted\. Fix: create it in a migration/,
    );
    const foreign = await superuser.query('SELECT rolpassword FROM pg_authid WHERE rolname = $1', [ROLES.foreign]);
    expect(foreign.rows).toEqual([{ rolpassword: null }]);
  });

  it("refuses a second deploy's role made for another consumer under the same name (order-worker, then order_worker), and keeps the first one's password and scope", async () => {
    // Arrange: two apps on one database, each with its own secret, whose consumer names map to one role.
    const firstApp = { Role: ROLES.shared, RoleSecretArn: SECRET.firstApp, Label: 'consumer order-worker', Consumer: 'order-worker', Grants: '[]' };
    const secondApp = { Role: ROLES.shared, RoleSecretArn: SECRET.secondApp, Label: 'consumer order_worker', Consumer: 'order_worker', Grants: '[]' };
    await roleResource(roleEvent('Create', firstApp));

    // Act + Assess: refused, naming the fix. One request after the other, each awaited as it is made: started
    // together, the second one's rejection could land before anything awaited it, an unhandled rejection
    // that failed the run.
    const refusal = `role "${ROLES.shared}" was created by sqs-inbox for "consumer order-worker", not for "consumer order_worker"`;
    const second = roleResource(roleEvent('Create', secondApp));
    await expect(second).rejects.toThrow(refusal);
    await expect(second).rejects.toThrow(/Fix: give this one a `databaseRole` of its own/);
    // An update that renames its role onto the taken one is a new role for that resource, refused alike.
    await expect(roleResource(roleEvent('Update', secondApp, { ...secondApp, Role: `inbox_consumer_order_worker_2_${run}` }))).rejects.toThrow(refusal);

    // Assess: the first app still signs in, scoped as it was.
    expect(await signsIn(ROLES.shared, PASSWORD.firstApp)).toBe(true);
    expect(await signsIn(ROLES.shared, PASSWORD.secondApp)).toBe(false);
    const scope = await superuser.query('SELECT consumer_name FROM inbox.role_scope WHERE role_name = $1', [ROLES.shared]);
    expect(scope.rows).toEqual([{ consumer_name: 'order-worker' }]);

    // Act + Assess: the second app's stack deleted (as a stack whose role two deploys shared before this check): the role stays.
    await roleResource(roleEvent('Delete', secondApp));
    expect(JSON.parse(logLines.at(-1)!)).toMatchObject({ message: 'database role left: it was created for another deploy', dropped: false });
    expect(await signsIn(ROLES.shared, PASSWORD.firstApp)).toBe(true);
  });

  it('lets the resource that made a role rename the consumer it serves, and then refuses the old name to another deploy', async () => {
    // Arrange: the role of the test above, made for 'order-worker'.
    const before = { Role: ROLES.shared, RoleSecretArn: SECRET.firstApp, Label: 'consumer order-worker', Consumer: 'order-worker', Grants: '[]' };
    const after = { ...before, Label: 'consumer order-worker-v2', Consumer: 'order-worker-v2' };

    // Act
    await roleResource(roleEvent('Update', after, before));

    // Assess
    const scope = await superuser.query('SELECT consumer_name FROM inbox.role_scope WHERE role_name = $1', [ROLES.shared]);
    expect(scope.rows).toEqual([{ consumer_name: 'order-worker-v2' }]);
    const comment = await superuser.query("SELECT shobj_description(oid, 'pg_authid') AS comment FROM pg_roles WHERE rolname = $1", [ROLES.shared]);
    expect(comment.rows).toEqual([{ comment: 'sqs-inbox: consumer order-worker-v2' }]);
    await expect(roleResource(roleEvent('Create', before))).rejects.toThrow(
      /was created by sqs-inbox for "consumer order-worker-v2", not for "consumer order-worker"/,
    );
    await roleResource(roleEvent('Delete', after));
    expect((await superuser.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [ROLES.shared])).rows).toEqual([]);
  });

  it('drops the role on delete, and never fails a delete', async () => {
    await roleResource(roleEvent('Delete', { Role: ROLES.purge, RoleSecretArn: SECRET.purge, Purpose: 'purge', Label: 'purge', Grants: '[]' }));
    const gone = await superuser.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [ROLES.purge]);
    expect(gone.rows).toEqual([]);
    // Gone already, and a database that cannot be reached: both still succeed, so the stack can be deleted.
    await expect(roleResource(roleEvent('Delete', { Role: ROLES.purge }))).resolves.toMatchObject({ PhysicalResourceId: expect.any(String) });
    await expect(roleResource(roleEvent('Delete', { SecretArn: ARN('unknown') }))).resolves.toMatchObject({ PhysicalResourceId: expect.any(String) });
    expect(logLines.at(-1)).toContain('database role not dropped');
  });
});
