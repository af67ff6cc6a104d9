import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CloudFormationCustomResourceEvent } from 'aws-lambda';
import { Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as migrateHandler } from '../../lambda/functions/migration/migrate.js';
import { InboxConfigError } from '../../lambda/inbox/index.js';
import { DataApiSession } from '../../lambda/inbox/transport/data-api/session.js';
import { INBOX_MIGRATIONS, migrate } from '../../lambda/inbox/sql/schema.js';
import { MigrationChangedError } from '../../lambda/inbox/errors.js';
import type { InboxMigration, Migration } from '../../lambda/inbox/sql/schema.js';
import { InboxDatabase, MigrationSet as Migrations } from '../../lib/index.js';
import type { InboxMigrationSet } from '../../lib/index.js';
import { startDataApi } from '../../local/data-api/server.js';
import type { DataApiServer } from '../../local/data-api/server.js';
import { freshDatabase } from '../support/database.js';
import { dataApiClient } from '../support/inbox.js';
import { testStack } from '../lib/support.js';

/** The app's ledger, as a value: the same definition serves the stack and `migrate()` in a test. */
const ACCOUNTS = {
  name: 'accounts',
  migrations: [
    {
      version: 1,
      name: 'create_accounts',
      statements: ['CREATE TABLE public.accounts (account_id text PRIMARY KEY, balance_cents bigint NOT NULL DEFAULT 0)'],
    },
    { version: 2, name: 'seed_house', statements: ["INSERT INTO public.accounts (account_id) VALUES ('house')"] },
  ],
} satisfies InboxMigrationSet;

let folder: string;
const servers: DataApiServer[] = [];
beforeAll(() => {
  folder = join(mkdtempSync(join(tmpdir(), 'sqs-inbox-own-')), 'credits');
  mkdirSync(folder);
  writeFileSync(
    join(folder, '001_create_credits.sql'),
    'CREATE TABLE public.credits (\n  id bigserial PRIMARY KEY,\n  account_id text NOT NULL REFERENCES public.accounts,\n  cents bigint NOT NULL\n);\n',
  );
  writeFileSync(
    join(folder, '002_index_credits.sql'),
    "-- credits of one account, newest first\nCREATE INDEX credits_account ON public.credits (account_id, id DESC);\nCOMMENT ON TABLE public.credits IS 'one row per credit; accounts.balance_cents sums them';\n",
  );
});
afterAll(async () => {
  delete process.env.INBOX_DATA_API_ENDPOINT;
  for (const server of servers) await server.close();
  rmSync(join(folder, '..'), { recursive: true, force: true });
});

/** A fresh database behind its own local Data API, which the migration handler reaches through INBOX_DATA_API_ENDPOINT. */
async function freshServer(label: string): Promise<{ server: DataApiServer; session: DataApiSession }> {
  const server = await startDataApi({ databaseUrl: await freshDatabase(label) });
  servers.push(server);
  process.env.INBOX_DATA_API_ENDPOINT = server.endpoint;
  const session = new DataApiSession(
    { client: dataApiClient(server), resourceArn: server.resourceArn, secretArn: server.secretArn, database: server.database },
    { callTimeoutMs: 10_000, resumeDelaysMs: [] },
  );
  return { server, session };
}

/** The migration custom resource InboxDatabase synthesizes, with its properties as CloudFormation sends them: every scalar a string. */
function synthesizedMigration(migrations: readonly (string | InboxMigrationSet)[]): Record<string, unknown> {
  const stack = testStack();
  new InboxDatabase(stack, 'Db', { migrations });
  const [resource] = Object.values(Template.fromStack(stack).findResources('Custom::InboxMigration')) as Array<{ Properties: Record<string, unknown> }>;
  return asCloudFormationSends(resource!.Properties) as Record<string, unknown>;
}

function asCloudFormationSends(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(asCloudFormationSends);
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([key, v]) => [key, asCloudFormationSends(v)]));
  return typeof value === 'number' || typeof value === 'boolean' ? String(value) : value;
}

const BASE = { ServiceToken: 'x', ResponseURL: 'x', StackId: 'x', RequestId: 'x', LogicalResourceId: 'Migration', ResourceType: 'Custom::InboxMigration' };

/** Runs the migration handler as the deploy does: Create the first time, Update after. */
function deploy(server: DataApiServer, template: Record<string, unknown>, previous?: Record<string, unknown>) {
  const ResourceProperties = { ...template, ServiceToken: 'x', ResourceArn: server.resourceArn, SecretArn: server.secretArn, Database: server.database };
  const event: CloudFormationCustomResourceEvent =
    previous === undefined
      ? { ...BASE, RequestType: 'Create', ResourceProperties }
      : {
          ...BASE,
          RequestType: 'Update',
          PhysicalResourceId: `sqs-inbox-schema:${server.database}:inbox`,
          ResourceProperties,
          OldResourceProperties: { ...previous, ServiceToken: 'x' },
        };
  return migrateHandler(event);
}

