import type { SQSRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InboxConfigError } from '../../lambda/inbox/errors.js';
import { importClaims } from '../../lambda/operations/claims-import.js';
import type { ClaimsImportOptions } from '../../lambda/operations/claims-import.js';
import { countingConsumer, createAppliedTable, timesApplied } from '../support/counting-consumer.js';
import { inboxFixture, lambdaContext, sqsRecord } from '../support/inbox.js';
import type { InboxFixture } from '../support/inbox.js';

let db: InboxFixture;
beforeAll(async () => {
  db = await inboxFixture('claims_import');
  await createAppliedTable(db);
});
afterAll(async () => db.close());

let run = 0;

/**
 * A hand-rolled dedup table as teams write it, filled by an "old" consumer that processed `processed`
 * (message ids), and the new inbox consumer that replaces it, keyed as `key` says.
 */
async function stage(processed: readonly string[], key: 'message-id' | ((record: SQSRecord) => string) = 'message-id') {
  run++;
  const table = `processed_messages_${run}`;
  await db.query(`CREATE TABLE public.${table} (message_id text PRIMARY KEY, processed_at timestamptz NOT NULL DEFAULT now())`);
  for (const id of processed) await db.query(`INSERT INTO public.${table} (message_id) VALUES ($1)`, [id]);
  const consumer = `order-worker-${run}`;
  const handler = countingConsumer(db, consumer, key);
  return {
    table,
    consumer,
    options: (extra: Partial<ClaimsImportOptions> = {}): ClaimsImportOptions => ({
      session: db.session,
      from: `public.${table}`,
      keyColumn: 'message_id',
      consumer,
      batchSize: 2,
      ...extra,
    }),
    /** Delivers one message per id, its order named after it. */
    deliver: async (ids: readonly string[]) => {
      const response = await handler(
        { Records: ids.map((id) => sqsRecord({ messageId: id, body: { orderId: `order-${run}-${id}` } })) },
        lambdaContext() as never,
      );
      expect(response.batchItemFailures).toEqual([]);
    },
    applied: (id: string) => timesApplied(db, `order-${run}-${id}`),
  };
}

