import {
  DatabaseErrorException,
  DatabaseResumingException,
  DatabaseUnavailableException,
  InternalServerErrorException,
  ServiceUnavailableError,
  TransactionNotFoundException,
} from '@aws-sdk/client-rds-data';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DataApiError as SessionError } from '../../../lambda/inbox/index.js';
import { DataApiSession } from '../../../lambda/inbox/transport/data-api/session.js';
import { rejectionOf, startHarness, type Harness } from './harness.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('local Data API: fault injection and retries', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('faults');
    await h.execute('CREATE TABLE writes (id serial PRIMARY KEY, tag text)');
  });
  afterAll(async () => h?.close());
  beforeEach(() => {
    h.server.faults.clear();
    h.server.stats.reset();
  });
  const write = (tag: string, extra = {}) => h.execute('INSERT INTO writes (tag) VALUES (:tag)', [{ name: 'tag', value: { stringValue: tag } }], extra);
  const writes = async (tag: string) => (await h.direct.query<{ n: number }>('SELECT count(*)::int AS n FROM writes WHERE tag = $1', [tag])).rows[0]?.n;

  it.each([
    [500, InternalServerErrorException],
    [503, ServiceUnavailableError],
    [504, DatabaseUnavailableException],
  ] as const)('fails the next calls with a %i without running them; the SDK retries and the write happens once', async (status, type) => {
    h.server.faults.serverError({ count: 2, status, operation: 'ExecuteStatement' });
    const result = await write(`retried-${status}`);
    expect(result.$metadata.attempts).toBe(3);
    expect(h.server.stats.calls.ExecuteStatement).toBe(3);
    expect(await writes(`retried-${status}`)).toBe(1);
    h.server.faults.serverError({ count: 3, status });
    const error = await rejectionOf(write(`failed-${status}`));
    expect(error).toBeInstanceOf(type);
    expect(error.$metadata.httpStatusCode).toBe(status);
    expect(await writes(`failed-${status}`)).toBe(0);
  });

  it('answers a 502 with no error type, as a proxy does: the SDK retries it, names it Unknown, and the session classifies it network', async () => {
    h.server.faults.serverError({ count: 2, status: 502, operation: 'ExecuteStatement' });
    const result = await write('retried-502');
    expect(result.$metadata.attempts).toBe(3);
    expect(await writes('retried-502')).toBe(1);
    h.server.faults.serverError({ count: 3, status: 502 });
    const error = await rejectionOf(write('failed-502'));
    expect(error.name).toBe('Unknown');
    expect(error.$metadata.httpStatusCode).toBe(502);
    expect(error.message).toMatch(/Bad Gateway/);
    expect(await writes('failed-502')).toBe(0);

    // What inbox() sees when a commit meets it: not 'unavailable' (a modelled 5xx) but 'network'.
    const target = { client: h.newClient({ maxAttempts: 1 }), resourceArn: h.server.resourceArn, secretArn: h.server.secretArn };
    const session = new DataApiSession(target, { callTimeoutMs: 5000, resumeDelaysMs: [] });
    const transactionId = await session.begin();
    h.server.faults.serverError({ count: 1, status: 502, operation: 'CommitTransaction' });
    const failed = await rejectionOf(session.commit(transactionId));
    expect(failed).toBeInstanceOf(SessionError);
    expect(failed).toMatchObject({ operation: 'CommitTransaction', failure: 'network', ambiguous: true });
    // The commit did not run: its transaction is still open.
    expect((await session.execute('SELECT 1 AS one', {}, transactionId)).rows).toEqual([{ one: 1 }]);
    await session.rollback(transactionId);
  });

  it('never retries a SQL error: one call, and a write that failed is not run again', async () => {
    await h.execute('CREATE TABLE once (id int PRIMARY KEY)');
    await h.execute('INSERT INTO once VALUES (1)');
    h.server.stats.reset();
    const error = await rejectionOf(h.execute('INSERT INTO once VALUES (1)'));
    expect(error).toBeInstanceOf(DatabaseErrorException);
    expect(error.$metadata.attempts).toBe(1);
    expect(h.server.stats.calls.ExecuteStatement).toBe(1);
    expect(h.server.stats.total()).toBe(1);
  });

  it('drops the response of a commit after committing: the caller sees an error, the data is committed', async () => {
    const transactionId = await h.begin();
    await write('dropped-commit', { transactionId });
    h.server.faults.dropResponse({ operation: 'CommitTransaction' });
    const single = h.newClient({ maxAttempts: 1 });
    const error = await rejectionOf(h.commit(transactionId, single));
    expect(error.name).not.toBe('TransactionNotFoundException');
    expect(await writes('dropped-commit')).toBe(1);
  });

  it('drops a commit response under the default retries: the retried commit finds no transaction', async () => {
    const transactionId = await h.begin();
    await write('dropped-retried', { transactionId });
    h.server.faults.dropResponse({ operation: 'CommitTransaction' });
    const error = await rejectionOf(h.commit(transactionId));
    expect(error).toBeInstanceOf(TransactionNotFoundException);
    expect(h.server.stats.calls.CommitTransaction).toBe(2);
    expect(await writes('dropped-retried')).toBe(1);
  });

  it('drops only the responses whose SQL matches, as many as count says', async () => {
    h.server.faults.dropResponse({ match: (sql) => sql.includes('writes'), count: 2 });
    const single = h.newClient({ maxAttempts: 1 });
    const call = (tag: string) => h.execute('INSERT INTO writes (tag) VALUES (:tag)', [{ name: 'tag', value: { stringValue: tag } }], undefined, single);
    expect((await h.execute('SELECT 1', undefined, undefined, single)).records).toEqual([[{ longValue: 1 }]]);
    await rejectionOf(call('matched'));
    await rejectionOf(call('matched'));
    await call('matched');
    expect(await writes('matched')).toBe(3);
  });

  it('shows why dropped responses matter: the SDK retries an autocommit write, and it runs twice', async () => {
    h.server.faults.dropResponse({ operation: 'ExecuteStatement' });
    const result = await write('twice');
    expect(result.$metadata.attempts).toBe(2);
    expect(await writes('twice')).toBe(2);
  });

  it('simulates auto-pause: DatabaseResumingException, not retried, until the resume delay has passed since the first call', async () => {
    const transactionId = await h.begin();
    // Wide margins: on a loaded machine the calls below take their time, and the windows must still hold.
    h.server.faults.autoPause({ resumeAfterMs: 1_500 });
    await sleep(1_000); // the delay counts from the first call, not from when the fault was set
    const error = await rejectionOf(h.execute('SELECT 1'));
    expect(error).toBeInstanceOf(DatabaseResumingException);
    expect(error.$metadata.httpStatusCode).toBe(400);
    expect(error.$metadata.attempts).toBe(1);
    expect(error.message).toBe('The Aurora DB instance db-LOCAL is resuming after being auto-paused. Please wait a few seconds and try again.');
    expect(await rejectionOf(h.begin())).toBeInstanceOf(DatabaseResumingException);
    expect(await rejectionOf(h.batch('SELECT 1', [[]]))).toBeInstanceOf(DatabaseResumingException);
    await sleep(700); // 1.7 s since the fault was set, 0.7 s since the first call: still resuming
    expect(await rejectionOf(h.execute('SELECT 1'))).toBeInstanceOf(DatabaseResumingException);
    // An instance pauses only when no connection is open: a transaction that is open goes on.
    expect((await h.execute('SELECT 3', undefined, { transactionId })).records).toEqual([[{ longValue: 3 }]]);
    // Commit and Rollback do not list DatabaseResumingException: they go through.
    expect((await h.commit(transactionId)).transactionStatus).toBe('Transaction Committed');
    await sleep(900);
    expect((await h.execute('SELECT 1')).records).toEqual([[{ longValue: 1 }]]);
    expect((await h.execute('SELECT 2')).records).toEqual([[{ longValue: 2 }]]);
  });

  it('adds latency to the matching operation only', async () => {
    h.server.faults.latency({ ms: 150, operation: 'BeginTransaction' });
    let started = Date.now();
    await h.execute('SELECT 1');
    expect(Date.now() - started).toBeLessThan(120);
    started = Date.now();
    const transactionId = await h.begin();
    expect(Date.now() - started).toBeGreaterThanOrEqual(145);
    await h.rollback(transactionId);
    h.server.faults.clear();
    started = Date.now();
    await h.rollback(await h.begin());
    expect(Date.now() - started).toBeLessThan(120);
  });

  it('counts calls per operation, faulted ones included, and resets', async () => {
    h.server.faults.serverError({ count: 1, operation: 'BeginTransaction', status: 503 });
    const transactionId = await h.begin();
    await h.execute('SELECT 1', undefined, { transactionId });
    await h.batch('SELECT 1', [[], []], { transactionId });
    await h.rollback(transactionId);
    expect(h.server.stats.calls).toEqual({
      ExecuteStatement: 1,
      BatchExecuteStatement: 1,
      BeginTransaction: 2,
      CommitTransaction: 0,
      RollbackTransaction: 1,
      ExecuteSql: 0,
    });
    expect(h.server.stats.total()).toBe(5);
    h.server.stats.reset();
    expect(h.server.stats.total()).toBe(0);
  });
});

