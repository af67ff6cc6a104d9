import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { RDSDataClient } from '@aws-sdk/client-rds-data';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DataApiError, date, decimal, json, time, uuid } from '../../lambda/inbox/index.js';
import { DataApiSession } from '../../lambda/inbox/transport/data-api/session.js';
import { classify, isConnectionReset } from '../../lambda/inbox/transport/data-api/failures.js';
import { resolveTarget } from '../../lambda/inbox/transport/data-api/transport.js';
import { createDatabase, databaseName } from '../../local/postgres.js';
import type { SqlParams } from '../../lambda/inbox/index.js';
import { dataApiTarget, inboxFixture } from '../support/inbox.js';
import type { InboxFixture } from '../support/inbox.js';

// The session against the local Data API server and a real PostgreSQL: every value crosses the real SDK.
let db: InboxFixture;
beforeAll(async () => {
  // A short statement timeout, for the StatementTimeoutException case.
  db = await inboxFixture('data_api', { statementTimeoutMs: 1_000 });
});
afterAll(async () => db.close());
beforeEach(() => {
  db.server.faults.clear();
});

/** A session whose auto-pause retries and clock the test drives. */
function session(policy: Partial<DataApiSession['policy']> = {}) {
  const slept: number[] = [];
  let retries = 0;
  const s = new DataApiSession(dataApiTarget(db.server), {
    callTimeoutMs: 2_000,
    resumeDelaysMs: [],
    sleep: async (ms) => void slept.push(ms),
    onResumeRetry: () => void retries++,
    ...policy,
  });
  return { session: s, slept, retries: () => retries };
}

/** The error a promise rejects with. */
async function failureOf(promise: Promise<unknown>): Promise<DataApiError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(DataApiError);
  return error as DataApiError;
}

