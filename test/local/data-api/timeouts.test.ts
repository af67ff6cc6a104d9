import { DatabaseErrorException, ExecuteStatementCommand, StatementTimeoutException } from '@aws-sdk/client-rds-data';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rejectionOf, startHarness, type Harness } from './harness.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('local Data API: statement timeout', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('timeouts', { statementTimeoutMs: 150 });
    await h.execute('CREATE TABLE slow (id text PRIMARY KEY)');
  });
  afterAll(async () => h?.close());
  const exists = async (id: string) => (await h.direct.query('SELECT 1 FROM slow WHERE id = $1', [id])).rowCount === 1;
  const slowInsert = (id: string) => `INSERT INTO slow SELECT '${id}' FROM pg_sleep(0.4)`;

  it('fails a statement over the timeout with StatementTimeoutException carrying dbConnectionId, and cancels it', async () => {
    const started = Date.now();
    const error = await rejectionOf(h.execute(slowInsert('cancelled')));
    expect(Date.now() - started).toBeLessThan(380);
    expect(error).toBeInstanceOf(StatementTimeoutException);
    expect(error.$metadata.httpStatusCode).toBe(400);
    expect(error.$metadata.attempts).toBe(1);
    expect(typeof error.dbConnectionId).toBe('number');
    await sleep(400);
    expect(await exists('cancelled')).toBe(false);
  });

  it('with continueAfterTimeout still answers the timeout, but lets the statement run on and commit', async () => {
    const error = await rejectionOf(h.execute(slowInsert('continued'), undefined, { continueAfterTimeout: true }));
    expect(error).toBeInstanceOf(StatementTimeoutException);
    expect(await exists('continued')).toBe(false);
    await sleep(400);
    expect(await exists('continued')).toBe(true);
  });

  it('leaves a transaction aborted after a statement in it timed out, and nothing of it survives', async () => {
    const transactionId = await h.begin();
    await h.execute("INSERT INTO slow VALUES ('before-timeout')", undefined, { transactionId });
    expect(await rejectionOf(h.execute('SELECT pg_sleep(1)', undefined, { transactionId }))).toBeInstanceOf(StatementTimeoutException);
    const next = await rejectionOf(h.execute('SELECT 1', undefined, { transactionId }));
    expect(next).toBeInstanceOf(DatabaseErrorException);
    expect(next.message).toContain('current transaction is aborted');
    await h.rollback(transactionId);
    expect(await exists('before-timeout')).toBe(false);
  });

  it('refuses continueAfterTimeout inside a transaction', async () => {
    const transactionId = await h.begin();
    const error = await rejectionOf(h.execute('SELECT 1', undefined, { transactionId, continueAfterTimeout: true }));
    expect(error.message).toContain('continueAfterTimeout cannot be combined with transactionId');
    await h.rollback(transactionId);
  });

  it('times out a whole autocommit batch and applies none of its sets', async () => {
    const sets = ['b1', 'b2', 'b3'].map((id) => [{ name: 'id', value: { stringValue: id } }]);
    const error = await rejectionOf(h.batch('INSERT INTO slow SELECT :id FROM pg_sleep(0.1)', sets));
    expect(error).toBeInstanceOf(StatementTimeoutException);
    await sleep(100);
    expect(await exists('b1')).toBe(false);
  });
});

describe('local Data API: the slow-statement fault', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('slow_statements');
    await h.execute('CREATE TABLE held (id text PRIMARY KEY)');
  });
  afterAll(async () => h?.close());
  const exists = async (id: string) => (await h.direct.query('SELECT 1 FROM held WHERE id = $1', [id])).rowCount === 1;
  /** Sends the statement and gives up on it after `ms`, as a client with a call timeout does. */
  const giveUpAfter = (ms: number, sql: string) =>
    rejectionOf(
      h.client.send(new ExecuteStatementCommand({ resourceArn: h.server.resourceArn, secretArn: h.server.secretArn, sql }), {
        abortSignal: AbortSignal.timeout(ms),
      }),
    );

  it('holds a matching statement inside the database, where it goes on after its client gave up: a late effect', async () => {
    h.server.faults.slowStatement({ ms: 400, match: (sql) => sql.includes("'late'") });
    expect((await giveUpAfter(100, "INSERT INTO held VALUES ('late')")).name).toBe('AbortError');
    expect(await exists('late')).toBe(false);
    await sleep(500);
    expect(await exists('late')).toBe(true);
    // Used up: the next statement runs at once.
    const started = Date.now();
    await h.execute("INSERT INTO held VALUES ('late-2')");
    expect(Date.now() - started).toBeLessThan(300);
  });

  it("is bounded by the session's statement_timeout: cancelled, the call fails as a statement error and its SQL never runs", async () => {
    h.server.faults.slowStatement({ ms: 400, match: (sql) => sql.includes("'bounded'") });
    const transactionId = await h.begin();
    await h.execute("SELECT set_config('statement_timeout', '100', true)", undefined, { transactionId });
    const error = await rejectionOf(h.execute("INSERT INTO held VALUES ('bounded')", undefined, { transactionId }));
    expect(error).toBeInstanceOf(DatabaseErrorException);
    expect(error.message).toContain('canceling statement due to statement timeout');
    await h.rollback(transactionId);
    await sleep(400);
    expect(await exists('bounded')).toBe(false);
  });

  it('refuses a negative delay or count, naming the field', () => {
    expect(() => h.server.faults.slowStatement({ ms: -1 })).toThrow('slowStatement.ms must be a number of milliseconds >= 0');
    expect(() => h.server.faults.slowStatement({ ms: 1, count: 0 })).toThrow('slowStatement.count must be >= 1');
  });
});
