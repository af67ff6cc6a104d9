import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Match, Template } from 'aws-cdk-lib/assertions';
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { afterAll, describe, expect, it } from 'vitest';
import { MIGRATION_SETS } from '../../lambda/functions/migration/migrate.js';
import { InboxCleanup, InboxConsumer, InboxDatabase, InboxQueue, MigrationSet, InboxSources } from '../../lib/index.js';
import { BUILT_IN_MIGRATION_SETS, MAX_MIGRATION_SET_BYTES } from '../../lib/database/migration-sets.js';
import type { InboxDatabaseProps, InboxMigrationSet } from '../../lib/index.js';
import { scanSql } from '../../lambda/inbox/transport/sql-scanner.js';
import { FIXTURE_HANDLER, synthError, testStack } from './support.js';

const CREDITS: InboxMigrationSet = {
  name: 'credits',
  migrations: [
    {
      version: 1,
      name: 'create_accounts',
      statements: ['CREATE TABLE public.accounts (account_id text PRIMARY KEY, balance_cents bigint NOT NULL DEFAULT 0)'],
    },
    {
      version: 2,
      name: 'create_credits',
      statements: ['CREATE TABLE public.credits (id bigserial PRIMARY KEY, account_id text NOT NULL, cents bigint NOT NULL)'],
    },
  ],
};

