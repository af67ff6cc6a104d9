import { Annotations, Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { InboxConsumer, InboxDatabase, InboxQueue, InboxSources } from '../../lib/index.js';
import type { InboxMigrationSet, InboxTableGrant } from '../../lib/index.js';
import { tablesCreatedBy } from '../../lib/database/known-tables.js';
import { FIXTURE_HANDLER, testStack } from './support.js';

// A grant on a table none of the database's own migration sets creates (a typo) is named at synth, as a
// warning: the role would fail at deploy, but a custom resource the role depends on may create the table.
const reservations: InboxMigrationSet = {
  name: 'reservations',
  migrations: [
    {
      version: 1,
      name: 'create',
      statements: [
        '-- stock first\nCREATE TABLE public.stock (sku text PRIMARY KEY)',
        'create table if not exists Reservations (reservation_id text PRIMARY KEY)',
        'CREATE UNLOGGED TABLE "Audit"."Log" (line text); CREATE VIEW public.free_stock AS SELECT sku FROM public.stock',
        'CREATE INDEX reservations_sku ON public.reservations (reservation_id)',
      ],
    },
  ],
};

function warnings(grants: readonly InboxTableGrant[], migrations: readonly InboxMigrationSet[] = [reservations]) {
  const stack = testStack();
  const database = new InboxDatabase(stack, 'Db', { migrations: [...migrations] });
  new InboxConsumer(stack, 'Worker', {
    database,
    source: InboxSources.sqs(new InboxQueue(stack, 'Orders').queue),
    consumerName: 'reservations',
    entry: FIXTURE_HANDLER,
    databaseGrants: grants,
  });
  return Annotations.fromStack(stack)
    .findWarning('*', Match.stringLikeRegexp('databaseGrants'))
    .map((warning) => String(warning.entry.data));
}

describe('grants on tables no migration creates', () => {
  it('reads the tables, views and sequences a migration set creates, as grants name them', () => {
    expect([...tablesCreatedBy([reservations])].sort()).toEqual(['Audit.Log', 'public.free_stock', 'public.reservations', 'public.stock']);
  });

  it('warns at synth of a grant on a table none of them creates, naming it and the fix', () => {
    const found = warnings([
      { table: 'public.reservatons', privileges: ['INSERT'] },
      { table: 'public.stock', privileges: ['SELECT', 'UPDATE'] },
    ]);
    expect(found).toEqual([
      expect.stringContaining(
        '`databaseGrants` names public.reservatons, which no migration set of Test/Db creates (they create Audit.Log, public.free_stock, public.reservations, public.stock): the role would fail at deploy.',
      ),
    ]);
  });

  it('says nothing of grants on tables the migrations create, nor where the database has no migration set of its own', () => {
    expect(warnings([{ table: 'public.reservations', privileges: ['INSERT'] }])).toEqual([]);
    expect(warnings([{ table: 'public.anything', privileges: ['INSERT'] }], [])).toEqual([]);
  });
});