describe('Data API session: parameters', () => {
  const bound: { name: string; value: SqlParams[string]; sql: string; expected: unknown }[] = [
    { name: 'a string', value: 'o-1', sql: 'SELECT :v::text AS v', expected: 'o-1' },
    { name: 'a safe integer as int8', value: 42, sql: 'SELECT pg_typeof(:v)::text AS t, :v AS v', expected: { t: 'bigint', v: 42 } },
    { name: 'a fraction as a double', value: 1.5, sql: 'SELECT pg_typeof(:v)::text AS t, :v AS v', expected: { t: 'double precision', v: 1.5 } },
    { name: 'a bigint beyond 2^53, exactly', value: 9007199254740993n, sql: 'SELECT (:v)::text AS v', expected: '9007199254740993' },
    {
      name: 'an integer beyond 2^53 as a double',
      value: 2 ** 53 + 2,
      sql: 'SELECT pg_typeof(:v)::text AS t, :v AS v',
      expected: { t: 'double precision', v: 2 ** 53 + 2 },
    },
    { name: 'true', value: true, sql: 'SELECT pg_typeof(:v)::text AS t, :v AS v', expected: { t: 'boolean', v: true } },
    { name: 'false', value: false, sql: 'SELECT :v AS v', expected: false },
    { name: 'null', value: null, sql: 'SELECT :v::text IS NULL AS v', expected: true },
    { name: 'undefined as null', value: undefined, sql: 'SELECT :v::text IS NULL AS v', expected: true },
    { name: 'bytes as bytea', value: new Uint8Array([0, 255, 7]), sql: "SELECT encode(:v, 'hex') AS v", expected: '00ff07' },
    {
      name: 'a Date as a UTC timestamp',
      value: new Date('2026-03-04T05:06:07.089Z'),
      sql: 'SELECT pg_typeof(:v)::text AS t, :v::text AS v',
      expected: { t: 'timestamp without time zone', v: '2026-03-04 05:06:07.089' },
    },
    {
      name: 'a plain object as json',
      value: { a: [1, 'x'] },
      sql: "SELECT pg_typeof(:v)::text AS t, :v::jsonb -> 'a' ->> 1 AS v",
      expected: { t: 'json', v: 'x' },
    },
    { name: 'an array as json', value: [1, 2], sql: 'SELECT json_array_length(:v) AS v', expected: 2 },
    {
      name: 'uuid()',
      value: uuid('6f1c2a4e-0000-4000-8000-000000000001'),
      sql: 'SELECT pg_typeof(:v)::text AS t, :v::text AS v',
      expected: { t: 'uuid', v: '6f1c2a4e-0000-4000-8000-000000000001' },
    },
    {
      name: 'decimal() without a float',
      value: decimal('12345678901234567890.123'),
      sql: 'SELECT pg_typeof(:v)::text AS t, :v::text AS v',
      expected: { t: 'numeric', v: '12345678901234567890.123' },
    },
    { name: 'json()', value: json('text'), sql: 'SELECT pg_typeof(:v)::text AS t, :v::text AS v', expected: { t: 'json', v: '"text"' } },
    { name: 'date()', value: date('2026-02-28'), sql: 'SELECT pg_typeof(:v)::text AS t, :v::text AS v', expected: { t: 'date', v: '2026-02-28' } },
    {
      name: 'time()',
      value: time('13:14:15'),
      sql: 'SELECT pg_typeof(:v)::text AS t, :v::text AS v',
      expected: { t: 'time without time zone', v: '13:14:15' },
    },
  ];

  it.each(bound)('binds $name', async ({ value, sql, expected }) => {
    const { rows } = await session().session.execute(sql, { v: value });
    expect(typeof expected === 'object' && expected !== null ? rows[0] : rows[0]!.v).toEqual(expected);
  });

  const refused: { name: string; params: SqlParams; message: string }[] = [
    {
      name: 'a name that is not a SQL parameter name',
      params: { 'order-id': 1 },
      message: 'parameter name "order-id" must match /^[A-Za-z0-9_]+$/; it is written as :order-id in the SQL',
    },
    { name: 'NaN', params: { n: Number.NaN }, message: 'parameter "n" is NaN; the Data API cannot bind it. Pass null or a finite number.' },
    {
      name: 'Infinity',
      params: { n: Number.POSITIVE_INFINITY },
      message: 'parameter "n" is Infinity; the Data API cannot bind it. Pass null or a finite number.',
    },
    { name: 'an invalid Date', params: { d: new Date('not a date') }, message: 'parameter "d" is an invalid Date' },
    { name: 'a function', params: { f: (() => 1) as never }, message: 'parameter "f" has type function, which the Data API cannot bind' },
  ];

  it.each(refused)('refuses $name before sending anything, naming the parameter', async ({ params, message }) => {
    db.server.stats.reset();
    // The message is the TypeError's, inside the session's DataApiError.
    await expect(session().session.execute('SELECT 1', params)).rejects.toThrow(`TypeError: ${message}`);
    expect(db.server.stats.total()).toBe(0);
  });
});

describe('Data API session: results', () => {
  it('types each column by its PostgreSQL type and names it by its label', async () => {
    const { rows, updated } = await session().session.execute(
      `SELECT 1::int2 AS small, 2::int4 AS int, 3::int8 AS big, 9007199254740991::int8 AS max_safe,
              -9007199254740991::int8 AS min_safe, 9007199254740992::int8 AS above, -9007199254740992::int8 AS below,
              timestamptz '2026-01-02 03:04:05.678+00' AS at, timestamp '2026-01-02 03:04:05' AS local_at,
              '{"a":1}'::json AS j, '{"b":[2]}'::jsonb AS jb, 'x'::text AS t, 12.5::numeric AS n, 0.25::float8 AS f,
              true AS yes, NULL::text AS nothing, '\\x0102'::bytea AS bytes, ARRAY[1, 2]::int4[] AS ints, ARRAY['a', NULL]::text[] AS texts,
              ARRAY[0.5]::float8[] AS doubles, ARRAY[true]::bool[] AS bools, '{}'::int4[] AS empty`,
    );
    expect(updated).toBe(0);
    expect(rows).toEqual([
      {
        small: 1,
        int: 2,
        big: 3,
        max_safe: Number.MAX_SAFE_INTEGER,
        min_safe: Number.MIN_SAFE_INTEGER,
        above: 9007199254740992n,
        below: -9007199254740992n,
        at: new Date('2026-01-02T03:04:05.678Z'),
        local_at: new Date('2026-01-02T03:04:05Z'),
        j: { a: 1 },
        jb: { b: [2] },
        t: 'x',
        n: '12.5',
        f: 0.25,
        yes: true,
        nothing: null,
        bytes: new Uint8Array([1, 2]),
        // longReturnType STRING applies to arrays too: their longs arrive as strings.
        ints: ['1', '2'],
        texts: ['a', null],
        doubles: [0.5],
        bools: [true],
        empty: [],
      },
    ]);
  });

  it('names a column by its label, not by the table column it reads', async () => {
    const { session: s } = session();
    // A real table: each autocommit call starts from a clean session, as on AWS, so a temp table would be gone.
    await s.execute('CREATE TABLE IF NOT EXISTS public.labelled (id int)');
    await s.execute('TRUNCATE public.labelled');
    await s.execute('INSERT INTO public.labelled VALUES (1)');
    expect((await s.execute('SELECT id AS order_number, id FROM public.labelled')).rows).toEqual([{ order_number: 1, id: 1 }]);
  });

  it('counts the rows a statement changed', async () => {
    const { session: s } = session();
    await s.execute('CREATE TABLE IF NOT EXISTS public.counted (n int)');
    expect((await s.execute('INSERT INTO public.counted SELECT generate_series(1, 3)')).updated).toBe(3);
  });
});