const folders: string[] = [];
afterAll(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

/** A folder of migration files, `{ '001_a.sql': 'CREATE ...' }`. */
function migrationFolder(name: string, files: Record<string, string>): string {
  const parent = mkdtempSync(join(tmpdir(), 'sqs-inbox-migrations-'));
  folders.push(parent);
  const folder = join(parent, name);
  mkdirSync(folder);
  for (const [file, sql] of Object.entries(files)) writeFileSync(join(folder, file), sql);
  return folder;
}

function databaseStack(migrations: InboxDatabaseProps['migrations']) {
  const stack = testStack();
  const database = new InboxDatabase(stack, 'Db', { migrations });
  return { stack, database };
}

describe('InboxDatabase `migrations` of your own', () => {
  it("carries the app's SQL to the migration function, after the inbox's sets, in the order given", () => {
    const { stack } = databaseStack(['inbox', CREDITS]);
    Template.fromStack(stack).hasResourceProperties('Custom::InboxMigration', {
      Migrations: 'inbox,credits',
      Sets: [
        {
          name: 'credits',
          migrations: [
            { version: 1, name: 'create_accounts', statements: [Match.stringLikeRegexp('^CREATE TABLE public.accounts')] },
            { version: 2, name: 'create_credits', statements: [Match.stringLikeRegexp('^CREATE TABLE public.credits')] },
          ],
        },
      ],
    });
  });

  it('leaves the template of a database without sets of its own as it was', () => {
    const { stack } = databaseStack(['inbox']);
    Template.fromStack(stack).hasResourceProperties('Custom::InboxMigration', { Migrations: 'inbox', Sets: Match.absent() });
  });

  it('grants the roles only after the migration that creates the tables, and reconciles them when a set changes', () => {
    const { stack, database } = databaseStack([CREDITS]);
    const consumer = new InboxConsumer(stack, 'Worker', {
      database,
      source: InboxSources.sqs(new InboxQueue(stack, 'Credits').queue),
      consumerName: 'credits',
      entry: FIXTURE_HANDLER,
      databaseGrants: [{ table: 'public.credits', privileges: ['INSERT'] }],
    });
    const template = Template.fromStack(stack);
    const migrationId = stack.getLogicalId(database.migration.node.defaultChild as never);
    template.hasResource('Custom::InboxDatabaseRole', {
      Properties: Match.objectLike({ Role: consumer.databaseRole.roleName, SchemaFingerprint: database.migrationsFingerprint }),
      DependsOn: Match.arrayWith([migrationId]),
    });

    const changed = databaseStack([
      { ...CREDITS, migrations: [...CREDITS.migrations, { version: 3, name: 'index', statements: ['CREATE INDEX ON public.credits (account_id)'] }] },
    ]);
    expect(changed.database.migrationsFingerprint).not.toBe(database.migrationsFingerprint);
    expect(databaseStack([CREDITS]).database.migrationsFingerprint).toBe(database.migrationsFingerprint);
  });

  it('keeps the master secret to the migration function: no consumer or purge may read it', () => {
    const { stack, database } = databaseStack([CREDITS]);
    new InboxConsumer(stack, 'Worker', {
      database,
      source: InboxSources.sqs(new InboxQueue(stack, 'Credits').queue),
      consumerName: 'credits',
      entry: FIXTURE_HANDLER,
    });
    new InboxCleanup(stack, 'Cleanup', { database });
    const template = Template.fromStack(stack);
    const master = JSON.stringify({ Ref: stack.getLogicalId((database.secret as secretsmanager.ISecret).node.defaultChild as never) });
    const readers = Object.values(template.findResources('AWS::IAM::Policy'))
      .filter((policy) =>
        (policy as { Properties: { PolicyDocument: { Statement: Array<{ Action: unknown; Resource: unknown }> } } }).Properties.PolicyDocument.Statement.some(
          (s) => [s.Action].flat().includes('secretsmanager:GetSecretValue') && JSON.stringify([s.Resource].flat()).includes(master),
        ),
      )
      .flatMap((policy) => (policy as { Properties: { Roles: Array<{ Ref: string }> } }).Properties.Roles.map((role) => role.Ref));
    expect(readers).toEqual([stack.getLogicalId(database.migrationFunction.role!.node.defaultChild as never)]);
  });

  it('refuses at synth a name that is no built-in set, listing the built-in ones and how to pass your own', () => {
    const { stack } = databaseStack(['payments']);
    const message = synthError(stack);
    expect(message).toContain("InboxDatabase `migrations` names 'payments', which is not a built-in migration set (those are: inbox).");
    expect(message).toContain(
      "Fix: pass your own set as a value instead of its name: `{ name, migrations: [{ version, name, statements }] }` or MigrationSet.fromDirectory('migrations/...').",
    );
  });

  it('knows the built-in sets the migration handler holds', () => {
    expect(BUILT_IN_MIGRATION_SETS).toEqual(Object.keys(MIGRATION_SETS));
  });

  it('refuses at synth every problem of the sets at once, each with its fix', () => {
    const { stack } = databaseStack([
      { name: 'inbox', migrations: [{ version: 1, name: 'x', statements: ['SELECT 1'] }] },
      { name: 'Credits!', migrations: [] },
      {
        name: 'ledger',
        migrations: [
          { version: 2, name: 'b', statements: ['SELECT 1'] },
          { version: 2, name: 'c', statements: [] },
        ],
      },
      {
        name: 'ledger',
        migrations: [
          { version: 1, name: 'tx', statements: ['-- on its own\nCOMMIT'] },
          { version: 2, name: 'idx', statements: ['create index concurrently i on t (c)'] },
        ],
      },
    ]);
    const message = synthError(stack);
    expect(message).toContain("the set 'inbox' has the name of a built-in set, whose versions it would be recorded under. Fix: give it a name of its own.");
    expect(message).toContain("the set 'Credits!' has a name that is not 1 to 63 lower-case letters");
    expect(message).toContain("the set 'Credits!' has no migrations.");
    expect(message).toContain(
      'the set \'ledger\' has version 2 ("c") after version 2: versions must be positive integers in increasing order. Fix: give it a version above 2',
    );
    expect(message).toContain("the set 'ledger', version 2: `statements` must be a non-empty list of SQL strings.");
    expect(message).toContain("the set 'ledger', version 1: '-- on its own\nCOMMIT' cannot run inside the transaction each migration runs in.");
    expect(message).toContain("the set 'ledger', version 2: 'create index concurrently i on t (c)' cannot run inside");
    expect(message).toContain("lists the migration set 'ledger' more than once.");
  });

  it('refuses more SQL than an update of the custom resource can carry', () => {
    const big = 'x'.repeat(MAX_MIGRATION_SET_BYTES);
    const { stack } = databaseStack([{ name: 'big', migrations: [{ version: 1, name: 'seed', statements: [`INSERT INTO public.t VALUES ('${big}')`] }] }]);
    expect(synthError(stack)).toMatch(
      /carries \d+ bytes of SQL to the deploy, more than 102400 .* Fix: keep schema changes in the migrations and load data from your own code/,
    );
    const { stack: fits } = databaseStack([
      { name: 'fits', migrations: [{ version: 1, name: 'seed', statements: [`SELECT '${'x'.repeat(MAX_MIGRATION_SET_BYTES - 200)}'`] }] },
    ]);
    expect(() => Template.fromStack(fits)).not.toThrow();
  });
});

describe('MigrationSet.fromDirectory', () => {
  it('reads <version>_<name>.sql files in the order of their versions (not of their names), one statement per `;`, named after the folder', () => {
    const folder = migrationFolder('credits', {
      '10_index.sql': 'CREATE INDEX credits_account ON public.credits (account_id);\n',
      '2_create_credits.sql': '-- the ledger\r\nCREATE TABLE public.credits (id bigserial PRIMARY KEY, account_id text NOT NULL);\r\n',
      '001_create_accounts.sql':
        "CREATE TABLE public.accounts (account_id text PRIMARY KEY);\nINSERT INTO public.accounts VALUES ('house');\n-- trailing note\n",
      'README.md': 'not a migration',
    });
    expect(MigrationSet.fromDirectory(folder)).toEqual({
      name: 'credits',
      migrations: [
        {
          version: 1,
          name: 'create_accounts',
          statements: ['CREATE TABLE public.accounts (account_id text PRIMARY KEY)', "INSERT INTO public.accounts VALUES ('house')"],
        },
        { version: 2, name: 'create_credits', statements: ['-- the ledger\nCREATE TABLE public.credits (id bigserial PRIMARY KEY, account_id text NOT NULL)'] },
        { version: 10, name: 'index', statements: ['CREATE INDEX credits_account ON public.credits (account_id)'] },
      ],
    });
    expect(MigrationSet.fromDirectory(folder, { name: 'ledger' }).name).toBe('ledger');
  });

  it('refuses a folder it cannot use, naming the file and the fix', () => {
    expect(() => MigrationSet.fromDirectory(join(tmpdir(), 'no-such-migrations'))).toThrow(
      /cannot read .*no-such-migrations.* Fix: pass the folder that holds the migration files/,
    );
    expect(() => MigrationSet.fromDirectory(migrationFolder('empty', {}))).toThrow(/holds no \.sql file\. Fix: add e\.g\. 001_create_credits\.sql/);
    expect(() => MigrationSet.fromDirectory(migrationFolder('misnamed', { 'create.sql': 'SELECT 1;' }))).toThrow(
      /create\.sql is not named <version>_<name>\.sql\. Fix: rename it, e\.g\. 001_create_credits\.sql/,
    );
    expect(() => MigrationSet.fromDirectory(migrationFolder('twice', { '1_a.sql': 'SELECT 1;', '001_b.sql': 'SELECT 2;' }))).toThrow(
      /001_b\.sql and 1_a\.sql both have version 1/,
    );
    expect(() => MigrationSet.fromDirectory(migrationFolder('blank', { '1_a.sql': '-- nothing yet\n' }))).toThrow(/1_a\.sql holds no SQL statement/);
  });
});

/** The statements MigrationSet.fromDirectory reads from one file holding `sql`. */
function statementsOf(sql: string): readonly string[] {
  return MigrationSet.fromDirectory(migrationFolder('split', { '1_a.sql': sql })).migrations[0]!.statements;
}

/** A BEGIN ATOMIC function (PostgreSQL 14+): its body's semicolons, CASE ... END and comments end no statement. */
const ATOMIC_FUNCTION = `CREATE OR REPLACE FUNCTION public.grade(score int) RETURNS text LANGUAGE sql
BEGIN ATOMIC
  -- the body's statements end with ; but the function does not
  SELECT CASE WHEN score >= 90 THEN 'a' /* ; END; */ WHEN score >= 50 THEN 'b' ELSE $$c; END$$ END;
END`;

describe('MigrationSet.fromDirectory: splitting a file into statements', () => {
  it.each([
    ['ends statements at top-level semicolons', 'SELECT 1; SELECT 2;', ['SELECT 1', 'SELECT 2']],
    ['keeps a last statement without a semicolon', 'SELECT 1;\nSELECT 2', ['SELECT 1', 'SELECT 2']],
    [
      'ignores semicolons in strings, doubled quotes included',
      "INSERT INTO t VALUES ('a;b', 'it''s; fine'); SELECT 1",
      ["INSERT INTO t VALUES ('a;b', 'it''s; fine')", 'SELECT 1'],
    ],
    ['ignores semicolons in E-strings with backslash escapes', "SELECT E'a\\';b'; SELECT 2", ["SELECT E'a\\';b'", 'SELECT 2']],
    ['ends a standard string at its quote, a backslash before it notwithstanding', "SELECT 'a\\'; SELECT 2", ["SELECT 'a\\'", 'SELECT 2']],
    ['ignores semicolons in quoted identifiers', 'CREATE TABLE "a;b" (id int); SELECT 1', ['CREATE TABLE "a;b" (id int)', 'SELECT 1']],
    [
      'ignores semicolons in dollar-quoted bodies, tagged or not',
      'CREATE FUNCTION f() RETURNS int AS $$ SELECT 1; $$ LANGUAGE sql; DO $body$ BEGIN PERFORM 1; END $body$; SELECT 3',
      ['CREATE FUNCTION f() RETURNS int AS $$ SELECT 1; $$ LANGUAGE sql', 'DO $body$ BEGIN PERFORM 1; END $body$', 'SELECT 3'],
    ],
    ['does not take a parameter for a dollar quote', 'SELECT $1; SELECT 2', ['SELECT $1', 'SELECT 2']],
    ['does not take the dollars inside a word for a dollar quote', 'SELECT 1 AS a$$; SELECT 2 AS b$$', ['SELECT 1 AS a$$', 'SELECT 2 AS b$$']],
    [
      'ignores semicolons in line and nested block comments',
      'SELECT 1 -- a; b\n; /* c; /* d; */ e; */ SELECT 2',
      ['SELECT 1 -- a; b', '/* c; /* d; */ e; */ SELECT 2'],
    ],
    ['ends a line comment at a carriage return too, as PostgreSQL does', 'SELECT 1 -- a\r; SELECT 2', ['SELECT 1 -- a', 'SELECT 2']],
    ['drops pieces of only comments and white space', '-- header\n;\n  ;/* note */', []],
    [
      'keeps a BEGIN ATOMIC function body whole, CASE ... END and all',
      `${ATOMIC_FUNCTION};\nSELECT public.grade(95);`,
      [ATOMIC_FUNCTION, 'SELECT public.grade(95)'],
    ],
    [
      'keeps a BEGIN ATOMIC procedure whole, with several statements in its body',
      'CREATE PROCEDURE public.log2() LANGUAGE sql BEGIN ATOMIC INSERT INTO public.t VALUES (1); INSERT INTO public.t VALUES (2); END; SELECT 1',
      ['CREATE PROCEDURE public.log2() LANGUAGE sql BEGIN ATOMIC INSERT INTO public.t VALUES (1); INSERT INTO public.t VALUES (2); END', 'SELECT 1'],
    ],
    [
      'does not take a column named begin for a block, outside a routine or inside one',
      'SELECT begin FROM t; CREATE FUNCTION public.f() RETURNS int LANGUAGE sql RETURN (SELECT begin FROM t); SELECT 2',
      ['SELECT begin FROM t', 'CREATE FUNCTION public.f() RETURNS int LANGUAGE sql RETURN (SELECT begin FROM t)', 'SELECT 2'],
    ],
  ])('%s', (_name, sql, statements) => {
    if (statements.length === 0) expect(() => statementsOf(sql)).toThrow(/holds no SQL statement/);
    else expect(statementsOf(sql)).toEqual(statements);
  });

  it('splits as the runtime reads SQL: one scanner', () => {
    expect(scanSql(`${ATOMIC_FUNCTION}; SELECT 1`).statements.map((statement) => statement.text)).toEqual([ATOMIC_FUNCTION, 'SELECT 1']);
  });

  it('does not blame transaction control for a BEGIN ATOMIC body, and still finds it after one', () => {
    const atomic = MigrationSet.fromDirectory(migrationFolder('atomic', { '1_grade.sql': `${ATOMIC_FUNCTION};\n` }));
    expect(atomic.migrations[0]!.statements).toEqual([ATOMIC_FUNCTION]);
    expect(() => Template.fromStack(databaseStack([atomic]).stack)).not.toThrow();
    const { stack } = databaseStack([
      {
        name: 'atomic',
        migrations: [
          { version: 1, name: 'after', statements: [`${ATOMIC_FUNCTION}; COMMIT`] },
          { version: 2, name: 'inside', statements: ['CREATE FUNCTION public.f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1 AS case; END; ROLLBACK; END'] },
          { version: 3, name: 'hidden', statements: ['SELECT 1 /* ; */ -- x\rROLLBACK'] },
          { version: 4, name: 'vacuum', statements: ['/* maintenance */ VACUUM public.t'] },
        ],
      },
    ]);
    const message = synthError(stack);
    expect(message).toContain("the set 'atomic', version 1: 'CREATE OR REPLACE FUNCTION");
    expect(message).toContain("the set 'atomic', version 2: 'CREATE FUNCTION public.f()");
    expect(message).toContain("the set 'atomic', version 4: '/* maintenance */ VACUUM public.t' cannot run inside");
    // A ROLLBACK after `-- x\r` starts the statement's next line: it is no statement of its own.
    expect(message).not.toContain("the set 'atomic', version 3");
  });
});
