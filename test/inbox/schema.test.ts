import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIGRATION_SET_NAME_PATTERN } from '../../lambda/inbox/contract.js';
import { InboxConfigError } from '../../lambda/inbox/errors.js';
import { propertyParameters } from '../support/seed.js';
import { DataApiSession } from '../../lambda/inbox/transport/data-api/session.js';
import { INBOX_MIGRATIONS, migrate } from '../../lambda/inbox/sql/schema.js';
import type { InboxMigrationSet } from '../../lambda/inbox/sql/schema.js';
import { handler as migrateHandler } from '../../lambda/functions/migration/migrate.js';
import { startDataApi } from '../../local/data-api/server.js';
import type { DataApiServer } from '../../local/data-api/server.js';
import { dataApiClient } from '../support/inbox.js';
import { freshDatabase } from '../support/database.js';

// The inbox's versions: 1 to 5, then 7 (6 is another change's; the lead merges them).
const VERSIONS = [1, 2, 3, 4, 5, 6, 7];
let server: DataApiServer;
let session: DataApiSession;
beforeAll(async () => {
  server = await startDataApi({ databaseUrl: await freshDatabase('schema') });
  session = new DataApiSession(
    { client: dataApiClient(server), resourceArn: server.resourceArn, secretArn: server.secretArn, database: server.database },
    { callTimeoutMs: 10_000, resumeDelaysMs: [] },
  );
});
afterAll(async () => server.close());

/** A server over a database of its own, for a test that must see the inbox's migrations applied from nothing. */
async function freshServer(name: string): Promise<{ server: DataApiServer; session: DataApiSession }> {
  const fresh = await startDataApi({ databaseUrl: await freshDatabase(name) });
  const opened = new DataApiSession(
    { client: dataApiClient(fresh), resourceArn: fresh.resourceArn, secretArn: fresh.secretArn, database: fresh.database },
    { callTimeoutMs: 10_000, resumeDelaysMs: [] },
  );
  return { server: fresh, session: opened };
}

