import { BadRequestException, TransactionNotFoundException } from '@aws-sdk/client-rds-data';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rejectionOf, startHarness, type Harness } from './harness.js';

/**
 * One connection per database, so every call lands on the same PostgreSQL session: what one call leaves
 * behind, the next one would meet.
 */
describe('local Data API: every call starts from a clean session and leaves nothing open', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('sessions', { maxConnectionsPerDatabase: 1 });
    await h.execute('CREATE SCHEMA other');
    await h.execute('CREATE TABLE other.things (id int)');
    await h.execute('CREATE TABLE writes (id int PRIMARY KEY)');
  });
  afterAll(async () => h?.close());
  const single = async (sql: string, extra = {}) => (await h.execute(sql, undefined, extra)).records?.[0]?.[0];
  const committed = async () => (await h.direct.query<{ n: number }>('SELECT count(*)::int AS n FROM writes')).rows[0]?.n;
  const insert = (id: number, extra = {}) => h.execute('INSERT INTO writes VALUES (:id)', [{ name: 'id', value: { longValue: id } }], extra);

  it('drops what an autocommit call set (search_path, read-only, time zone, a temporary table) before the next call on the connection', async () => {
    const pid = await single('SELECT pg_backend_pid()');
    await h.execute('SET search_path TO other');
    expect(await single('SHOW search_path')).toEqual({ stringValue: '"$user", public' });
    await h.execute('SET default_transaction_read_only = on');
    expect((await insert(1)).numberOfRecordsUpdated).toBe(1);
    await h.execute("SET TimeZone = 'America/New_York'");
    // The server's own start-up settings survive the reset: timestamps stay in UTC.
    expect(await single('SHOW TimeZone')).toEqual({ stringValue: 'UTC' });
    await h.execute('CREATE TEMPORARY TABLE scratch (id int)');
    expect(await single("SELECT to_regclass('pg_temp.scratch')::text")).toEqual({ isNull: true });
    // The same connection served every call, so the clean state is the reset's doing, not a new session's.
    expect(await single('SELECT pg_backend_pid()')).toEqual(pid);
  });

  it('refuses BEGIN and START TRANSACTION without a transactionId, and the writes after them are committed', async () => {
    await h.execute('DELETE FROM writes');
    for (const sql of ['BEGIN', 'start transaction isolation level serializable']) {
      const error = await rejectionOf(h.execute(sql));
      expect(error).toBeInstanceOf(BadRequestException);
      expect(error.$metadata.httpStatusCode).toBe(400);
      expect(error.message).toContain('opened a transaction block (BEGIN or START TRANSACTION) in a call without transactionId; it was rolled back');
    }
    for (let id = 1; id <= 5; id++) expect((await insert(id)).numberOfRecordsUpdated).toBe(1);
    // Read at once, while the server still holds its connection: every acknowledged write is durable.
    expect(await committed()).toBe(5);
  });

  it('ends a transaction whose SQL ran COMMIT, reports it as an error naming what PostgreSQL did, and then does not find it', async () => {
    await h.execute('DELETE FROM writes');
    const transactionId = await h.begin();
    await insert(10, { transactionId });
    const error = await rejectionOf(h.execute('COMMIT', undefined, { transactionId }));
    expect(error).toBeInstanceOf(BadRequestException);
    expect(error.message).toContain(`The SQL ended transaction ${transactionId} (PostgreSQL answered COMMIT)`);
    const after = await rejectionOf(insert(11, { transactionId }));
    expect(after).toBeInstanceOf(TransactionNotFoundException);
    expect(after.message).toBe(`Transaction ${transactionId} isn't found. One previous call resulted in a termination of your transaction.`);
    expect(await rejectionOf(h.rollback(transactionId))).toBeInstanceOf(TransactionNotFoundException);
    expect((await h.direct.query('SELECT id FROM writes ORDER BY id')).rows).toEqual([{ id: 10 }]);
    // Its connection went back to the pool, out of any transaction block.
    expect((await insert(12)).numberOfRecordsUpdated).toBe(1);
    expect(await committed()).toBe(2);
  });

  it('ends a transaction whose SQL ran ROLLBACK the same way, with nothing of it kept', async () => {
    await h.execute('DELETE FROM writes');
    const transactionId = await h.begin();
    await insert(20, { transactionId });
    const error = await rejectionOf(h.execute('ROLLBACK', undefined, { transactionId }));
    expect(error.message).toContain('(PostgreSQL answered ROLLBACK)');
    expect(await rejectionOf(h.commit(transactionId))).toBeInstanceOf(TransactionNotFoundException);
    expect(await committed()).toBe(0);
  });

  it('refuses COMMIT in the SQL of an autocommit batch, and keeps none of the batch', async () => {
    await h.execute('DELETE FROM writes');
    const error = await rejectionOf(h.batch('COMMIT', [[], []]));
    expect(error).toBeInstanceOf(BadRequestException);
    expect(error.message).toContain('The SQL ended the transaction around this batch');
    expect((await insert(30)).numberOfRecordsUpdated).toBe(1);
    expect(await committed()).toBe(1);
  });

  it('drops what a transaction set once it is committed', async () => {
    const transactionId = await h.begin();
    await h.execute('SET search_path TO other', undefined, { transactionId });
    expect((await h.execute('SHOW search_path', undefined, { transactionId })).records?.[0]?.[0]).toEqual({ stringValue: 'other' });
    await h.commit(transactionId);
    expect(await single('SHOW search_path')).toEqual({ stringValue: '"$user", public' });
  });
});

describe('local Data API: a transaction never waits for its own connection', () => {
  it("answers a transaction's first statement while that transaction holds the pool's only connection, after the pool was let go", async () => {
    // The pool is let go once its idle connection closes; the next pool knows no types yet. Loading them
    // on the pool would wait for the connection the transaction holds, until connectionWaitTimeoutMs.
    const h = await startHarness('sessions_catalog', { maxConnectionsPerDatabase: 1, connectionIdleTimeoutMs: 50, connectionWaitTimeoutMs: 3_000 });
    try {
      await h.execute('SELECT 1');
      await new Promise((resolve) => setTimeout(resolve, 300));
      const transactionId = await h.begin();
      const started = Date.now();
      expect((await h.execute("SELECT 'x'::text AS one", undefined, { transactionId })).records?.[0]?.[0]).toEqual({ stringValue: 'x' });
      expect(Date.now() - started).toBeLessThan(2_000);
      await h.commit(transactionId);
    } finally {
      await h.close();
    }
  });
});