describe('Data API session: a transport already open', () => {
  it("is named as dataApi() is, 'data-api', for the messages that name a transport", () => {
    expect(session().session.name).toBe('data-api');
  });
});

describe('Data API session: transactions', () => {
  beforeEach(async () => {
    await db.query('CREATE TABLE IF NOT EXISTS public.tx_probe (id text PRIMARY KEY)');
    await db.query('TRUNCATE public.tx_probe');
  });

  it('commits what its statements did', async () => {
    const tx = await session().session.transaction();
    await tx.execute("INSERT INTO public.tx_probe VALUES ('committed')");
    await tx.commit();
    expect(await db.query('SELECT id FROM public.tx_probe')).toEqual([{ id: 'committed' }]);
  });

  it('rolls back once: a second rollback sends nothing', async () => {
    const tx = await session().session.transaction();
    await tx.execute("INSERT INTO public.tx_probe VALUES ('rolled-back')");
    db.server.stats.reset();
    await tx.rollback();
    await tx.rollback();
    expect(db.server.stats.total()).toBe(1);
    expect(await db.query('SELECT id FROM public.tx_probe')).toEqual([]);
  });

  it('refuses a statement sent after commit began, telling the caller to await it', async () => {
    const tx = await session().session.transaction();
    const committing = tx.commit();
    await expect(tx.execute('SELECT 1')).rejects.toThrow('the transaction is committing or rolling back; await every tx.execute inside apply');
    await committing;
  });

  it('refuses a statement sent after rollback began', async () => {
    const tx = await session().session.transaction();
    const rolling = tx.rollback();
    await expect(tx.execute('SELECT 1')).rejects.toThrow('the transaction is committing or rolling back; await every tx.execute inside apply');
    await rolling;
  });

  it('throws a rollback that failed for another reason than a gone transaction', async () => {
    const { session: s } = session();
    const id = await s.begin();
    db.server.faults.serverError({ count: 1, status: 500, operation: 'RollbackTransaction' });
    expect(await failureOf(s.rollback(id))).toMatchObject({ operation: 'RollbackTransaction', failure: 'unavailable', ambiguous: true });
    await s.rollback(id);
  });

  it('reports a statement sent with an unknown transaction id as transaction-not-found, not ambiguous', async () => {
    const error = await failureOf(session().session.execute('SELECT 1', {}, 'no-such-transaction'));
    expect(error).toMatchObject({ operation: 'ExecuteStatement', failure: 'transaction-not-found', ambiguous: false });
  });

  it('rolls back and throws the first failed statement at commit, even when the caller caught it', async () => {
    const tx = await session().session.transaction();
    await tx.execute("INSERT INTO public.tx_probe VALUES ('lost')");
    const first = await failureOf(tx.execute('SELECT no_such_column FROM public.tx_probe'));
    await tx.execute('SELECT 1').catch(() => {});
    expect(await failureOf(tx.commit())).toBe(first);
    expect(first).toMatchObject({ operation: 'ExecuteStatement', failure: 'statement', ambiguous: false });
    expect(await db.query('SELECT id FROM public.tx_probe')).toEqual([]);
  });

  it('treats rolling back a transaction that is gone as rolled back', async () => {
    const { session: s } = session();
    const id = await s.begin();
    await s.rollback(id);
    await expect(s.rollback(id)).resolves.toBeUndefined();
  });

  it('reports a commit of an unknown transaction as failed, and ambiguous, as every commit failure is', async () => {
    const error = await failureOf(session().session.commit('no-such-transaction'));
    expect(error).toMatchObject({ operation: 'CommitTransaction', failure: 'transaction-not-found', ambiguous: true });
  });
});

