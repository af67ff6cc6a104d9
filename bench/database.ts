import { randomBytes } from 'node:crypto';
import { Agent } from 'node:http';
import { RDSDataClient } from '@aws-sdk/client-rds-data';
import { DataApiSession } from '../lambda/inbox/transport/data-api/session.js';
import { migrate } from '../lambda/inbox/sql/schema.js';
import type { DatabaseTarget } from '../lambda/inbox/transport/data-api/session.js';
import { createDatabase } from '../local/postgres.js';
import type { RemoteDataApi } from './servers.js';

/**
 * The effect every variant applies: one row per statement of its effect, tagged with the variant, so the
 * run can check afterwards that each variant did exactly the work it was timed for.
 */
export const EFFECT_SQL = 'INSERT INTO public.bench_effect (variant, order_id, step) VALUES (:variant, :orderId, :step)';

const TABLES = [
  'CREATE TABLE public.bench_effect (id bigserial PRIMARY KEY, variant text NOT NULL, order_id text NOT NULL, step integer NOT NULL)',
  // The naive pattern's "already processed" record, written after the effect in its own autocommit call.
  'CREATE TABLE public.bench_naive_processed (message_key text PRIMARY KEY)',
  // The Powertools-style idempotency record, shaped like Powertools' DynamoDB item (id, status, expiry
  // in epoch seconds, in-progress expiry in epoch milliseconds, stored result), kept in PostgreSQL so that
  // every variant pays the same Data API round trip.
  `CREATE TABLE public.bench_idempotency (
     id                     text   PRIMARY KEY,
     status                 text   NOT NULL,
     expiration             bigint NOT NULL,
     in_progress_expiration bigint,
     data                   text
   )`,
];

/** A fresh database for one benchmark run, with the inbox schema and the benchmark's tables. */
export interface BenchDatabase {
  readonly name: string;
  /** A session over `server`, for setup and checks (never timed). */
  readonly session: DataApiSession;
  /** A target on `server` with a client of its own: each variant gets one per server, as each Lambda function would. */
  target(server: RemoteDataApi): DatabaseTarget;
  /** Effect rows per variant, counted directly. */
  effectsByVariant(): Promise<Map<string, number>>;
  close(): void;
}

/**
 * A Data API client configured as inbox() configures its own (no SDK retries), with one difference: its
 * keep-alive agent has a timeout, and only then does Node's agent honour the server's `Keep-Alive:
 * timeout=5` and drop an idle socket after 4 s. Without it (the SDK's default agent) idle sockets are kept
 * forever, while Node's HTTP server closes them after 6 s (5 s plus its own second); a call sent on a
 * socket the server is closing at that moment fails with "TimeoutError: read ECONNRESET", and with
 * maxAttempts 1 its record fails. Between rounds a variant's sockets sit idle while the others run, for
 * about that long on a loaded machine: this was the "1 of 40 records reported failed" with no fault.
 */
export function dataApiClient(server: RemoteDataApi): RDSDataClient {
  return new RDSDataClient({
    endpoint: server.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    // As inbox() configures its own: the SDK never re-sends a call (a re-sent statement could run twice).
    maxAttempts: 1,
    requestHandler: { httpAgent: new Agent({ keepAlive: true, maxSockets: 50, timeout: 60_000 }) },
  });
}

/** Creates the run's database on `postgresUrl`, migrates the inbox schema and creates the benchmark tables through `server`. */
export async function benchDatabase(postgresUrl: string, server: RemoteDataApi): Promise<BenchDatabase> {
  const name = `bench_${randomBytes(4).toString('hex')}`;
  await createDatabase(postgresUrl, name);
  const clients: RDSDataClient[] = [];
  const target = (on: RemoteDataApi): DatabaseTarget => {
    const client = dataApiClient(on);
    clients.push(client);
    return { client, resourceArn: on.resourceArn, secretArn: on.secretArn, database: name };
  };
  const session = new DataApiSession(target(server), { callTimeoutMs: 30_000, resumeDelaysMs: [] });
  await migrate(session);
  for (const sql of TABLES) await session.execute(sql);
  return {
    name,
    session,
    target,
    effectsByVariant: async () => {
      const { rows } = await session.execute('SELECT variant, count(*) AS effects FROM public.bench_effect GROUP BY variant');
      return new Map(rows.map((row) => [String(row.variant), Number(row.effects)]));
    },
    close: () => {
      for (const client of clients) client.destroy();
    },
  };
}