describe("the migration function with the app's own sets", () => {
  it('applies sets given as strings and read from a folder, after the inbox, then does nothing on the next deploy', async () => {
    // Arrange
    const { server, session } = await freshServer('own_sets');
    const template = synthesizedMigration([ACCOUNTS, Migrations.fromDirectory(folder)]);

    // Act
    const first = await deploy(server, template);
    const again = await deploy(server, template, template);

    // Assess
    expect(first.Data).toEqual({ Versions: JSON.stringify({ inbox: 7, accounts: 2, credits: 2 }), Applied: 7 + 2 + 2 });
    expect(again.Data).toEqual({ Versions: JSON.stringify({ inbox: 7, accounts: 2, credits: 2 }), Applied: 0 });
    const { rows } = await session.execute(
      'SELECT set_name, version, name, applied_at, checksum FROM inbox.schema_migration ORDER BY applied_at, set_name, version',
    );
    expect(rows.map((r) => `${r.set_name} ${r.version} ${r.name}`)).toEqual(
      expect.arrayContaining(['accounts 1 create_accounts', 'accounts 2 seed_house', 'credits 1 create_credits', 'credits 2 index_credits']),
    );
    for (const row of rows) expect(row.checksum).toMatch(/^[0-9a-f]{64}$/);
    await session.execute("INSERT INTO public.credits (account_id, cents) VALUES ('house', 250)");
    expect((await session.execute('SELECT account_id, cents FROM public.credits')).rows).toEqual([{ account_id: 'house', cents: 250 }]);
    const comment = await session.execute("SELECT obj_description('public.credits'::regclass) AS comment");
    expect(comment.rows[0]!.comment).toBe('one row per credit; accounts.balance_cents sums them');
  });

  it('refuses a migration changed after it was applied, naming its version, and applies nothing of that deploy', async () => {
    // Arrange
    const { server, session } = await freshServer('own_changed');
    const applied = synthesizedMigration([ACCOUNTS]);
    await deploy(server, applied);
    const edited = {
      ...ACCOUNTS,
      migrations: [
        ACCOUNTS.migrations[0]!,
        { version: 2, name: 'seed_house', statements: ["INSERT INTO public.accounts (account_id, balance_cents) VALUES ('house', 100)"] },
        { version: 3, name: 'create_holds', statements: ['CREATE TABLE public.holds (account_id text PRIMARY KEY)'] },
      ],
    };

    // Act
    const refused = deploy(server, synthesizedMigration([edited]), applied);

    // Assess
    await expect(refused).rejects.toBeInstanceOf(MigrationChangedError);
    await expect(refused).rejects.toThrow(
      /migration set "accounts" version 2 \("seed_house"\) was changed after it was applied: .* Fix: restore version 2 as it was applied, and put the change in a new migration with a higher version/,
    );
    expect((await session.execute("SELECT to_regclass('public.holds') IS NULL AS absent")).rows).toEqual([{ absent: true }]);
    // Restored, and the change moved to a version of its own, it deploys.
    const fixed = {
      ...ACCOUNTS,
      migrations: [
        ...ACCOUNTS.migrations,
        { version: 3, name: 'fund_house', statements: ["UPDATE public.accounts SET balance_cents = 100 WHERE account_id = 'house'"] },
      ],
    };
    const deployed = await deploy(server, synthesizedMigration([fixed]), applied);
    expect(JSON.parse(deployed.Data!.Versions)).toEqual({ inbox: 7, accounts: 3 });
  });

  it('records the checksum of versions applied before checksums existed, then holds them to it', async () => {
    // Arrange: a database migrated by the version before checksums, whose table has no checksum column.
    const { server, session } = await freshServer('own_legacy');
    await session.execute('CREATE SCHEMA inbox');
    await session.execute(
      'CREATE TABLE inbox.schema_migration (set_name text NOT NULL, version integer NOT NULL, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (set_name, version))',
    );
    await migrateWithoutChecksums(session, [INBOX_MIGRATIONS, ACCOUNTS]);

    // Act
    const upgraded = await deploy(server, synthesizedMigration([ACCOUNTS]));

    // Assess
    expect(upgraded.Data!.Applied).toBe(0);
    const { rows } = await session.execute("SELECT count(*) AS n FROM inbox.schema_migration WHERE checksum IS NULL OR checksum !~ '^[0-9a-f]{64}$'");
    expect(rows).toEqual([{ n: 0 }]);
    const edited = {
      ...ACCOUNTS,
      migrations: [ACCOUNTS.migrations[0]!, { ...ACCOUNTS.migrations[1]!, statements: ["INSERT INTO public.accounts (account_id) VALUES ('bank')"] }],
    };
    await expect(migrate(session, [edited])).rejects.toThrow(/"accounts" version 2 \("seed_house"\) was changed/);
  });

  it('refuses a migration added below the highest applied version of its set', async () => {
    const { session } = await freshServer('own_below');
    const gap = {
      name: 'gap',
      migrations: [
        { version: 1, name: 'a', statements: ['CREATE TABLE public.gap_a (id int)'] },
        { version: 3, name: 'c', statements: ['CREATE TABLE public.gap_c (id int)'] },
      ],
    };
    await migrate(session, [gap]);
    const filled = {
      ...gap,
      migrations: [gap.migrations[0]!, { version: 2, name: 'b', statements: ['CREATE TABLE public.gap_b (id int)'] }, gap.migrations[1]!],
    };
    const refused = migrate(session, [filled]);
    await expect(refused).rejects.toBeInstanceOf(InboxConfigError);
    await expect(refused).rejects.toThrow(/version 2 \("b"\) is not applied, but version 3 is: .* Fix: give it a version above 3/);
  });

  it('refuses sets it cannot apply as the deploy sent them, naming the property', async () => {
    const { server } = await freshServer('own_refused');
    const template = synthesizedMigration([ACCOUNTS]);
    await expect(deploy(server, { ...template, Migrations: 'inbox,accounts,payments' })).rejects.toThrow(
      /unknown migration set "payments"; known sets: inbox, accounts/,
    );
    await expect(
      deploy(server, { ...template, Sets: [{ name: 'accounts', migrations: [{ version: 'one', name: 'a', statements: ['SELECT 1'] }] }] }),
    ).rejects.toThrow(/inbox option "Sets\.0\.migrations\.0\.version": must be a positive integer, got "one"/);
    await expect(deploy(server, { ...template, Sets: [{ name: 'inbox', migrations: [] }], Migrations: 'inbox' })).rejects.toThrow(
      /defines "inbox", the name of a built-in set/,
    );
    await expect(deploy(server, { ...template, Migrations: 'inbox' })).rejects.toThrow(/defines "accounts", which `Migrations` does not list/);
  });

  it('refuses, before it runs anything, a set whose statements are not SQL strings', async () => {
    const { session } = await freshServer('own_shape');
    const one = { version: 1, name: 'create_t', statements: 'CREATE TABLE public.t (id int)' } as unknown as InboxMigration;
    await expect(migrate(session, [{ name: 'shape', migrations: [one] }])).rejects.toThrow(
      /inbox option "migrations\.shape": version 1 \("create_t"\): `statements` must be an array of non-empty SQL strings, one statement each; got the string/,
    );
    await expect(migrate(session, [{ name: 'blank', migrations: [{ version: 1, name: 'b', statements: ['  '] }] }])).rejects.toThrow(
      /`statements` must be an array of non-empty SQL strings/,
    );
    // The inbox's own sets write statements from its table names; a set of yours may not run code there.
    const coded = { version: 1, name: 'coded', statements: (() => ['CREATE TABLE public.coded (id int)']) as unknown as string[] };
    await expect(migrate(session, [{ name: 'coded', migrations: [coded] }])).rejects.toThrow(
      /inbox option "migrations\.coded": version 1 \("coded"\): `statements` must be an array of SQL strings, one statement each; got a function/,
    );
    // The name is checked first, so that no error shows a name the rule refuses whole.
    const named = await migrate(session, [{ name: 'x'.repeat(100_000), migrations: [coded] }]).catch((error: Error) => error);
    expect((named as Error).message).toMatch(/a migration set's name must be .* got a name of 100000 characters beginning "x{40}"$/);
    await expect(migrate(session, [{ name: '', migrations: [] }])).rejects.toThrow(/a migration set's name must be 1 to 63 lower-case letters/);
    expect((await session.execute("SELECT to_regnamespace('inbox') IS NULL AS absent")).rows).toEqual([{ absent: true }]);
  });
});

/** `migrate` as it was before checksums: a row per version, nothing else. */
async function migrateWithoutChecksums(session: DataApiSession, sets: readonly InboxMigrationSet<Migration>[]): Promise<void> {
  const tables = {
    schema: '"inbox"',
    consumed: '"inbox"."consumed_message"',
    parked: '"inbox"."parked_message"',
    outbox: '"inbox"."outbox_message"',
    migrations: '"inbox"."schema_migration"',
    outboxOrder: '"inbox"."outbox_older_unsent"',
  };
  for (const set of sets) {
    for (const migration of set.migrations) {
      const statements = typeof migration.statements === 'function' ? migration.statements(tables) : migration.statements;
      for (const statement of statements) await session.execute(statement);
      await session.execute('INSERT INTO inbox.schema_migration (set_name, version, name) VALUES (:set, :version, :name)', {
        set: set.name,
        version: migration.version,
        name: migration.name,
      });
    }
  }
}