describe('Data API session: failures', () => {
  const serverErrors = [
    { status: 500, failure: 'unavailable', ambiguous: true },
    { status: 503, failure: 'unavailable', ambiguous: true },
    { status: 504, failure: 'unavailable', ambiguous: true },
    { status: 502, failure: 'network', ambiguous: true },
  ] as const;

  it.each(serverErrors)('classifies an HTTP $status as $failure, outcome unknown, and does not retry it', async ({ status, failure, ambiguous }) => {
    const { session: s, retries } = session({ resumeDelaysMs: [10, 10] });
    db.server.faults.serverError({ count: 1, status, operation: 'ExecuteStatement' });
    const error = await failureOf(s.execute('SELECT 1'));
    expect(error).toMatchObject({ operation: 'ExecuteStatement', failure, ambiguous });
    expect(retries()).toBe(0);
  });

  it('classifies a statement PostgreSQL refuses as a statement failure that did not take effect', async () => {
    const error = await failureOf(session().session.execute('SELEC 1'));
    expect(error).toMatchObject({ operation: 'ExecuteStatement', failure: 'statement', ambiguous: false });
    expect(error.message).toBe(`ExecuteStatement failed (statement): DatabaseErrorException: ${(error.cause as Error).message}`);
    expect(error.cause).toMatchObject({ name: 'DatabaseErrorException', $metadata: { httpStatusCode: 400 } });
  });

  const refusals = [
    {
      name: 'a type the Data API cannot return (UnsupportedResultException)',
      sql: "SELECT '1'::money AS m",
      failure: 'statement',
      type: 'UnsupportedResultException',
    },
    {
      name: 'a response over the size limit (BadRequestException)',
      sql: "SELECT repeat('x', 1100000) AS big",
      failure: 'statement',
      type: 'BadRequestException',
    },
    { name: 'two statements in one call (ValidationException, HTTP 400)', sql: 'SELECT 1; SELECT 2', failure: 'rejected', type: 'ValidationException' },
  ] as const;

  it.each(refusals)('classifies $name as $failure, not ambiguous', async ({ sql, failure, type }) => {
    const error = await failureOf(session().session.execute(sql));
    expect(error).toMatchObject({ operation: 'ExecuteStatement', failure, ambiguous: false });
    expect(error.message).toContain(`(${failure}): ${type}: `);
  });

  it('classifies a statement the server timed out as a timeout whose outcome is unknown', async () => {
    const error = await failureOf(session({ callTimeoutMs: 5_000 }).session.execute('SELECT pg_sleep(2)'));
    expect(error).toMatchObject({ operation: 'ExecuteStatement', failure: 'timeout', ambiguous: true });
    expect(error.message).toContain('StatementTimeoutException');
  });

  it('aborts a call after callTimeoutMs and reports it as a timeout whose outcome is unknown', async () => {
    db.server.faults.latency({ ms: 400, operation: 'ExecuteStatement' });
    const error = await failureOf(session({ callTimeoutMs: 100 }).session.execute('SELECT 1'));
    expect(error).toMatchObject({ operation: 'ExecuteStatement', failure: 'timeout', ambiguous: true });
  });

  it('retries auto-pause with the given delays, counting each retry, until the instance resumes', async () => {
    // The instance resumes after 1 s, longer than any one call takes even on a busy machine, so the session
    // sleeps at least twice before it does; the delays (2.6 s in all) outlast it.
    const delays = [100, 110, 120, 130, 140, 150, 160, 170, 180, 190, 200, 210, 220, 230, 240];
    const { session: s, slept, retries } = session({ resumeDelaysMs: delays });
    db.server.faults.autoPause({ resumeAfterMs: 1000 });
    const sleep = async (ms: number) => {
      slept.push(ms);
      await new Promise((resolve) => setTimeout(resolve, ms));
    };
    const timed = new DataApiSession(dataApiTarget(db.server), { ...s.policy, sleep });
    const { rows } = await timed.execute('SELECT 7 AS v');
    expect(rows).toEqual([{ v: 7 }]);
    expect(slept).toEqual(delays.slice(0, slept.length));
    expect(slept.length).toBeGreaterThanOrEqual(2);
    expect(retries()).toBe(slept.length);
  });

  it('waits for real between auto-pause retries when no sleep is given', async () => {
    const s = new DataApiSession(dataApiTarget(db.server), { callTimeoutMs: 2_000, resumeDelaysMs: [300] });
    db.server.faults.autoPause({ resumeAfterMs: 150 });
    expect((await s.execute('SELECT 1 AS v')).rows).toEqual([{ v: 1 }]);
  });

  it('gives up on auto-pause once the delays are spent, as resuming and not ambiguous', async () => {
    const { session: s, slept, retries } = session({ resumeDelaysMs: [5, 6] });
    db.server.faults.autoPause({ resumeAfterMs: 60_000 });
    const error = await failureOf(s.execute('SELECT 1'));
    expect(error).toMatchObject({ operation: 'ExecuteStatement', failure: 'resuming', ambiguous: false });
    expect(slept).toEqual([5, 6]);
    expect(retries()).toBe(2);
  });

  it('does not make a resume retry that could not finish before the deadline', async () => {
    const { session: s, slept } = session({ resumeDelaysMs: [50, 500], timeLeftMs: () => 500 });
    db.server.faults.autoPause({ resumeAfterMs: 60_000 });
    expect((await failureOf(s.execute('SELECT 1'))).failure).toBe('resuming');
    expect(slept).toEqual([50]);
  });

  it('retries auto-pause for BeginTransaction too', async () => {
    const { session: s, slept } = session({ resumeDelaysMs: [5] });
    db.server.faults.autoPause({ resumeAfterMs: 60_000 });
    expect(await failureOf(s.begin())).toMatchObject({ operation: 'BeginTransaction', failure: 'resuming' });
    expect(slept).toEqual([5]);
  });

  it('retries auto-pause for BatchExecuteStatement too, and names it when it gives up', async () => {
    const { session: s, slept } = session({ resumeDelaysMs: [5] });
    db.server.faults.autoPause({ resumeAfterMs: 60_000 });
    const error = await failureOf(s.executeBatch('SELECT :v::int', [{ v: 1 }, { v: 2 }]));
    expect(error).toMatchObject({ operation: 'BatchExecuteStatement', failure: 'resuming', ambiguous: false });
    expect(error.message.startsWith('BatchExecuteStatement ')).toBe(true);
    expect(slept).toEqual([5]);
  });
});

