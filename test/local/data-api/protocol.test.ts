import {
  BadRequestException,
  BeginTransactionCommand,
  CommitTransactionCommand,
  DatabaseErrorException,
  ExecuteSqlCommand,
  ExecuteStatementCommand,
  NotFoundException,
  RDSDataServiceException,
  SecretsErrorException,
} from '@aws-sdk/client-rds-data';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rejectionOf, startHarness, type Harness } from './harness.js';

describe('local Data API: wire protocol', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('protocol');
  });
  afterAll(async () => h?.close());

  it('serves an endpoint with a path prefix, appending the operation path to it', async () => {
    const prefixed = h.newClient({ endpoint: `${h.server.endpoint}/some/prefix` });
    const result = await h.execute('SELECT 41 + 1 AS answer', undefined, undefined, prefixed);
    expect(result.records).toEqual([[{ longValue: 42 }]]);
    expect(result.$metadata.requestId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('answers a SQL error with DatabaseErrorException 400 in the v2 format, with Position and SQLState', async () => {
    const error = await rejectionOf(h.execute('SELECT nope FROM generate_series(1, 2)'));
    expect(error).toBeInstanceOf(DatabaseErrorException);
    expect(error.$metadata.httpStatusCode).toBe(400);
    expect(error.message).toBe('ERROR: column "nope" does not exist; Position: 8; SQLState: 42703');
  });

  it('includes Hint when PostgreSQL gives one, and leaves Detail out', async () => {
    await h.execute('CREATE TABLE hinted (id text PRIMARY KEY)');
    await h.execute("INSERT INTO hinted VALUES ('a')");
    const duplicate = await rejectionOf(h.execute("INSERT INTO hinted VALUES ('a')"));
    expect(duplicate.message).toBe('ERROR: duplicate key value violates unique constraint "hinted_pkey"; SQLState: 23505');
    const hinted = await rejectionOf(h.execute('SELECT 1 WHERE 1 = :u', [{ name: 'u', value: { stringValue: 'a' } }]));
    expect(hinted.message).toMatch(/^ERROR: operator does not exist: integer = character varying; Hint: .+; Position: 18; SQLState: 42883$/);
  });

  it('reports the Position in the caller SQL, not in the rewritten $n text', async () => {
    const error = await rejectionOf(h.execute('SELECT :a_long_parameter_name, nope', [{ name: 'a_long_parameter_name', value: { longValue: 1 } }]));
    expect(error.message).toContain('Position: 32;');
  });

  it('refuses multi-statement SQL with ValidationException, before running any of it', async () => {
    const error = await rejectionOf(h.execute('CREATE TABLE multi_a (id int); CREATE TABLE multi_b (id int)'));
    expect(error).toBeInstanceOf(RDSDataServiceException);
    expect(error.name).toBe('ValidationException');
    expect(error.message).toBe("Multistatements aren't supported.");
    expect(error.$metadata.httpStatusCode).toBe(400);
    const { rows } = await h.direct.query("SELECT to_regclass('multi_a') AS t");
    expect(rows[0].t).toBeNull();
  });

  it('accepts one statement with a trailing semicolon and comments after it', async () => {
    const result = await h.execute('SELECT 1 AS one; -- done\n /* really */  ');
    expect(result.records).toEqual([[{ longValue: 1 }]]);
  });

  it('refuses the schema member with ValidationException', async () => {
    const error = await rejectionOf(h.execute('SELECT 1', undefined, { schema: 'public' }));
    expect(error.name).toBe('ValidationException');
    expect(error.message).toBe("The schema parameter isn't supported");
    const begin = await rejectionOf(
      h.client.send(new BeginTransactionCommand({ resourceArn: h.server.resourceArn, secretArn: h.server.secretArn, schema: 'public' })),
    );
    expect(begin.name).toBe('ValidationException');
  });

  it('refuses a request without a required member with BadRequestException naming it (the SDK sends it anyway)', async () => {
    const noSql = await rejectionOf(h.client.send(new ExecuteStatementCommand({ resourceArn: h.server.resourceArn, secretArn: h.server.secretArn } as never)));
    expect(noSql).toBeInstanceOf(BadRequestException);
    expect(noSql.$metadata.httpStatusCode).toBe(400);
    expect(noSql.message).toContain('"sql"');
    const noArn = await rejectionOf(h.client.send(new ExecuteStatementCommand({ secretArn: h.server.secretArn, sql: 'SELECT 1' } as never)));
    expect(noArn.message).toContain('"resourceArn"');
    const noId = await rejectionOf(h.client.send(new CommitTransactionCommand({ resourceArn: h.server.resourceArn, secretArn: h.server.secretArn } as never)));
    expect(noId).toBeInstanceOf(BadRequestException);
    expect(noId.message).toContain('"transactionId"');
  });

  it('accepts only its own cluster and secret ARNs', async () => {
    const arns = { resourceArn: h.server.resourceArn, secretArn: h.server.secretArn };
    const wrongCluster = await rejectionOf(
      h.client.send(new ExecuteStatementCommand({ ...arns, resourceArn: 'arn:aws:rds:us-east-1:1:cluster:other', sql: 'SELECT 1' })),
    );
    expect(wrongCluster).toBeInstanceOf(BadRequestException);
    expect(wrongCluster.message).toContain(h.server.resourceArn);
    const wrongSecret = await rejectionOf(
      h.client.send(new ExecuteStatementCommand({ ...arns, secretArn: 'arn:aws:secretsmanager:us-east-1:1:secret:other', sql: 'SELECT 1' })),
    );
    expect(wrongSecret).toBeInstanceOf(SecretsErrorException);
    expect(wrongSecret.$metadata.httpStatusCode).toBe(400);
    const commit = await rejectionOf(
      h.client.send(new CommitTransactionCommand({ ...arns, resourceArn: 'arn:aws:rds:us-east-1:1:cluster:other', transactionId: 'x' })),
    );
    expect(commit).toBeInstanceOf(NotFoundException);
    expect(commit.$metadata.httpStatusCode).toBe(404);
  });

  it('refuses ExecuteSql as Aurora Serverless v2 does', async () => {
    const error = await rejectionOf(
      h.client.send(new ExecuteSqlCommand({ dbClusterOrInstanceArn: h.server.resourceArn, awsSecretStoreArn: h.server.secretArn, sqlStatements: 'SELECT 1' })),
    );
    expect(error).toBeInstanceOf(BadRequestException);
    expect(error.message).toContain("ExecuteSql operation isn't supported");
    expect(h.server.stats.calls.ExecuteSql).toBeGreaterThan(0);
  });

  it('answers an unknown path with a JSON error the SDK can parse, and a request over 4 MiB with BadRequestException', async () => {
    const response = await fetch(`${h.server.endpoint}/Nope`, { method: 'POST', body: '{}' });
    expect(response.status).toBe(404);
    expect(response.headers.get('x-amzn-errortype')).toBe('UnknownOperationException:http://internal.amazon.com/coral/com.amazon.rdsdataservice/');
    expect(await response.json()).toHaveProperty('message');
    const big = await rejectionOf(h.execute('SELECT :p', [{ name: 'p', value: { stringValue: 'x'.repeat(4 * 1024 * 1024) } }]));
    expect(big).toBeInstanceOf(BadRequestException);
    expect(big.message).toContain('4 MiB');
  });

  // The last path segment names the operation; a name the route table inherits from Object.prototype is none.
  it.each(['constructor', 'toString', '__proto__', 'hasOwnProperty'])('answers POST /%s with 404 UnknownOperationException, counting no call', async (name) => {
    h.server.stats.reset();
    const response = await fetch(`${h.server.endpoint}/${name}`, { method: 'POST', body: '{}' });
    expect(response.status).toBe(404);
    expect(response.headers.get('x-amzn-errortype')).toBe('UnknownOperationException:http://internal.amazon.com/coral/com.amazon.rdsdataservice/');
    expect(((await response.json()) as { message: string }).message).toBe(
      `No Data API operation at POST /${name}. Operations are POST /Execute, /BatchExecute, /BeginTransaction, /CommitTransaction and /RollbackTransaction.`,
    );
    expect(h.server.stats.total()).toBe(0);
  });

  it('sends the error type header in the Coral form and a JSON message body', async () => {
    const response = await fetch(`${h.server.endpoint}/Execute`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ resourceArn: h.server.resourceArn, secretArn: h.server.secretArn, sql: 'SELEC 1' }),
    });
    expect(response.status).toBe(400);
    expect(response.headers.get('x-amzn-errortype')).toBe('DatabaseErrorException:http://internal.amazon.com/coral/com.amazon.rdsdataservice/');
    expect(response.headers.get('x-amzn-requestid')).toBeTruthy();
    expect(await response.json()).toEqual({ message: 'ERROR: syntax error at or near "SELEC"; Position: 1; SQLState: 42601' });
  });

  it('refuses a body that is not JSON with BadRequestException', async () => {
    const response = await fetch(`${h.server.endpoint}/Execute`, { method: 'POST', body: '{"sql": ' });
    expect(response.status).toBe(400);
    expect(response.headers.get('x-amzn-errortype')).toMatch(/^BadRequestException:/);
  });
});
