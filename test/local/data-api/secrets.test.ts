import {
  BadRequestException,
  BeginTransactionCommand,
  CommitTransactionCommand,
  DatabaseErrorException,
  SecretsErrorException,
} from '@aws-sdk/client-rds-data';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDataApi } from '../../../local/data-api/server.js';
import { rejectionOf, startHarness, type Harness } from './harness.js';
import { uniqueSuffix } from '../../support/seed.js';

const LIMITED = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:limited-reader';

describe('local Data API: secrets', () => {
  const role = `limited_${uniqueSuffix()}`;
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('secrets', { secrets: { [LIMITED]: { username: role, password: 'limited-password' } } });
    await h.direct.query(`CREATE ROLE ${role} LOGIN PASSWORD 'limited-password'`);
    await h.execute('CREATE TABLE guarded (id int PRIMARY KEY)');
    await h.execute('INSERT INTO guarded VALUES (1)');
    await h.direct.query(`GRANT SELECT, INSERT ON guarded TO ${role}`);
  });
  afterAll(async () => {
    if (!h) return;
    await h.server.close();
    await h.direct.query(`DROP OWNED BY ${role}`);
    await h.direct.query(`DROP ROLE ${role}`);
    await h.close();
  });
  const asLimited = { secretArn: LIMITED };
  const begin = async (secretArn: string) =>
    (await h.client.send(new BeginTransactionCommand({ resourceArn: h.server.resourceArn, secretArn }))).transactionId as string;

  it('runs a call naming a listed secret as that user, and one naming the default secret as the server URL user', async () => {
    const urlUser = decodeURIComponent(new URL(h.url).username);
    expect((await h.execute('SELECT current_user')).records).toEqual([[{ stringValue: urlUser }]]);
    // The default user's pool to this database is open now; the limited call must not borrow from it.
    expect((await h.execute('SELECT current_user', undefined, asLimited)).records).toEqual([[{ stringValue: role }]]);
    expect((await h.execute('SELECT current_user')).records).toEqual([[{ stringValue: urlUser }]]);
  });

  it('refuses, through a limited role secret, a DROP its grants do not allow, and lets it do what they allow', async () => {
    expect((await h.execute('SELECT id FROM guarded', undefined, asLimited)).records).toEqual([[{ longValue: 1 }]]);
    const drop = await rejectionOf(h.execute('DROP TABLE guarded', undefined, asLimited));
    expect(drop).toBeInstanceOf(DatabaseErrorException);
    expect(drop.message).toBe('ERROR: must be owner of table guarded; SQLState: 42501');
    expect((await h.direct.query("SELECT to_regclass('guarded') AS t")).rows[0].t).toBe('guarded');
  });

  it('answers SecretsErrorException for a secret ARN that is neither the default nor listed, naming those it accepts', async () => {
    const error = await rejectionOf(h.execute('SELECT 1', undefined, { secretArn: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:nobody' }));
    expect(error).toBeInstanceOf(SecretsErrorException);
    expect(error.message).toContain(LIMITED);
    expect(error.message).toContain(h.server.secretArn);
  });

  it('runs a transaction as the user of the secret that began it, and refuses a call on it that names another secret', async () => {
    const transactionId = await begin(LIMITED);
    expect((await h.execute('SELECT current_user', undefined, { ...asLimited, transactionId })).records).toEqual([[{ stringValue: role }]]);
    await h.execute('INSERT INTO guarded VALUES (2)', undefined, { ...asLimited, transactionId });
    const other = await rejectionOf(h.execute('INSERT INTO guarded VALUES (3)', undefined, { transactionId }));
    expect(other).toBeInstanceOf(BadRequestException);
    expect(other.message).toBe(
      `Transaction ${transactionId} was begun with the secret ${LIMITED}, and this call names ${h.server.secretArn}. Every call on a transaction must name the secret that began it.`,
    );
    expect(await rejectionOf(h.commit(transactionId))).toBeInstanceOf(BadRequestException);
    // Refused calls leave the transaction as it was: it still commits through its own secret.
    await h.client.send(new CommitTransactionCommand({ resourceArn: h.server.resourceArn, ...asLimited, transactionId }));
    expect((await h.direct.query('SELECT id FROM guarded ORDER BY id')).rows.map((row) => row.id)).toEqual([1, 2]);
  });

  it('refuses a secrets option that lists the default secret ARN or an entry without a username', async () => {
    await expect(startDataApi({ databaseUrl: h.url, secrets: { [h.server.secretArn]: { username: role, password: 'x' } } })).rejects.toThrow(
      /is the default secretArn/,
    );
    await expect(startDataApi({ databaseUrl: h.url, secrets: { [LIMITED]: { username: '', password: 'x' } } })).rejects.toThrow(/non-empty username/);
  });
});