/**
 * An endpoint that is not the Data API: a load balancer or proxy between the client and AWS answers with
 * whatever `answer` gives. The client is the real SDK; only what comes back over HTTP is chosen.
 */
async function foreignEndpoint(answer: (path: string) => { status: number; headers?: Record<string, string>; body?: string }) {
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      const { status, headers = {}, body = '' } = answer(request.url ?? '');
      response.writeHead(status, { 'content-type': 'application/json', ...headers }).end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const client = new RDSDataClient({
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
  const s = new DataApiSession(dataApiTarget(db.server, client), { callTimeoutMs: 2_000, resumeDelaysMs: [] });
  return {
    session: s,
    close: async () => {
      client.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe('Data API failures: what a reset is, and an error classified once', () => {
  it('calls ECONNRESET and EPIPE a reset connection, and nothing else', () => {
    expect(['ECONNRESET', 'EPIPE', 'ETIMEDOUT', undefined].map((code) => isConnectionReset(Object.assign(new Error('x'), { code })))).toEqual([
      true,
      true,
      false,
      false,
    ]);
    expect(isConnectionReset(null)).toBe(false);
  });

  it('returns an error it classified before as it is, not wrapped again', () => {
    const first = classify('ExecuteStatement', Object.assign(new Error('gone'), { name: 'TransactionNotFoundException' }));
    expect(classify('CommitTransaction', first)).toBe(first);
  });
});

describe('Data API session: answers from something that is not the Data API', () => {
  const answers = [
    { name: 'a 500 with no error type (a proxy failing after forwarding)', status: 500, failure: 'network', ambiguous: true },
    { name: 'a 503 with no error type', status: 503, failure: 'network', ambiguous: true },
    { name: 'a 404 with no error type (a wrong path prefix): refused before anything ran', status: 404, failure: 'rejected', ambiguous: false },
    { name: 'a 400 with no error type', status: 400, failure: 'rejected', ambiguous: false },
    { name: 'a 302 (a redirect the SDK does not follow): not a refusal, so maybe run', status: 302, failure: 'network', ambiguous: true },
    {
      name: 'a NotFoundException (a gone transaction, as the Data API words it in some regions)',
      status: 404,
      type: 'NotFoundException',
      failure: 'transaction-not-found',
      ambiguous: false,
    },
  ] as const;

  it.each(answers)('classifies $name as $failure, ambiguous: $ambiguous', async ({ status, failure, ambiguous, ...rest }) => {
    const type = 'type' in rest ? rest.type : undefined;
    const endpoint = await foreignEndpoint(() => ({
      status,
      ...(type && { headers: { 'x-amzn-errortype': type }, body: JSON.stringify({ message: 'gone' }) }),
    }));
    try {
      const error = await failureOf(endpoint.session.execute('SELECT 1', {}, 'tx-1'));
      expect(error).toMatchObject({ operation: 'ExecuteStatement', failure, ambiguous });
    } finally {
      await endpoint.close();
    }
  });

  it('refuses a BeginTransaction answer without a transactionId, naming it, before any statement is sent', async () => {
    const endpoint = await foreignEndpoint(() => ({ status: 200, body: '{}' }));
    try {
      const error = await failureOf(endpoint.session.begin());
      expect(error).toMatchObject({ operation: 'BeginTransaction', failure: 'rejected', ambiguous: false });
      expect(error.message).toContain('the response held no transactionId');
    } finally {
      await endpoint.close();
    }
  });

  const commitAnswers = [
    { name: 'another status', body: { transactionStatus: 'Rollback Complete' }, said: 'Rollback Complete' },
    { name: 'no status at all', body: {}, said: '(no status)' },
  ];

  it.each(commitAnswers)('treats a commit that answers 200 with $name as failed and ambiguous', async ({ body, said }) => {
    const endpoint = await foreignEndpoint(() => ({ status: 200, body: JSON.stringify(body) }));
    try {
      const error = await failureOf(endpoint.session.commit('tx-1'));
      expect(error).toMatchObject({ operation: 'CommitTransaction', failure: 'rejected', ambiguous: true });
      expect(error.message).toBe(`CommitTransaction failed (rejected, outcome unknown): the commit answered "${said}", not "Transaction Committed"`);
    } finally {
      await endpoint.close();
    }
  });
});

describe('Data API target: which database the calls name', () => {
  let other: string;
  beforeAll(async () => {
    // A second database on the same server: the fixture's own is the server's default, which a request that
    // names no database reaches too, so only another name shows that the name travels.
    other = databaseName(await createDatabase(db.url, `${databaseName(db.url)}_named`.slice(0, 63)));
  });

  /** The database a session on `resolveTarget(options, env)` runs its statements in. */
  async function reached(options: { database?: string }, env: NodeJS.ProcessEnv = {}): Promise<unknown> {
    const target = resolveTarget(
      { resourceArn: db.server.resourceArn, secretArn: db.server.secretArn, ...options },
      { INBOX_DATA_API_ENDPOINT: db.server.endpoint, AWS_REGION: 'us-east-1', ...env },
    );
    try {
      return (await new DataApiSession(target, { callTimeoutMs: 10_000, resumeDelaysMs: [] }).execute('SELECT current_database() AS name')).rows[0]?.name;
    } finally {
      target.client.destroy();
    }
  }

  it('names the database the options give', async () => {
    expect(await reached({ database: other })).toBe(other);
  });

  it('names INBOX_DATABASE when the options give none', async () => {
    expect(await reached({}, { INBOX_DATABASE: other })).toBe(other);
  });

  it('prefers the options to INBOX_DATABASE', async () => {
    expect(await reached({ database: other }, { INBOX_DATABASE: db.server.database })).toBe(other);
  });

  it("names none when neither does: the server's default", async () => {
    expect(await reached({})).toBe(db.server.database);
  });
});
