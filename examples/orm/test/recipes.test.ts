import type { SQSRecord } from 'aws-lambda';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inbox } from 'sqs-inbox';
import type { InboxMessage, InboxTransaction } from 'sqs-inbox';
import { startLocal } from 'sqs-inbox/local';
import type { LocalStack } from 'sqs-inbox/local';
import { migrate } from 'sqs-inbox/operations';
import type { InboxMigrationSet } from 'sqs-inbox/operations';
import { postgres } from 'sqs-inbox/postgres';
import type { OrderShipped } from '../src/schema.js';

/** The handler inbox() returns. */
type InboxHandler = ReturnType<typeof inbox>;

// The four recipes of docs/orm.md, as written (src/*.ts), against embedded PostgreSQL: the Data API ones
// through the local Data API server, the wire ones over node-postgres. Each recipe's own `handler` applies an
// order once through a redelivery, and a failure after the recipe's write rolls the write back with the claim.

/** What each recipe module exports. */
interface Recipe {
  shipOrder(tx: InboxTransaction, message: InboxMessage<OrderShipped>): Promise<void>;
  readonly handler: InboxHandler;
}

const RECIPES = [
  { name: 'Drizzle over the Data API', file: 'drizzle-data-api', transport: 'data-api' },
  { name: 'Kysely over the Data API', file: 'kysely-data-api', transport: 'data-api' },
  { name: 'Drizzle over the wire', file: 'drizzle-postgres', transport: 'postgres' },
  { name: 'Kysely over the wire', file: 'kysely-postgres', transport: 'postgres' },
] as const;

/** The app's own table, applied after the inbox's migrations as a deploy applies them. */
const ORDERS: InboxMigrationSet = {
  name: 'orders',
  migrations: [
    {
      version: 1,
      name: 'orders',
      statements: [
        `CREATE TABLE public.orders (
           order_id      text        PRIMARY KEY,
           status        text        NOT NULL,
           shipped_count integer     NOT NULL DEFAULT 0,
           last_key      text,
           updated_at    timestamptz NOT NULL DEFAULT now()
         )`,
      ],
    },
  ],
};

let local: LocalStack;
let pool: pg.Pool;

beforeAll(async () => {
  local = await startLocal();
  // What InboxConsumer sets in AWS, pointed at the local Data API; and the PG* variables node-postgres reads.
  const url = new URL(local.postgres.url);
  Object.assign(process.env, {
    INBOX_CONSUMER: 'orders-worker',
    INBOX_DATA_API_ENDPOINT: local.dataApi.endpoint,
    INBOX_RESOURCE_ARN: local.dataApi.resourceArn,
    INBOX_SECRET_ARN: local.dataApi.secretArn,
    INBOX_DATABASE: local.dataApi.database,
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    POWERTOOLS_METRICS_DISABLED: 'true',
    POWERTOOLS_LOG_LEVEL: 'SILENT',
    PGHOST: url.hostname,
    PGPORT: url.port,
    PGUSER: decodeURIComponent(url.username),
    PGPASSWORD: decodeURIComponent(url.password),
    PGDATABASE: local.dataApi.database,
  });
  pool = new pg.Pool({ max: 2 });
  // pool.end() resolves before its sockets have closed: the server stopping in afterAll may still end one.
  pool.on('error', () => {});
  await migrate(postgres(pool), [ORDERS]);
}, 120_000);

afterAll(async () => {
  await pool?.end();
  await local?.close();
});

let sequence = 0;
/** An SQS record of an OrderShipped message, as Lambda's event source mapping delivers it. */
function shipped(orderId: string, receiveCount = 1): SQSRecord {
  sequence++;
  return {
    messageId: `msg-${orderId}`,
    receiptHandle: `rh-${sequence}`,
    body: JSON.stringify({ orderId }),
    attributes: {
      ApproximateReceiveCount: String(receiveCount),
      SentTimestamp: String(Date.now()),
      SenderId: 'AIDALOCAL',
      ApproximateFirstReceiveTimestamp: String(Date.now()),
    },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:us-east-1:123456789012:orders',
    awsRegion: 'us-east-1',
  };
}

async function order(orderId: string): Promise<{ shipped_count: number; last_key: string | null } | undefined> {
  return (await pool.query('SELECT shipped_count, last_key FROM public.orders WHERE order_id = $1', [orderId])).rows[0];
}
async function claimed(messageId: string): Promise<boolean> {
  return (await pool.query('SELECT 1 FROM inbox.consumed_message WHERE message_id = $1', [messageId])).rowCount === 1;
}

describe.each(RECIPES)('$name ($file)', ({ file, transport }) => {
  let recipe: Recipe;
  beforeAll(async () => {
    recipe = (await import(`../src/${file}.ts`)) as Recipe;
  });

  it("its handler commits the ORM's write with the claim, and a redelivery applies nothing", async () => {
    const orderId = `${file}-commit`;
    const record = shipped(orderId);
    // The transaction of the claim and of the ORM's insert, as the local Data API saw them (the wire has no such window).
    const transactions = { claim: [] as (string | undefined)[], write: [] as (string | undefined)[] };
    local.dataApi.faults.watch(({ sql, transactionId }) => {
      if (sql?.includes('consumed_message')) transactions.claim.push(transactionId);
      if (/insert into "orders"/i.test(sql ?? '')) transactions.write.push(transactionId);
    });
    try {
      expect(await recipe.handler({ Records: [record] })).toEqual({ batchItemFailures: [] });
    } finally {
      local.dataApi.faults.clear();
    }
    if (transport === 'data-api') {
      expect(transactions.write).toEqual([expect.any(String)]);
      expect(transactions.claim).toEqual(transactions.write);
    }
    expect(await order(orderId)).toEqual({ shipped_count: 1, last_key: record.messageId });
    expect(await claimed(record.messageId)).toBe(true);

    expect(await recipe.handler({ Records: [shipped(orderId, 2)] })).toEqual({ batchItemFailures: [] });
    expect(await order(orderId)).toEqual({ shipped_count: 1, last_key: record.messageId });
  });

  it("rolls the ORM's write back with the claim when apply fails after it", async () => {
    const orderId = `${file}-rollback`;
    const record = shipped(orderId);
    let seenInTransaction: unknown;
    const failing = inbox<OrderShipped>({
      database: transport === 'postgres' ? postgres(pool) : undefined,
      apply: async (tx, message) => {
        await recipe.shipOrder(tx, message);
        // The write happened, in the transaction that holds the claim: the transaction sees it.
        seenInTransaction = (await tx.execute('SELECT shipped_count FROM public.orders WHERE order_id = :orderId', { orderId })).rows;
        throw new Error('the effect failed after the ORM wrote');
      },
    });
    expect(await failing({ Records: [record] })).toEqual({ batchItemFailures: [{ itemIdentifier: record.messageId }] });
    expect(seenInTransaction).toEqual([{ shipped_count: 1 }]);
    expect(await order(orderId)).toBeUndefined();
    expect(await claimed(record.messageId)).toBe(false);

    // The redelivery, with the recipe's own handler: the order ships once.
    expect(await recipe.handler({ Records: [shipped(orderId, 2)] })).toEqual({ batchItemFailures: [] });
    expect(await order(orderId)).toEqual({ shipped_count: 1, last_key: record.messageId });
    expect(await claimed(record.messageId)).toBe(true);
  });
});