describe('importing a hand-rolled dedup table as claims', () => {
  it('makes the messages the old consumer processed duplicates for the new one, and the new ones apply once', async () => {
    const old = ['m-1', 'm-2', 'm-3', 'm-4', 'm-5'];
    const s = await stage(old);

    const report = await importClaims(s.options());
    expect(report).toEqual({ read: 5, imported: 5, alreadyClaimed: 0, refused: 0, refusals: [] });

    // In flight at the switch: the old consumer processed them; SQS delivers them again to the new one.
    await s.deliver(['m-2', 'm-5', 'm-6', 'm-7']);
    expect(await Promise.all(['m-2', 'm-5', 'm-6', 'm-7'].map(s.applied))).toEqual([0, 0, 1, 1]);
  });

  it('is idempotent: run again after the old consumer stopped, it imports only what the old consumer wrote since', async () => {
    const s = await stage(['m-1', 'm-2']);
    await importClaims(s.options());
    // The old consumer, still running during the switch, processed m-3 after the first import.
    await db.query(`INSERT INTO public.${s.table} (message_id) VALUES ('m-3')`);
    await s.deliver(['m-4']);

    const dry = await importClaims(s.options({ dryRun: true }));
    expect(dry).toMatchObject({ read: 3, imported: 1, alreadyClaimed: 2 });
    const again = await importClaims(s.options());
    expect(again).toMatchObject({ read: 3, imported: 1, alreadyClaimed: 2 });
    expect(await importClaims(s.options())).toMatchObject({ read: 3, imported: 0, alreadyClaimed: 3 });

    await s.deliver(['m-3', 'm-4']);
    expect([await s.applied('m-3'), await s.applied('m-4')]).toEqual([0, 1]);
  });

  it('a dry run inserts nothing', async () => {
    const s = await stage(['m-1']);
    expect(await importClaims(s.options({ dryRun: true }))).toMatchObject({ read: 1, imported: 1 });
    await s.deliver(['m-1']);
    expect(await s.applied('m-1')).toBe(1);
  });

  it('maps each old key through the template to the key the new consumer claims under', async () => {
    const s = await stage(['o-1', 'o-2'], (record) => `legacy:${record.messageId}`);
    await importClaims(s.options({ keyTemplate: 'legacy:{key}' }));
    const claims = await db.query('SELECT message_id FROM inbox.consumed_message WHERE consumer_name = $1 ORDER BY 1', [s.consumer]);
    expect(claims.map((row) => row.message_id)).toEqual(['legacy:o-1', 'legacy:o-2']);
    await s.deliver(['o-2', 'o-3']);
    expect([await s.applied('o-2'), await s.applied('o-3')]).toEqual([0, 1]);
  });

  it('refuses the keys no consumer could claim under, naming them, and imports the rest', async () => {
    const s = await stage(['ok', 'line\nbreak', 'x'.repeat(600)]);
    const report = await importClaims(s.options());
    expect(report).toMatchObject({ read: 3, imported: 1, refused: 2 });
    expect(report.refusals.map((r) => r.reason)).toEqual([expect.stringMatching(/control character/), expect.stringMatching(/the limit is 512/)]);
  });

  it("imports only the rows `where` names from a table several consumers share: another consumer's keys would make this one's messages duplicates", async () => {
    const s = await stage([]);
    await db.query(`CREATE TABLE public.shared_${s.table} (consumer text NOT NULL, message_id text NOT NULL, PRIMARY KEY (consumer, message_id))`);
    await db.query(`INSERT INTO public.shared_${s.table} VALUES ('${s.consumer}', 'm1'), ('billing', 'm2'), ('billing', 'm1')`);
    const report = await importClaims(s.options({ from: `public.shared_${s.table}`, where: { column: 'consumer', equals: s.consumer } }));
    expect(report).toMatchObject({ read: 1, imported: 1 });
    await s.deliver(['m1', 'm2']);
    expect([await s.applied('m1'), await s.applied('m2')]).toEqual([0, 1]);
  });

  it('refuses a key column whose text is not the key a consumer computes (numeric keeps its scale), and a column the table lacks', async () => {
    const s = await stage([]);
    await db.query(`CREATE TABLE public.numeric_${s.table} (message_id numeric PRIMARY KEY)`);
    await db.query(`INSERT INTO public.numeric_${s.table} VALUES (417.0)`);
    await expect(importClaims(s.options({ from: `public.numeric_${s.table}` }))).rejects.toMatchObject({
      option: 'keyColumn',
      message: expect.stringMatching(/of type numeric.*a view that casts/),
    });
    await expect(importClaims(s.options({ keyColumn: 'msg_id' }))).rejects.toMatchObject({
      option: 'keyColumn',
      message: expect.stringMatching(/names no column/),
    });
    await expect(importClaims(s.options({ where: { column: 'tenant', equals: 'x' } }))).rejects.toMatchObject({ option: 'where' });
  });

  it.each([
    ['from', { from: 'processed_messages' }, /schema\.table/],
    ['from', { from: 'public.processed; DROP TABLE x' }, /schema\.table/],
    ['keyColumn', { keyColumn: 'Message Id' }, /lower-case column name/],
    ['keyTemplate', { keyTemplate: 'order:' }, /must hold \{key\}/],
    ['batchSize', { batchSize: 0 }, /from 1 to 10000/],
    ['consumer', { consumer: '' }, /consumer's name/],
    ['where', { where: { column: 'Consumer; --', equals: 'x' } }, /\{ column, equals \}/],
  ] as const)('refuses a bad %s, naming the fix', async (option, extra, message) => {
    const s = await stage([]);
    const attempt = importClaims(s.options(extra as Partial<ClaimsImportOptions>));
    await expect(attempt).rejects.toBeInstanceOf(InboxConfigError);
    await expect(attempt).rejects.toMatchObject({ option, message: expect.stringMatching(message) });
  });
});
