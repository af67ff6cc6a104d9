import { randomBytes } from 'node:crypto';
import { RDSDataClient } from '@aws-sdk/client-rds-data';
import { DataApiSession, INBOX_MIGRATIONS, migrate } from '../lambda/inbox/index.js';
import type { DatabaseTarget } from '../lambda/inbox/index.js';
import { createDatabase } from '../local/index.js';
import type { LocalStack } from '../local/index.js';

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
  readonly session: DataApiSession;
  /** A target with a client of its own: each variant gets one, as each Lambda function would. */
  target(): DatabaseTarget;
  /** Effect rows per variant, counted directly. */
  effectsByVariant(): Promise<Map<string, number>>;
  close(): void;
}

/** Creates the run's database, migrates the inbox schema and creates the benchmark tables. */
export async function benchDatabase(local: LocalStack): Promise<BenchDatabase> {
  const name = `bench_${randomBytes(4).toString('hex')}`;
  await createDatabase(local.postgres.url, name);
  const clients: RDSDataClient[] = [];
  const target = (): DatabaseTarget => {
    const client = new RDSDataClient({
      endpoint: local.dataApi.endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      // As inbox() configures its own: the SDK never re-sends a call (a re-sent statement could run twice).
      maxAttempts: 1,
    });
    clients.push(client);
    return { client, resourceArn: local.dataApi.resourceArn, secretArn: local.dataApi.secretArn, database: name };
  };
  const session = new DataApiSession(target(), { callTimeoutMs: 30_000, resumeDelaysMs: [] });
  await migrate(session, [INBOX_MIGRATIONS]);
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
