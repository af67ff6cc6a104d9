import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash, createHmac } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InboxConfigError } from '../../../lambda/inbox/index.js';
import { migrate } from '../../../lambda/inbox/operations.js';
import { inbox } from '../../../lambda/inbox/index.js';
import { postgresFromEnvironment } from '../../../lambda/inbox/transport/postgres/index.js';
import { readPostgresEnvironment } from '../../../lambda/inbox/transport/postgres/from-environment.js';
import { PostgresSession } from '../../../lambda/inbox/transport/postgres/postgres-session.js';
import { freshDatabase } from '../../support/database.js';
import { lambdaContext, recordingLogger, recordingMetrics, sqsRecord } from '../../support/inbox.js';
import { selfSignedCertificate, startTlsFront } from '../../support/tls-front.js';
import type { TlsFront } from '../../support/tls-front.js';

/** SHA-256 (or its HMAC with a key) as SigV4 takes it. */
class Sha256 {
  readonly #hash;
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    this.#hash = secret === undefined ? createHash('sha256') : createHmac('sha256', bytes(secret));
  }
  update(data: string | ArrayBuffer | ArrayBufferView) {
    this.#hash.update(bytes(data));
  }
  async digest() {
    return new Uint8Array(this.#hash.digest());
  }
}

const bytes = (data: string | ArrayBuffer | ArrayBufferView) =>
  typeof data === 'string' ? data : ArrayBuffer.isView(data) ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength) : new Uint8Array(data);

const FAKE_CREDENTIALS = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
const SECRET_ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:inbox-consumer-AbCdEf';

let url: URL;
let front: TlsFront;
let certificate: { key: string; cert: string };
let secretsServer: ReturnType<typeof createServer>;
const secretReads: string[] = [];
const saved = { ...process.env };

beforeAll(async () => {
  url = new URL(await freshDatabase('pg_env'));
  const admin = new pg.Pool({ connectionString: url.toString(), max: 1 });
  await migrate(new PostgresSession({ pool: admin }, { callTimeoutMs: 10_000 }));
  await admin.end();
  certificate = selfSignedCertificate();
  front = await startTlsFront(Number(url.port), certificate);
  // Secrets Manager's GetSecretValue (AWS JSON 1.1), holding the test server's own credentials.
  secretsServer = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => (body += chunk));
    request.on('end', () => {
      const { SecretId } = JSON.parse(body) as { SecretId: string };
      secretReads.push(`${request.headers['x-amz-target']} ${SecretId}`);
      response.setHeader('content-type', 'application/x-amz-json-1.1');
      const username = decodeURIComponent(url.username);
      const password = decodeURIComponent(url.password);
      response.end(JSON.stringify({ ARN: SecretId, Name: 'inbox-consumer', SecretString: JSON.stringify({ username, password }) }));
    });
  });
  await new Promise<void>((resolve) => secretsServer.listen(0, '127.0.0.1', resolve));
  Object.assign(process.env, {
    AWS_ACCESS_KEY_ID: FAKE_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: FAKE_CREDENTIALS.secretAccessKey,
    AWS_ENDPOINT_URL_SECRETS_MANAGER: `http://127.0.0.1:${(secretsServer.address() as AddressInfo).port}`,
    AWS_REGION: 'eu-west-1',
  });
});
afterAll(async () => {
  process.env = saved;
  await front?.close();
  await new Promise((resolve) => secretsServer?.close(resolve));
});

const base = () => ({ INBOX_PG_HOST: 'localhost', INBOX_PG_PORT: String(front.port), INBOX_PG_DATABASE: url.pathname.slice(1) });

