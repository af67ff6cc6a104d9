import type { SQSEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DataApiSession } from '../../lambda/inbox/transport/data-api/session.js';
import { FAULTS, runScenario, startLocal } from '../../local/index.js';
import type { LocalStack, ScenarioEnvironment } from '../../local/index.js';
import { dataApiClient } from '../support/inbox.js';
import { freshDatabase } from '../support/database.js';
import { selectByKey } from '../../local/scenario/effects.js';
import { demoConsumer } from '../../demo/consumers.js';

// The demo's final check reads every effect through the Data API, whose answers stop at 1 MiB: about
// 13,000 of the demo's orders. Here the local Data API stops at 4 KiB, so a few hundred orders meet the
// same limit.
const MAX_RESPONSE_BYTES = 4096;

const previousDatabaseUrl = process.env.DATABASE_URL;
let local: LocalStack;
beforeAll(async () => {
  process.env.DATABASE_URL = await freshDatabase('demo_paging');
  local = await startLocal({ dataApi: { transactionIdleTimeoutMs: 2000, maxResponseBytes: MAX_RESPONSE_BYTES } });
});
afterAll(async () => {
  await local?.close();
  if (previousDatabaseUrl === undefined) delete process.env.DATABASE_URL;
  else process.env.DATABASE_URL = previousDatabaseUrl;
});

/** Effect i applied this many times: 1, 2 or 3 rows, so that page boundaries fall inside a key's rows. */
const timesApplied = (i: number) => 1 + (i % 3);

/** A handler that writes each payment's row `timesApplied` times: the effects judged are known in advance. */
function repeatingHandler({ session }: ScenarioEnvironment) {
  return async (event: SQSEvent) => {
    for (const record of event.Records) {
      const { index } = JSON.parse(record.body) as { index: number };
      for (let time = 0; time < timesApplied(index); time++) {
        await session.execute('INSERT INTO public.payments (payment_id) VALUES (:id)', { id: `pay-${index}` });
      }
    }
    return { batchItemFailures: [] };
  };
}

/** A session on the stack's default database (the fresh one DATABASE_URL names). */
function defaultSession() {
  const client = dataApiClient(local.dataApi);
  const session = new DataApiSession(
    { client, resourceArn: local.dataApi.resourceArn, secretArn: local.dataApi.secretArn },
    { callTimeoutMs: 10_000, resumeDelaysMs: [] },
  );
  return { session, close: () => client.destroy() };
}

const byJson = (rows: readonly object[]) => rows.map((row) => JSON.stringify(row)).sort();

describe('selectByKey: every row of a query with a key column, in keyset pages', () => {
  it('reads each row once across pages of 3: keys split by a page boundary, a key with more rows than a page, NULL keys', async () => {
    const { session, close } = defaultSession();
    await session.execute('CREATE TABLE public.effect_rows (id int PRIMARY KEY, key text)');
    // k1 once, k2 twice, ... k5 five times (more than a page), two NULL keys and an empty one (they sort together).
    const keys = [...[1, 2, 3, 4, 5].flatMap((n) => Array.from({ length: n }, () => `k${n}`)), null, null, ''];
    for (const [id, key] of keys.entries()) await session.execute('INSERT INTO public.effect_rows (id, key) VALUES (:id, :key)', { id, key });
    const rows = await selectByKey(session, 'SELECT id, key FROM public.effect_rows -- a trailing comment', 3);
    expect(byJson(rows)).toEqual(byJson(keys.map((key, id) => ({ id, key }))));
    close();
  });

  it('asks again with fewer rows when the Data API refuses a page as too large', async () => {
    const { session, close } = defaultSession();
    const rows = await selectByKey(session, "SELECT 'order-' || i AS key, i AS seq FROM generate_series(1, 2000) AS i");
    expect(rows).toHaveLength(2000);
    expect(new Set(rows.map((row) => row.key)).size).toBe(2000);
    close();
  });
});

describe("the demo's final check, in pages", () => {
  it('the limit is real: one answer with the effects of 400 orders is refused', async () => {
    const { session, close } = defaultSession();
    await expect(session.execute("SELECT 'order-' || i AS key, 1 AS count, i AS seq FROM generate_series(1, 400) AS i")).rejects.toThrow(
      'BadRequestException: Database response exceeded size limit',
    );
    close();
  });

  it.each(['inbox', 'naive'] as const)(
    'judges every order of a %s run whose effects pass the response limit, and finishes',
    async (pattern) => {
      const result = await runScenario(local, { ...demoConsumer(pattern), messages: 400, seed: 11, faults: FAULTS });
      expect(result.completed).toBe(true);
      expect(result.unexpectedKeys).toEqual([]);
      expect(result.lost).toBe(0);
      // Every order counted: shipped, parked or dead-lettered.
      expect(result.applied + result.wellFormedInDlqOrParked + result.poison).toBeGreaterThanOrEqual(400);
      if (pattern === 'inbox') expect(result.problems).toEqual([]);
    },
    120_000,
  );

  it('counts every effect of a run whose effects query returns a row per effect, keys straddling pages', async () => {
    const messages = 300;
    const result = await runScenario(local, {
      handler: repeatingHandler,
      setup: 'CREATE TABLE public.payments (id bigserial PRIMARY KEY, payment_id text NOT NULL)',
      message: (index) => ({ key: `pay-${index}`, body: { index } }),
      // A row per effect, no GROUP BY: rows with the same key add up.
      effects: 'SELECT payment_id AS key, id AS seq FROM public.payments',
      messages,
      faults: [],
    });
    const expected = Array.from({ length: messages }, (_, i) => ({ key: `pay-${i}`, count: timesApplied(i) })).filter((effect) => effect.count > 1);
    expect(result.completed).toBe(true);
    expect(result.applied).toBe(messages);
    expect([...result.doubleEffects].sort((a, b) => a.key.localeCompare(b.key))).toEqual(expected.sort((a, b) => a.key.localeCompare(b.key)));
    expect(result.extraEffects).toBe(expected.reduce((sum, effect) => sum + effect.count - 1, 0));
    expect(result.lost).toBe(0);
  }, 120_000);
});
