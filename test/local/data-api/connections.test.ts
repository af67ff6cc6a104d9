import { BeginTransactionCommand, StatementTimeoutException } from '@aws-sdk/client-rds-data';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createDatabase, databaseName } from '../../../local/postgres.js';
import { rejectionOf, startHarness, type Harness } from './harness.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** How long a call took, and how it ended. */
async function timed<T>(call: Promise<T>): Promise<{ ms: number; outcome: T | Error }> {
  const started = Date.now();
  const outcome = await call.catch((error: Error) => error);
  return { ms: Date.now() - started, outcome };
}

describe('local Data API: connection and transaction limits', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('connections', { maxConnectionsPerDatabase: 3, maxOpenTransactions: 2, connectionWaitTimeoutMs: 300 });
  });
  afterAll(async () => h?.close());

  it('caps open transactions: a BeginTransaction beyond the cap waits, then fails with StatementTimeoutException, while autocommit calls go on', async () => {
    const first = await h.begin();
    const second = await h.begin();
    const third = await timed(h.begin());
    expect(third.outcome).toBeInstanceOf(StatementTimeoutException);
    const error = third.outcome as StatementTimeoutException;
    expect(error.$metadata.httpStatusCode).toBe(400);
    expect(error.$metadata.attempts).toBe(1);
    expect(error.message).toMatch(/^Connection is not available, request timed out after 300ms: 2 transactions are open \(maxOpenTransactions\)/);
    expect(third.ms).toBeGreaterThanOrEqual(280);
    expect(third.ms).toBeLessThan(2_000);
    // The cap leaves connections to autocommit calls.
    expect((await h.execute('SELECT 1')).records).toEqual([[{ longValue: 1 }]]);
    await h.rollback(first);
    const fourth = await h.begin();
    await h.rollback(second);
    await h.rollback(fourth);
  });

  it('bounds the wait for a connection: with every connection taken, a call fails after connectionWaitTimeoutMs, and another database still answers', async () => {
    const first = await h.begin();
    const second = await h.begin();
    const slow = h.execute('SELECT pg_sleep(1)');
    await sleep(100);
    const waited = await timed(h.execute('SELECT 1'));
    expect(waited.outcome).toBeInstanceOf(StatementTimeoutException);
    expect((waited.outcome as Error).message).toMatch(
      /^Connection is not available, request timed out after 300ms: all 3 connections to database "\w+" are in use \(maxConnectionsPerDatabase\)/,
    );
    expect(waited.ms).toBeGreaterThanOrEqual(280);
    expect(waited.ms).toBeLessThan(2_000);
    const otherUrl = await createDatabase(h.url, `${databaseName(h.url)}_b`.slice(0, 63));
    const other = databaseName(otherUrl);
    expect((await h.execute('SELECT current_database()', undefined, { database: other })).records).toEqual([[{ stringValue: other }]]);
    await slow;
    expect((await h.execute('SELECT 2')).records).toEqual([[{ longValue: 2 }]]);
    await h.rollback(first);
    await h.rollback(second);
  });
});

describe('local Data API: callers that go away', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('vanished', { maxConnectionsPerDatabase: 1, maxOpenTransactions: 4, connectionWaitTimeoutMs: 5_000 });
  });
  afterAll(async () => h?.close());
  const idleInTransaction = async () =>
    (
      await h.direct.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%' " +
          "AND application_name = 'sqs-inbox-local-data-api'",
      )
    ).rows[0]?.n;

  it('never begins a transaction for a caller that left while it waited for a connection, so nothing holds the connection for it', async () => {
    const holder = await h.begin();
    const abandoned = new AbortController();
    const gone = rejectionOf(
      h.client.send(new BeginTransactionCommand({ resourceArn: h.server.resourceArn, secretArn: h.server.secretArn }), { abortSignal: abandoned.signal }),
    );
    await sleep(150);
    abandoned.abort();
    expect((await gone).name).toBe('AbortError');
    await sleep(100);
    await h.rollback(holder);
    await sleep(100);
    expect(await idleInTransaction()).toBe(0);
    // The only connection is free for the next caller at once, not after an idle timeout.
    const next = await timed(h.begin());
    expect(next.ms).toBeLessThan(1_000);
    await h.rollback(next.outcome as string);
  });
});

describe('local Data API: idle expiry under the transaction cap', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('expiry_cap', { maxOpenTransactions: 2, connectionWaitTimeoutMs: 2_000, transactionIdleTimeoutMs: 400 });
  });
  afterAll(async () => h?.close());

  it('rolls back transactions nobody ends after the idle timeout, and gives their places to a waiting BeginTransaction', async () => {
    await h.begin();
    await h.begin();
    const waiting = await timed(h.begin());
    expect(typeof waiting.outcome).toBe('string');
    expect(waiting.ms).toBeGreaterThanOrEqual(250);
    expect(waiting.ms).toBeLessThan(1_500);
    await h.rollback(waiting.outcome as string);
  });
});

describe('local Data API: pools of databases a long-lived process dropped', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('dropped_pools', { connectionIdleTimeoutMs: 100 });
  });
  afterAll(async () => h?.close());

  it('lets go of a pool once its connections are closed, so dropped databases keep none, and opens it again on the next call', async () => {
    await h.execute('SELECT 1');
    const names = Array.from({ length: 5 }, (_, i) => `${databaseName(h.url)}_drop${i}`.slice(0, 63));
    for (const name of names) {
      await createDatabase(h.url, name);
      expect((await h.execute('SELECT current_database()', undefined, { database: name })).records).toEqual([[{ stringValue: name }]]);
    }
    // A call to a database that does not exist opens no connection, so no idle timeout ever lets its pool go.
    await expect(h.execute('SELECT 1', undefined, { database: `${databaseName(h.url)}_never`.slice(0, 63) })).rejects.toThrow(/does not exist/);
    // DROP DATABASE needs the database's connections gone: the idle timeout closes them.
    await vi.waitFor(() => expect(h.server.openPools).toBe(0), { timeout: 5_000, interval: 50 });
    for (const name of names) await h.direct.query(`DROP DATABASE "${name}"`);
    expect(h.server.openPools).toBe(0);
    expect((await h.execute('SELECT 2')).records).toEqual([[{ longValue: 2 }]]);
    expect(h.server.openPools).toBe(1);
  });
});