describe('postgresFromEnvironment: the consumer on the wire, configured by its environment', () => {
  it('names the missing or wrong variable and its fix', () => {
    const refused = (env: Record<string, string>) => {
      try {
        readPostgresEnvironment({ AWS_REGION: 'eu-west-1', ...env });
      } catch (error) {
        expect(error).toBeInstanceOf(InboxConfigError);
        return (error as InboxConfigError).message;
      }
      throw new Error(`accepted ${JSON.stringify(env)}`);
    };
    const host = { INBOX_PG_HOST: 'proxy.example', INBOX_PG_DATABASE: 'inbox' };
    expect(refused({})).toMatch(/"INBOX_PG_HOST": is not set: set it to/);
    expect(refused({ INBOX_PG_HOST: 'proxy.example' })).toMatch(/"INBOX_PG_DATABASE": is not set/);
    expect(refused({ ...host, INBOX_PG_PORT: 'five' })).toMatch(/"INBOX_PG_PORT": is "five": set a port number from 1 to 65535/);
    expect(refused(host)).toMatch(/"INBOX_PG_SECRET_ARN": is not set, and INBOX_PG_IAM_AUTH is not true: set INBOX_PG_IAM_AUTH=true/);
    expect(refused({ ...host, INBOX_PG_IAM_AUTH: 'yes' })).toMatch(/"INBOX_PG_IAM_AUTH": is "yes": set it to true/);
    expect(refused({ ...host, INBOX_PG_IAM_AUTH: 'true' })).toMatch(/"INBOX_PG_USER": is not set: with INBOX_PG_IAM_AUTH=true/);
    expect(refused({ ...host, INBOX_PG_IAM_AUTH: 'true', INBOX_PG_USER: 'r', INBOX_PG_SECRET_ARN: SECRET_ARN })).toMatch(/a connection signs in one way/);
    expect(() => readPostgresEnvironment({ ...host, INBOX_PG_IAM_AUTH: 'true', INBOX_PG_USER: 'r' })).toThrow(/"AWS_REGION": is not set/);
    expect(readPostgresEnvironment({ ...host, INBOX_PG_IAM_AUTH: 'TRUE', INBOX_PG_USER: 'inbox_consumer_orders', AWS_REGION: 'eu-west-1' })).toEqual({
      host: 'proxy.example',
      port: 5432,
      database: 'inbox',
      user: 'inbox_consumer_orders',
      auth: { kind: 'iam', region: 'eu-west-1' },
    });
  });

  it('signs in with the secret, over TLS, and claims a record', async () => {
    const target = postgresFromEnvironment({ env: { ...base(), INBOX_PG_SECRET_ARN: SECRET_ARN }, ssl: { ca: certificate.cert } });
    const handler = inbox({ consumer: 'env-worker', database: target, logger: recordingLogger(), metrics: recordingMetrics(), apply: async () => {} });
    const record = sqsRecord({ body: { n: 1 } });
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(secretReads).toContain(`secretsmanager.GetSecretValue ${SECRET_ARN}`);
    // The password went inside TLS to the front, which relayed it to the server.
    expect(front.passwords).toContain(decodeURIComponent(url.password));
    const check = new pg.Client({ connectionString: url.toString() });
    await check.connect();
    const claimed = await check.query('SELECT consumer_name FROM inbox.consumed_message WHERE message_id = $1', [record.messageId]);
    await check.end();
    expect(claimed.rows).toEqual([{ consumer_name: 'env-worker' }]);
    await (target.pool as unknown as { end: () => Promise<void> }).end();
  });

  it('reads the secret again for new connections after five minutes, so a rotated password is picked up', async () => {
    let clock = 1_000_000;
    const target = postgresFromEnvironment({ env: { ...base(), INBOX_PG_SECRET_ARN: SECRET_ARN }, ssl: { ca: certificate.cert }, now: () => clock });
    const reads = () => secretReads.filter((read) => read.endsWith(SECRET_ARN)).length;
    const before = reads();
    const newConnection = async () => (await target.pool.connect()).release(true);
    await newConnection();
    await newConnection();
    expect(reads() - before).toBe(1);
    clock += 5 * 60_000 + 1;
    await newConnection();
    expect(reads() - before).toBe(2);
    await newConnection();
    expect(reads() - before).toBe(2);
    await (target.pool as unknown as { end: () => Promise<void> }).end();
  });

  it('refuses a server that offers no TLS', async () => {
    const target = postgresFromEnvironment({ env: { ...base(), INBOX_PG_PORT: url.port, INBOX_PG_SECRET_ARN: SECRET_ARN } });
    await expect(target.pool.connect()).rejects.toThrow(/does not support SSL/);
  });

  it('sends a fresh RDS IAM token as the password of each new connection, signed for the host, port, user and region', async () => {
    const env = { ...base(), INBOX_PG_IAM_AUTH: 'true', INBOX_PG_USER: 'inbox_consumer_orders' };
    const target = postgresFromEnvironment({ env: { ...env, AWS_REGION: 'eu-west-1' }, ssl: { ca: certificate.cert } });
    const before = front.passwords.length;
    // The server knows no such token: the sign-in fails there, after the token went over TLS.
    await expect(target.pool.connect()).rejects.toThrow(/password authentication failed for user "inbox_consumer_orders"/);
    await expect(target.pool.connect()).rejects.toThrow(/password authentication failed/);
    const tokens = front.passwords.slice(before);
    expect(tokens).toHaveLength(2);
    const token = new URL(`https://${tokens[0]}`);
    expect(token.host).toBe(`localhost:${front.port}`);
    expect(token.searchParams.get('Action')).toBe('connect');
    expect(token.searchParams.get('DBUser')).toBe('inbox_consumer_orders');
    expect(token.searchParams.get('X-Amz-Credential')).toMatch(/^AKIDEXAMPLE\/\d{8}\/eu-west-1\/rds-db\/aws4_request$/);
    // The signature is what SigV4 gives for the same request, time and credentials: the token is genuine.
    const signedAt = token.searchParams.get('X-Amz-Date')!;
    const signer = new SignatureV4({ service: 'rds-db', region: 'eu-west-1', credentials: FAKE_CREDENTIALS, sha256: Sha256 });
    const presigned = await signer.presign(
      {
        method: 'GET',
        protocol: 'https:',
        hostname: 'localhost',
        port: front.port,
        path: '/',
        headers: { host: `localhost:${front.port}` },
        query: { Action: 'connect', DBUser: 'inbox_consumer_orders' },
      },
      { expiresIn: 900, signingDate: new Date(signedAt.replace(/^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/, '$1-$2-$3T$4:$5:$6Z')) },
    );
    expect(token.searchParams.get('X-Amz-Signature')).toBe(presigned.query?.['X-Amz-Signature']);
  });
});