describe('local Data API: BatchExecuteStatement', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('batch');
    await h.execute('CREATE TABLE items (id int PRIMARY KEY, name text)');
  });
  afterAll(async () => h?.close());
  const set = (id: number, name: string) => [
    { name: 'id', value: { longValue: id } },
    { name: 'name', value: { stringValue: name } },
  ];
  const ids = async () => (await h.direct.query<{ id: number }>('SELECT id FROM items ORDER BY id')).rows.map((row) => row.id);

  it('runs the statement once per parameter set and answers one updateResults entry each, with empty generatedFields', async () => {
    const result = await h.batch('INSERT INTO items VALUES (:id, :name)', [set(1, 'a'), set(2, 'b'), set(3, 'c')]);
    expect(result.updateResults).toEqual([{ generatedFields: [] }, { generatedFields: [] }, { generatedFields: [] }]);
    expect(await ids()).toEqual([1, 2, 3]);
    expect((await h.batch('DELETE FROM items WHERE id > 100')).updateResults).toEqual([]);
    expect((await h.batch('DELETE FROM items WHERE id = 3', [[]])).updateResults).toHaveLength(1);
    expect(await ids()).toEqual([1, 2]);
  });

  it('applies no set of an autocommit batch when one set fails', async () => {
    const error = await rejectionOf(h.batch('INSERT INTO items VALUES (:id, :name)', [set(10, 'x'), set(1, 'duplicate')]));
    expect(error).toBeInstanceOf(DatabaseErrorException);
    expect(error.message).toContain('SQLState: 23505');
    expect(await ids()).toEqual([1, 2]);
  });

  it('runs inside a transaction with transactionId', async () => {
    const transactionId = await h.begin();
    await h.batch('INSERT INTO items VALUES (:id, :name)', [set(20, 'x'), set(21, 'y')], { transactionId });
    expect(await ids()).toEqual([1, 2]);
    await h.commit(transactionId);
    expect(await ids()).toEqual([1, 2, 20, 21]);
  });

  it('refuses SQL that ends with a semicolon, and multi-statement SQL', async () => {
    const semicolon = await rejectionOf(h.batch('INSERT INTO items VALUES (:id, :name);', [set(30, 'x')]));
    expect(semicolon.name).toBe('ValidationException');
    expect(semicolon.message).toContain('must not end with a semicolon');
    const multi = await rejectionOf(h.batch('DELETE FROM items; DELETE FROM items', [[]]));
    expect(multi.message).toBe("Multistatements aren't supported.");
    expect(await ids()).toEqual([1, 2, 20, 21]);
  });

  it('checks every parameter set before running any', async () => {
    const error = await rejectionOf(h.batch('INSERT INTO items VALUES (:id, :name)', [set(40, 'x'), [{ name: 'id', value: {} as never }]]));
    expect(error.name).toBe('BadRequestException');
    expect(await ids()).toEqual([1, 2, 20, 21]);
  });
});