describe('migrations', () => {
  it('apply once through the Data API, then do nothing, also when two run at once', async () => {
    const [first, second] = await Promise.all([migrate(session), migrate(session)]);
    expect([...first.applied, ...second.applied].map((m) => m.version)).toEqual(VERSIONS);
    expect(first.versions).toEqual({ inbox: VERSIONS.at(-1) });
    const again = await migrate(session);
    expect(again.applied).toEqual([]);
    const { rows } = await session.execute(
      "SELECT column_name FROM information_schema.columns WHERE table_schema = 'inbox' AND table_name = 'consumed_message' ORDER BY ordinal_position",
    );
    expect(rows.map((r) => r.column_name)).toEqual(['consumer_name', 'message_id', 'processed_at', 'payload_sha256']);
  });

  it("apply the inbox's own set before yours, in one run, and refuse a set of yours named as the inbox's", async () => {
    const own = await freshServer('schema_own_first');
    const ledger: InboxMigrationSet = {
      name: 'ledger',
      // Reads the inbox's own table: it runs only if the inbox's set ran before it, in the same transaction.
      migrations: [{ version: 1, name: 'ledger', statements: ['CREATE TABLE public.ledger AS SELECT count(*) AS claims FROM inbox.consumed_message'] }],
    };
    const report = await migrate(own.session, [ledger]);
    expect(report.applied.map((m) => `${m.set}:${m.version}`)).toEqual([...VERSIONS.map((v) => `inbox:${v}`), 'ledger:1']);
    expect(report.versions).toEqual({ inbox: VERSIONS.at(-1), ledger: 1 });

    const named = { name: INBOX_MIGRATIONS.name, migrations: [{ version: 99, name: 'mine', statements: ['SELECT 1'] }] };
    await expect(migrate(own.session, [named])).rejects.toThrow(
      /"inbox" is the name of the inbox's own migration set, which migrate\(\) applies before yours; leave it out/,
    );
    await own.server.close();
  });

  it('refuse, before any transaction, a set name the constructs refuse at synth: nothing of the run is applied (generated names)', async () => {
    const run = await freshServer('schema_set_names');
    const first: InboxMigrationSet = { name: 'first', migrations: [{ version: 1, name: 'first', statements: ['CREATE TABLE public.first_set (id int)'] }] };
    // Names PostgreSQL refuses (U+0000), rewrites (a lone surrogate), or that a deploy would record apart
    // (case, spaces, length), beside generated strings of every kind the rule leaves out.
    const refused = fc.oneof(
      fc.constantFrom('', 'INBOX', ' inbox', 'credits\u0000', 'cr\ud800edits', 'a'.repeat(64), 'x'.repeat(100_000), '-credits', 'crédits', 'credits.v2'),
      fc.string({ unit: 'binary', maxLength: 80 }).filter((name) => !MIGRATION_SET_NAME_PATTERN.test(name)),
    );
    await fc.assert(
      fc.asyncProperty(refused, async (name) => {
        const set = { name, migrations: [{ version: 1, name: 'mine', statements: ['CREATE TABLE public.never_made (id int)'] }] };
        const error = await migrate(run.session, [first, set]).catch((caught: unknown) => caught);
        expect(error).toBeInstanceOf(InboxConfigError);
        expect((error as Error).message).toMatch(/a migration set's name must be 1 to 63 lower-case letters, digits, '_' or '-'/);
        expect((error as Error).message.length).toBeLessThan(400);
      }),
      propertyParameters(60),
    );
    // Refused before the transaction: not even the inbox's own set or the valid set before it was applied.
    const { rows } = await run.session.execute(
      "SELECT to_regclass('public.first_set') IS NULL AS absent, to_regclass('inbox.consumed_message') IS NULL AS bare",
    );
    expect(rows[0]).toEqual({ absent: true, bare: true });
    expect((await migrate(run.session, [first])).versions).toMatchObject({ first: 1 });
    await run.server.close();
  });

  it('roll a failing migration back whole, leaving its version unapplied', async () => {
    const broken: InboxMigrationSet = {
      name: 'broken',
      migrations: [{ version: 1, name: 'half', statements: ['CREATE TABLE public.half_done (id int)', 'CREATE TABLE public.nope (id no_such_type)'] }],
    };
    await expect(migrate(session, [broken])).rejects.toThrow(/no_such_type/);
    const { rows } = await session.execute("SELECT to_regclass('public.half_done') IS NULL AS absent");
    expect(rows[0]!.absent).toBe(true);
  });

  it('refuse migrations out of order', async () => {
    const bad: InboxMigrationSet = {
      name: 'bad',
      migrations: [
        { version: 2, name: 'b', statements: [] },
        { version: 1, name: 'a', statements: [] },
      ],
    };
    await expect(migrate(session, [bad])).rejects.toThrow(/increasing order/);
  });

  it('run from the CloudFormation custom resource handler, which names an unknown set', async () => {
    const previous = process.env.INBOX_DATA_API_ENDPOINT;
    process.env.INBOX_DATA_API_ENDPOINT = server.endpoint;
    try {
      const properties = {
        ServiceToken: 'x',
        ResourceArn: server.resourceArn,
        SecretArn: server.secretArn,
        Database: server.database,
        Migrations: 'inbox',
      };
      const base = { ServiceToken: 'x', ResponseURL: 'x', StackId: 'x', RequestId: 'x', LogicalResourceId: 'Schema', ResourceType: 'Custom::InboxSchema' };
      const result = await migrateHandler({ ...base, RequestType: 'Create', ResourceProperties: properties });
      expect(JSON.parse(result.Data!.Versions)).toEqual({ inbox: VERSIONS.at(-1) });
      await expect(
        migrateHandler({
          ...base,
          RequestType: 'Update',
          PhysicalResourceId: result.PhysicalResourceId,
          ResourceProperties: { ...properties, Migrations: 'inbox,nope' },
          OldResourceProperties: properties,
        }),
      ).rejects.toThrow(/unknown migration set "nope"/);
      const deleted = await migrateHandler({ ...base, RequestType: 'Delete', PhysicalResourceId: result.PhysicalResourceId, ResourceProperties: properties });
      expect(deleted.PhysicalResourceId).toBe(result.PhysicalResourceId);
    } finally {
      if (previous === undefined) delete process.env.INBOX_DATA_API_ENDPOINT;
      else process.env.INBOX_DATA_API_ENDPOINT = previous;
    }
    expect(INBOX_MIGRATIONS.migrations.map((m) => m.version)).toEqual(VERSIONS);
  });
});
