import { describe, expect, it } from 'vitest';
import { InboxConsumer, InboxDatabase, InboxQueue, InboxSources } from '../../lib/index.js';
import type { InboxMigrationSet, InboxTableGrant } from '../../lib/index.js';
import { tablesCreatedBy } from '../../lib/database/known-tables.js';
import { FIXTURE_HANDLER, testStack } from './support.js';

// A grant on a table none of the database's own migration sets creates (a typo) is refused at synth, where the
// role would fail at deploy; a table a custom resource the role depends on creates is declared createdElsewhere.
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

/** What synth refuses of the consumer with `grants`, or undefined when it builds. */
function refusal(grants: readonly InboxTableGrant[], migrations: readonly InboxMigrationSet[] = [reservations]): string | undefined {
  const stack = testStack();
  const database = new InboxDatabase(stack, 'Db', { migrations: [...migrations] });
  try {
    new InboxConsumer(stack, 'Worker', {
      database,
      source: InboxSources.sqs(new InboxQueue(stack, 'Orders').queue),
      consumerName: 'reservations',
      entry: FIXTURE_HANDLER,
      databaseGrants: grants,
    });
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

describe('grants on tables no migration creates', () => {
  it('reads the tables, views and sequences a migration set creates, as grants name them', () => {
    expect([...tablesCreatedBy([reservations])].sort()).toEqual(['Audit.Log', 'public.free_stock', 'public.reservations', 'public.stock']);
  });

  it('refuses at synth a grant on a table none of them creates, naming it and the fix', () => {
    const found = refusal([
      { table: 'public.reservatons', privileges: ['INSERT'] },
      { table: 'public.stock', privileges: ['SELECT', 'UPDATE'] },
    ]);
    expect(found).toContain(
      '`databaseGrants` names public.reservatons, which no migration set of Test/Db creates (they create Audit.Log, public.free_stock, public.reservations, public.stock): the role would fail at deploy.',
    );
    expect(found).toContain('add createdElsewhere: true to its grant');
    expect(found).not.toContain('public.stock,');
  });

  it('takes grants on tables the migrations create, tables declared createdElsewhere, and any table where the database has no migration set of its own', () => {
    expect(refusal([{ table: 'public.reservations', privileges: ['INSERT'] }])).toBeUndefined();
    expect(refusal([{ table: 'public.made_by_a_custom_resource', privileges: ['INSERT'], createdElsewhere: true }])).toBeUndefined();
    expect(refusal([{ table: 'public.anything', privileges: ['INSERT'] }], [])).toBeUndefined();
  });
});
