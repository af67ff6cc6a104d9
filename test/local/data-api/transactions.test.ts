import { DatabaseErrorException, TransactionNotFoundException } from '@aws-sdk/client-rds-data';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase, databaseName } from '../../../local/postgres.js';
import { rejectionOf, startHarness, type Harness } from './harness.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('local Data API: transactions', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('transactions');
    await h.execute('CREATE TABLE claims (consumer text, message text, PRIMARY KEY (consumer, message))');
  });
  afterAll(async () => h?.close());
  const count = async (message: string) =>
    (await h.direct.query<{ n: number }>('SELECT count(*)::int AS n FROM claims WHERE message = $1', [message])).rows[0]?.n;
  const claim = (message: string, transactionId: string) =>
    h.execute(
      'INSERT INTO claims VALUES (:c, :m) ON CONFLICT DO NOTHING RETURNING message',
      [
        { name: 'c', value: { stringValue: 'worker' } },
        { name: 'm', value: { stringValue: message } },
      ],
      { transactionId },
    );

  it('commits with "Transaction Committed" and rolls back with "Rollback Complete"', async () => {
    const kept = await h.begin();
    await claim('kept', kept);
    expect(await count('kept')).toBe(0);
    expect((await h.commit(kept)).transactionStatus).toBe('Transaction Committed');
    expect(await count('kept')).toBe(1);
    const undone = await h.begin();
    await claim('undone', undone);
    expect((await h.rollback(undone)).transactionStatus).toBe('Rollback Complete');
    expect(await count('undone')).toBe(0);
  });

  it('answers TransactionNotFoundException (404) after commit, after rollback and for an id never issued', async () => {
    const committed = await h.begin();
    await h.commit(committed);
    const afterCommit = await rejectionOf(h.execute('SELECT 1', undefined, { transactionId: committed }));
    expect(afterCommit).toBeInstanceOf(TransactionNotFoundException);
    expect(afterCommit.$metadata.httpStatusCode).toBe(404);
    expect(afterCommit.message).toBe(`Transaction ${committed} isn't found. One previous call resulted in a termination of your transaction.`);
    expect(await rejectionOf(h.commit(committed))).toBeInstanceOf(TransactionNotFoundException);
    const rolledBack = await h.begin();
    await h.rollback(rolledBack);
    expect(await rejectionOf(h.rollback(rolledBack))).toBeInstanceOf(TransactionNotFoundException);
    const never = await rejectionOf(h.execute('SELECT 1', undefined, { transactionId: 'never-issued' }));
    expect(never).toBeInstanceOf(TransactionNotFoundException);
    expect(never.message).toBe("Transaction never-issued isn't found. Transaction may be expired.");
  });

  it('treats the id as a bearer token usable from another client and connection', async () => {
    const transactionId = await h.begin();
    const other = h.newClient();
    await claim('bearer', transactionId);
    const seen = await h.execute("SELECT count(*) FROM claims WHERE message = 'bearer'", undefined, { transactionId }, other);
    expect(seen.records).toEqual([[{ longValue: 1 }]]);
    await h.commit(transactionId, other);
    expect(await count('bearer')).toBe(1);
  });

  it('lets two transactions race on one key: the second blocks until the first commits, then inserts nothing', async () => {
    const first = await h.begin();
    const second = await h.begin();
    expect((await claim('raced', first)).records).toEqual([[{ stringValue: 'raced' }]]);
    let secondDone = false;
    const secondClaim = claim('raced', second).then((result) => {
      secondDone = true;
      return result;
    });
    await sleep(100);
    expect(secondDone).toBe(false);
    await h.commit(first);
    const lost = await secondClaim;
    expect(lost.records).toEqual([]);
    expect(lost.numberOfRecordsUpdated).toBe(0);
    await h.commit(second);
    expect(await count('raced')).toBe(1);
  });

  it('lets the racing loser see the conflict as a unique violation without ON CONFLICT', async () => {
    const first = await h.begin();
    const second = await h.begin();
    const insert = (transactionId: string) => h.execute("INSERT INTO claims VALUES ('worker', 'plain')", undefined, { transactionId });
    await insert(first);
    const loser = rejectionOf(insert(second));
    await sleep(50);
    await h.commit(first);
    const error = await loser;
    expect(error).toBeInstanceOf(DatabaseErrorException);
    expect(error.message).toContain('SQLState: 23505');
    await h.rollback(second);
  });

  it('refuses a second concurrent call on one transaction at once with "Transaction is still running a query"', async () => {
    const transactionId = await h.begin();
    const slow = h.execute('SELECT pg_sleep(0.3)', undefined, { transactionId });
    await sleep(50);
    const started = Date.now();
    const busy = await rejectionOf(h.execute('SELECT 1', undefined, { transactionId }));
    expect(Date.now() - started).toBeLessThan(200);
    expect(busy).toBeInstanceOf(DatabaseErrorException);
    expect(busy.message).toBe('Transaction is still running a query');
    expect(await rejectionOf(h.commit(transactionId))).toBeInstanceOf(DatabaseErrorException);
    await slow;
    expect((await h.execute('SELECT 2', undefined, { transactionId })).records).toEqual([[{ longValue: 2 }]]);
    await h.rollback(transactionId);
  });

  it('leaves a transaction aborted after a failed statement until rollback, and refuses to report its commit as committed', async () => {
    const transactionId = await h.begin();
    await claim('aborted', transactionId);
    await rejectionOf(h.execute('SELECT 1/0', undefined, { transactionId }));
    const next = await rejectionOf(h.execute('SELECT 1', undefined, { transactionId }));
    expect(next).toBeInstanceOf(DatabaseErrorException);
    expect(next.message).toContain('current transaction is aborted');
    expect(next.message).toContain('SQLState: 25P02');
    const commit = await rejectionOf(h.commit(transactionId));
    expect(commit).toBeInstanceOf(DatabaseErrorException);
    expect(commit.message).toContain('rolled back, not committed');
    expect(await count('aborted')).toBe(0);
    expect(await rejectionOf(h.rollback(transactionId))).toBeInstanceOf(TransactionNotFoundException);
  });

  it('rolls back DDL inside a transaction', async () => {
    const transactionId = await h.begin();
    await h.execute('CREATE TABLE ddl_in_tx (id int)', undefined, { transactionId });
    await h.rollback(transactionId);
    const { rows } = await h.direct.query("SELECT to_regclass('ddl_in_tx') AS t");
    expect(rows[0].t).toBeNull();
  });

  it('runs a call without transactionId in autocommit, outside any transaction block', async () => {
    await h.execute('CREATE INDEX CONCURRENTLY claims_message ON claims (message)');
    const { rows } = await h.direct.query("SELECT to_regclass('claims_message') AS t");
    expect(rows[0].t).toBe('claims_message');
  });

  it('selects another database on the same server with the database member', async () => {
    const otherUrl = await createDatabase(h.url, `${databaseName(h.url)}_other`.slice(0, 63));
    const other = databaseName(otherUrl);
    expect((await h.execute('SELECT current_database()', undefined, { database: other })).records).toEqual([[{ stringValue: other }]]);
    expect((await h.execute('SELECT current_database()')).records).toEqual([[{ stringValue: h.server.database }]]);
    const transactionId = await h.begin({ database: other });
    expect((await h.execute('SELECT current_database()', undefined, { transactionId })).records).toEqual([[{ stringValue: other }]]);
    const mismatch = await rejectionOf(h.execute('SELECT 1', undefined, { transactionId, database: h.server.database }));
    expect(mismatch.message).toContain('the transaction was begun on');
    await h.rollback(transactionId);
    const missing = await rejectionOf(h.execute('SELECT 1', undefined, { database: 'no_such_database' }));
    expect(missing).toBeInstanceOf(DatabaseErrorException);
    expect(missing.message).toContain('SQLState: 3D000');
  });
});

