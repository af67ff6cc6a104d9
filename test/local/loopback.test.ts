import { connect } from 'node:net';
import { networkInterfaces } from 'node:os';
import { ExecuteStatementCommand, RDSDataClient } from '@aws-sdk/client-rds-data';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startDataApi } from '../../local/data-api/server.js';
import type { DataApiServer } from '../../local/data-api/server.js';
import { startSqs } from '../../local/sqs/server.js';
import type { SqsServer } from '../../local/sqs/server.js';
import { freshDatabase } from '../support/database.js';

// What docs/local-testing.md promises of the local servers: they check no credentials, so by default
// each listens on loopback only, and the Data API runs SQL as the embedded PostgreSQL's superuser.

/** This machine's addresses on its other networks: what another host (or a container) would connect to. */
const OUTSIDE = Object.values(networkInterfaces())
  .flat()
  .filter((address) => address !== undefined && !address.internal && address.family === 'IPv4')
  .map((address) => address!.address);

/** Whether a TCP connection to host:port is accepted. */
function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: 2000 });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

const portOf = (url: string) => Number(new URL(url).port);

let databaseUrl: string;
let dataApi: DataApiServer;
let sqs: SqsServer;
beforeAll(async () => {
  databaseUrl = await freshDatabase('loopback');
  dataApi = await startDataApi({ databaseUrl });
  sqs = await startSqs();
});
afterAll(async () => {
  await sqs.close();
  await dataApi.close();
});

describe('the local servers, by default', () => {
  it.skipIf(OUTSIDE.length === 0)('accept connections on loopback only: the Data API, SQS and embedded PostgreSQL', async () => {
    const servers = [
      ['Data API', portOf(dataApi.endpoint)],
      ['SQS', portOf(sqs.endpoint)],
      // The server the tests share was started by startPostgres, as `sqs-inbox local` starts it; one in DATABASE_URL is not ours.
      ...(process.env.DATABASE_URL ? [] : [['PostgreSQL', portOf(inject('serverUrl'))] as const]),
    ] as const;
    for (const [name, port] of servers) {
      expect(await accepts('127.0.0.1', port), `${name} on 127.0.0.1`).toBe(true);
      for (const address of OUTSIDE) expect(await accepts(address, port), `${name} on ${address}`).toBe(false);
    }
  });

  it.skipIf(OUTSIDE.length === 0)('are reachable from other hosts only when a host is given: the probe above can fail', async () => {
    const open = await startSqs({ host: '0.0.0.0' });
    try {
      expect(await accepts(OUTSIDE[0]!, portOf(open.endpoint))).toBe(true);
    } finally {
      await open.close();
    }
  });

  it.skipIf(Boolean(process.env.DATABASE_URL))('run SQL through the Data API as the superuser of embedded PostgreSQL', async () => {
    const client = new RDSDataClient({ endpoint: dataApi.endpoint, region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
    try {
      const { records } = await client.send(
        new ExecuteStatementCommand({
          resourceArn: dataApi.resourceArn,
          secretArn: dataApi.secretArn,
          database: dataApi.database,
          sql: 'SELECT current_user::text, rolsuper FROM pg_roles WHERE rolname = current_user',
        }),
      );
      expect(records).toEqual([[{ stringValue: 'postgres' }, { booleanValue: true }]]);
    } finally {
      client.destroy();
    }
  });
});