describe('local Data API: transaction expiry', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('expiry', { transactionIdleTimeoutMs: 150, transactionMaxLifetimeMs: 500 });
    await h.execute('CREATE TABLE effects (id text PRIMARY KEY)');
  });
  afterAll(async () => h?.close());
  const insert = (id: string, transactionId: string) =>
    h.execute('INSERT INTO effects VALUES (:id)', [{ name: 'id', value: { stringValue: id } }], { transactionId });
  const exists = async (id: string) => (await h.direct.query('SELECT 1 FROM effects WHERE id = $1', [id])).rowCount === 1;

  it('rolls back a transaction no call used for the idle timeout, and then does not find it', async () => {
    const transactionId = await h.begin();
    await insert('idle', transactionId);
    await sleep(300);
    const commit = await rejectionOf(h.commit(transactionId));
    expect(commit).toBeInstanceOf(TransactionNotFoundException);
    expect(commit.message).toContain('Transaction may be expired.');
    expect(await exists('idle')).toBe(false);
    // The rollback released the row: another transaction can now take the key without waiting.
    const again = await h.begin();
    await insert('idle', again);
    await h.commit(again);
    expect(await exists('idle')).toBe(true);
  });

  it('does not count a running statement as idle time: a statement longer than the idle timeout keeps its transaction', async () => {
    const transactionId = await h.begin();
    await insert('long', transactionId);
    await h.execute('SELECT pg_sleep(0.25)', undefined, { transactionId });
    await h.commit(transactionId);
    expect(await exists('long')).toBe(true);
  });

  it('keeps a transaction that calls use more often than the idle timeout, until its lifetime ends', async () => {
    const transactionId = await h.begin();
    await insert('busy', transactionId);
    for (let i = 0; i < 3; i++) {
      await sleep(80);
      await h.execute('SELECT 1', undefined, { transactionId });
    }
    await sleep(80);
    await h.commit(transactionId);
    expect(await exists('busy')).toBe(true);
    const lived = await h.begin();
    await insert('lived', lived);
    for (let i = 0; i < 6; i++) {
      await sleep(100);
      await h.execute('SELECT 1', undefined, { transactionId: lived }).catch(() => {});
    }
    expect(await rejectionOf(h.commit(lived))).toBeInstanceOf(TransactionNotFoundException);
    expect(await exists('lived')).toBe(false);
  });
});
