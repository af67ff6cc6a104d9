import { eq, sql as drizzleSql } from 'drizzle-orm';
import { drizzle as drizzleDataApi } from 'drizzle-orm/aws-data-api/pg';
import { drizzle as drizzlePostgres } from 'drizzle-orm/node-postgres';
import { Kysely, PostgresDialect, sql as kyselySql } from 'kysely';
import { DataApiDialect } from 'kysely-data-api';
import { BatchExecuteStatementCommand, CommitTransactionCommand, ExecuteSqlCommand, RollbackTransactionCommand } from '@aws-sdk/client-rds-data';
import type { SQSRecord } from 'aws-lambda';
import type { PoolClient } from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { inbox } from '../../lambda/inbox/index.js';
import type { InboxMessage, InboxOptions, InboxTransaction } from '../../lambda/inbox/index.js';
import { OrmBindingError, TransactionControlError, transactionConnection, transactionDataApi } from '../../lambda/inbox/orm/index.js';
import { shipOrder as drizzleDataApiRecipe } from '../../examples/orm/src/drizzle-data-api.js';
import { shipOrder as drizzlePostgresRecipe } from '../../examples/orm/src/drizzle-postgres.js';
import { shipOrder as kyselyDataApiRecipe } from '../../examples/orm/src/kysely-data-api.js';
import { shipOrder as kyselyPostgresRecipe } from '../../examples/orm/src/kysely-postgres.js';
import { orders } from '../../examples/orm/src/schema.js';
import type { Database, OrderShipped } from '../../examples/orm/src/schema.js';
import { inboxFixture, lambdaContext, recordingLogger, recordingMetrics, sqsRecord, TRANSPORT } from '../support/inbox.js';
import { CURRENT } from '../support/transport.js';

/** The wire transports (postgres, and dsql on its profile) hand the ORM the transaction's connection. */
const ON_WIRE = CURRENT.protocol === 'wire';
import type { InboxFixture } from '../support/inbox.js';

// Drizzle and Kysely inside the inbox's transaction, on the transport the suite runs on (INBOX_TEST_TRANSPORT):
// their own drivers, on real PostgreSQL, through the real AWS SDK or node-postgres and the local servers. The
// recipes (examples/orm, shown in docs/orm.md) import `sqs-inbox/orm` as users do, which resolves to the built
// package: `npm run build` first (npm test does).

let db: InboxFixture;
beforeAll(async () => {
  db = await inboxFixture('orm');
});
afterAll(async () => db.close());
beforeEach(async () => {
  await db.query('TRUNCATE public.orders, inbox.consumed_message');
  db.server.faults.clear();
  db.server.stats.reset();
});

/** What a test does with an ORM bound to the transaction: one write, or the ways a user may try to own the transaction. */
interface Orm {
  readonly name: string;
  /** The recipe of docs/orm.md, from examples/orm-app. */
  readonly recipe: (tx: InboxTransaction, message: InboxMessage<OrderShipped>) => Promise<void>;
  /** Marks an order shipped through the ORM. */
  ship(tx: InboxTransaction, orderId: string): Promise<void>;
  /** The same write inside the ORM's own `db.transaction()`. */
  shipInOwnTransaction(tx: InboxTransaction, orderId: string): Promise<void>;
  /** A raw COMMIT through the ORM. */
  commit(tx: InboxTransaction): Promise<void>;
  /** Any SQL text, raw, through the ORM. */
  raw(tx: InboxTransaction, text: string): Promise<void>;
  /** Reads an order through the ORM. */
  read(tx: InboxTransaction, orderId: string): Promise<{ status: string; shippedCount: number } | undefined>;
}

const DATA_API_ORMS: readonly Orm[] = [
  {
    name: 'Drizzle (drizzle-orm/aws-data-api/pg)',
    recipe: drizzleDataApiRecipe,
    ship: async (tx, orderId) =>
      void (await drizzleDataApi({ ...transactionDataApi(tx) })
        .insert(orders)
        .values({ orderId, status: 'shipped', shippedCount: 1 })),
    shipInOwnTransaction: async (tx, orderId) =>
      drizzleDataApi({ ...transactionDataApi(tx) }).transaction(async (own) => void (await own.insert(orders).values({ orderId, status: 'shipped' }))),
    commit: async (tx) => void (await drizzleDataApi({ ...transactionDataApi(tx) }).execute(drizzleSql`commit`)),
    raw: async (tx, text) => void (await drizzleDataApi({ ...transactionDataApi(tx) }).execute(drizzleSql.raw(text))),
    read: async (tx, orderId) =>
      (
        await drizzleDataApi({ ...transactionDataApi(tx) })
          .select({ status: orders.status, shippedCount: orders.shippedCount })
          .from(orders)
          .where(eq(orders.orderId, orderId))
      )[0],
  },
  {
    name: 'Kysely (kysely-data-api)',
    recipe: kyselyDataApiRecipe,
    ship: async (tx, orderId) =>
      void (await kyselyOnDataApi(tx).insertInto('orders').values({ order_id: orderId, status: 'shipped', shipped_count: 1 }).execute()),
    shipInOwnTransaction: async (tx, orderId) =>
      kyselyOnDataApi(tx)
        .transaction()
        .execute(async (own) => void (await own.insertInto('orders').values({ order_id: orderId, status: 'shipped' }).execute())),
    commit: async (tx) => void (await kyselySql`commit`.execute(kyselyOnDataApi(tx))),
    raw: async (tx, text) => void (await kyselySql.raw(text).execute(kyselyOnDataApi(tx))),
    read: async (tx, orderId) => readWithKysely(kyselyOnDataApi(tx), orderId),
  },
];

const WIRE_ORMS: readonly Orm[] = [
  {
    name: 'Drizzle (drizzle-orm/node-postgres)',
    recipe: drizzlePostgresRecipe,
    ship: async (tx, orderId) => void (await drizzleOnWire(tx).insert(orders).values({ orderId, status: 'shipped', shippedCount: 1 })),
    shipInOwnTransaction: async (tx, orderId) =>
      drizzleOnWire(tx).transaction(async (own) => void (await own.insert(orders).values({ orderId, status: 'shipped' }))),
    commit: async (tx) => void (await drizzleOnWire(tx).execute(drizzleSql`commit`)),
    raw: async (tx, text) => void (await drizzleOnWire(tx).execute(drizzleSql.raw(text))),
    read: async (tx, orderId) =>
      (await drizzleOnWire(tx).select({ status: orders.status, shippedCount: orders.shippedCount }).from(orders).where(eq(orders.orderId, orderId)))[0],
  },
  {
    name: 'Kysely (PostgresDialect)',
    recipe: kyselyPostgresRecipe,
    ship: async (tx, orderId) =>
      void (await kyselyOnWire(tx).insertInto('orders').values({ order_id: orderId, status: 'shipped', shipped_count: 1 }).execute()),
    shipInOwnTransaction: async (tx, orderId) =>
      kyselyOnWire(tx)
        .transaction()
        .execute(async (own) => void (await own.insertInto('orders').values({ order_id: orderId, status: 'shipped' }).execute())),
    commit: async (tx) => void (await kyselySql`commit`.execute(kyselyOnWire(tx))),
    raw: async (tx, text) => void (await kyselySql.raw(text).execute(kyselyOnWire(tx))),
    read: async (tx, orderId) => readWithKysely(kyselyOnWire(tx), orderId),
  },
];

async function readWithKysely(db: Kysely<Database>, orderId: string) {
  const row = await db.selectFrom('orders').select(['status', 'shipped_count']).where('order_id', '=', orderId).executeTakeFirst();
  return row && { status: row.status, shippedCount: row.shipped_count };
}
function kyselyOnDataApi(tx: InboxTransaction) {
  return new Kysely<Database>({ dialect: new DataApiDialect({ mode: 'postgres', driver: transactionDataApi(tx) }) });
}
function kyselyOnWire(tx: InboxTransaction) {
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool: transactionConnection(tx) }) });
}
function drizzleOnWire(tx: InboxTransaction) {
  return drizzlePostgres({ client: transactionConnection<PoolClient>(tx) });
}

const ORMS = ON_WIRE ? WIRE_ORMS : DATA_API_ORMS;

/** The messages of an error and its causes. */
function messages(error: unknown): string {
  const all: string[] = [];
  for (let at = error; at instanceof Error; at = at.cause) all.push(at.message);
  return all.join(' <- ');
}

/** The error, or the first of its causes, of `type`: Drizzle wraps a failed query's error in its own. */
function causeOf<T>(error: unknown, type: new (...args: never[]) => T): T | undefined {
  for (let at = error; at instanceof Error; at = at.cause) if (at instanceof type) return at;
  return undefined;
}

function handlerWith(apply: InboxOptions<OrderShipped>['apply'], extra: Partial<InboxOptions<OrderShipped>> = {}) {
  const logger = recordingLogger();
  return { logger, handler: inbox<OrderShipped>({ consumer: 'orm-worker', database: db.target, logger, metrics: recordingMetrics(), apply, ...extra }) };
}

const shippedCount = async (orderId: string) =>
  (await db.query('SELECT shipped_count FROM public.orders WHERE order_id = $1', [orderId]))[0]?.shipped_count as number | undefined;
const claimed = async (messageId: string) => (await db.query('SELECT 1 FROM inbox.consumed_message WHERE message_id = $1', [messageId])).length === 1;
/** The same record, delivered again by SQS. */
const redelivered = (record: SQSRecord): SQSRecord => ({ ...record, attributes: { ...record.attributes, ApproximateReceiveCount: '2' } });
const isOrmWrite = (sql: string | undefined) => /insert into "orders"/i.test(sql ?? '');
/** The ORM's writes the database received, seen at the local server (or the wire proxy). */
function watchOrmWrites(): { readonly count: () => number } {
  let writes = 0;
  db.server.faults.watch((call) => {
    if (isOrmWrite(call.sql)) writes++;
  });
  return { count: () => writes };
}
/** The transaction of each claim statement and of each of the ORM's writes, as the server saw them. */
function watchTransactions() {
  const transactions = { claim: [] as (string | undefined)[], write: [] as (string | undefined)[] };
  db.server.faults.watch(({ sql, transactionId }) => {
    if (sql?.includes('consumed_message')) transactions.claim.push(transactionId);
    if (isOrmWrite(sql)) transactions.write.push(transactionId);
  });
  return transactions;
}

describe.each(ORMS)(`$name inside the inbox's transaction (${TRANSPORT})`, (orm) => {
  it("commits the recipe's write with the claim, in the inbox's transaction and no other", async () => {
    const { handler } = handlerWith(orm.recipe);
    const record = sqsRecord({ body: { orderId: 'o-commit' } });
    const transactions = watchTransactions();
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(transactions.write).toEqual([expect.any(String)]);
    expect(transactions.write).toEqual(transactions.claim);
    expect(await shippedCount('o-commit')).toBe(1);
    expect(await claimed(record.messageId)).toBe(true);
    // One transaction: the inbox's Begin and Commit, the claim and the ORM's statement inside it.
    expect(db.server.stats.calls).toMatchObject({ BeginTransaction: 1, CommitTransaction: 1, ExecuteStatement: 2 });
  });

  it("reads the transaction's own uncommitted write through the ORM", async () => {
    let seen: unknown;
    const { handler } = handlerWith(async (tx, message) => {
      await tx.execute("INSERT INTO public.orders (order_id, status, shipped_count) VALUES (:orderId, 'packed', 2)", { orderId: message.body.orderId });
      seen = await orm.read(tx, message.body.orderId);
    });
    expect((await handler({ Records: [sqsRecord({ body: { orderId: 'o-read' } })] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(seen).toEqual({ status: 'packed', shippedCount: 2 });
  });

  it('rolls the write back with the claim when apply fails after it', async () => {
    const { handler } = handlerWith(async (tx, message) => {
      await orm.recipe(tx, message);
      throw new Error('the effect failed after the write');
    });
    const record = sqsRecord({ body: { orderId: 'o-rollback' } });
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect(await shippedCount('o-rollback')).toBeUndefined();
    expect(await claimed(record.messageId)).toBe(false);
  });

  it('leaves neither the write nor the claim when the commit is refused, and the redelivery applies once', async () => {
    const { handler } = handlerWith(orm.recipe);
    const record = sqsRecord({ body: { orderId: 'o-crash' } });
    db.server.faults.serverError({ count: 1, operation: 'CommitTransaction' });
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect(await shippedCount('o-crash')).toBeUndefined();
    expect(await claimed(record.messageId)).toBe(false);
    expect((await handler({ Records: [redelivered(record)] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(await shippedCount('o-crash')).toBe(1);
  });

  it("leaves neither when the ORM statement's answer is lost (the transaction goes with it), and the redelivery applies once", async () => {
    const { handler } = handlerWith(orm.recipe);
    const record = sqsRecord({ body: { orderId: 'o-lost-write' } });
    db.server.faults.dropResponse({ operation: 'ExecuteStatement', match: isOrmWrite });
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect(await claimed(record.messageId)).toBe(false);
    expect(await shippedCount('o-lost-write')).toBeUndefined();
    expect((await handler({ Records: [redelivered(record)] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(await shippedCount('o-lost-write')).toBe(1);
  });

  it("writes every message of a batch in the batch's one transaction (applyBatch)", async () => {
    const handler = inbox<OrderShipped>({
      consumer: 'orm-batch-worker',
      database: db.target,
      logger: recordingLogger(),
      metrics: recordingMetrics(),
      applyBatch: async (tx, messages) => {
        for (const message of messages) await orm.recipe(tx, message);
      },
    });
    const records = ['o-batch-1', 'o-batch-2', 'o-batch-3'].map((orderId) => sqsRecord({ body: { orderId } }));
    const transactions = watchTransactions();
    expect((await handler({ Records: records }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(db.server.stats.calls).toMatchObject({ BeginTransaction: 1, CommitTransaction: 1 });
    expect(transactions.claim).toEqual([expect.any(String)]);
    expect(transactions.write).toEqual(records.map(() => transactions.claim[0]));
    expect(await Promise.all(['o-batch-1', 'o-batch-2', 'o-batch-3'].map(shippedCount))).toEqual([1, 1, 1]);
  });

  it('applies once when the commit happened but its answer was lost: the redelivery is a duplicate', async () => {
    const { handler } = handlerWith(orm.recipe);
    const record = sqsRecord({ body: { orderId: 'o-lost' } });
    db.server.faults.dropResponse({ operation: 'CommitTransaction' });
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    const writes = watchOrmWrites();
    expect((await handler({ Records: [redelivered(record)] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(writes.count()).toBe(0);
    expect(await shippedCount('o-lost')).toBe(1);
  });

  it.each(['before-apply', 'with-first-statement'] as const)('runs no write of the ORM for a duplicate (claim: %s)', async (claim) => {
    const { handler } = handlerWith(orm.recipe, { claim, duplicateFilter: 'never' });
    const record = sqsRecord({ body: { orderId: 'o-duplicate' } });
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([]);
    const writes = watchOrmWrites();
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(writes.count()).toBe(0);
    expect(await shippedCount('o-duplicate')).toBe(1);
  });

  it("claims first when the ORM's statement comes before any of tx.execute (claim: 'with-first-statement')", async () => {
    const { handler } = handlerWith(async (tx, message) => orm.ship(tx, message.body.orderId), { claim: 'with-first-statement' });
    const record = sqsRecord({ body: { orderId: 'o-riding' } });
    const sent: string[] = [];
    db.server.faults.watch(({ sql }) => {
      if (sql?.includes('consumed_message')) sent.push('claim');
      if (isOrmWrite(sql)) sent.push('write');
    });
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([]);
    // An ORM's statement cannot carry the claim: it goes alone first, so a duplicate sends no write.
    expect(sent).toEqual(['claim', 'write']);
    expect(await claimed(record.messageId)).toBe(true);
    expect(await shippedCount('o-riding')).toBe(1);
  });

  it("refuses the ORM's own db.transaction() inside apply, naming the fix, and sends nothing of it", async () => {
    let refused: unknown;
    const { handler } = handlerWith(async (tx, message) => {
      await orm.shipInOwnTransaction(tx, message.body.orderId).catch((error: unknown) => {
        refused = error;
        throw error;
      });
    });
    const record = sqsRecord({ body: { orderId: 'o-own-transaction' } });
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect(causeOf(refused, TransactionControlError)?.message).toMatch(
      /^(BEGIN|BeginTransaction) refused inside the inbox's transaction.*Fix: leave BEGIN, COMMIT, ROLLBACK and SAVEPOINT out of the SQL, and drop db\.transaction\(\)/,
    );
    expect(db.server.stats.calls).toMatchObject({ BeginTransaction: 1, CommitTransaction: 0 });
    expect(await shippedCount('o-own-transaction')).toBeUndefined();
    expect(await claimed(record.messageId)).toBe(false);
  });

  it('refuses a COMMIT sent through the ORM, before it reaches the database', async () => {
    let refused: unknown;
    const { handler } = handlerWith(async (tx, message) => {
      await orm.ship(tx, message.body.orderId);
      await orm.commit(tx).catch((error: unknown) => {
        refused = error;
        throw error;
      });
    });
    const record = sqsRecord({ body: { orderId: 'o-commit-statement' } });
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect(causeOf(refused, TransactionControlError)?.refused).toBe('COMMIT');
    expect(await shippedCount('o-commit-statement')).toBeUndefined();
  });

  it.each([
    ['SAVEPOINT sp1', 'SAVEPOINT'],
    ['/* sp */ rollback to savepoint sp1', 'ROLLBACK TO'],
    ['select 1; -- then\r commit', 'COMMIT'],
  ])('refuses %j sent through the ORM before it reaches the database, and fails the record even when apply catches it', async (text, refused) => {
    let caught: unknown;
    const { handler } = handlerWith(async (tx, message) => {
      await orm.ship(tx, message.body.orderId);
      await orm.raw(tx, text).catch((error: unknown) => {
        caught = error;
      });
    });
    const record = sqsRecord({ body: { orderId: 'o-raw-control' } });
    const sent: string[] = [];
    db.server.faults.watch(({ operation, sql }) => void (operation === 'ExecuteStatement' && sql !== undefined && sent.push(sql)));
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect(causeOf(caught, TransactionControlError)?.refused).toBe(refused);
    expect(sent.filter((sql) => sql.includes(text))).toEqual([]);
    expect(await shippedCount('o-raw-control')).toBeUndefined();
    expect(await claimed(record.messageId)).toBe(false);
  });

  it('never runs a text of several statements through the ORM: the database refuses it, on every transport', async () => {
    let caught: unknown;
    const { handler } = handlerWith(async (tx, message) => {
      await orm.raw(tx, `INSERT INTO public.orders (order_id, status) VALUES ('${message.body.orderId}', 'a'); SELECT 1`).catch((error: unknown) => {
        caught = error;
        throw error;
      });
    });
    const record = sqsRecord({ body: { orderId: 'o-two-statements' } });
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect(messages(caught)).toMatch(ON_WIRE ? /cannot insert multiple commands into a prepared statement/ : /Multistatements aren't supported/);
    expect(await shippedCount('o-two-statements')).toBeUndefined();
  });

  it('makes the commit roll back when an ORM statement failed, even if apply caught the error', async () => {
    const { handler } = handlerWith(async (tx, message) => {
      await orm.ship(tx, message.body.orderId);
      // The same order again: a primary key violation, which PostgreSQL answers by aborting the transaction.
      await orm.ship(tx, message.body.orderId).catch(() => {});
    });
    const record = sqsRecord({ body: { orderId: 'o-caught' } });
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect(await shippedCount('o-caught')).toBeUndefined();
    expect(await claimed(record.messageId)).toBe(false);
  });
});

describe('binding an ORM to something else than the transaction of apply', () => {
  const other = ON_WIRE ? transactionDataApi : transactionConnection;
  const otherName = ON_WIRE ? 'transactionDataApi' : 'transactionConnection';
  const ownName = ON_WIRE ? 'transactionConnection' : 'transactionDataApi';

  it("refuses the other transport's binding, naming the one to use", async () => {
    let refused: unknown;
    const { handler } = handlerWith(async (tx) => {
      try {
        other(tx);
      } catch (error) {
        refused = error;
        throw error;
      }
    });
    await handler({ Records: [sqsRecord()] }, lambdaContext());
    expect(refused).toBeInstanceOf(OrmBindingError);
    expect(String(refused)).toContain(`Fix: use ${ownName}(tx)`);
    expect(String(refused)).toContain(`${otherName}(tx) binds an ORM over`);
  });

  it.skipIf(ON_WIRE)('refuses, on the bound Data API client, every command but a statement, before it is sent', async () => {
    const refusals: unknown[] = [];
    const { handler } = handlerWith(async (tx) => {
      const { client, resourceArn, secretArn } = transactionDataApi(tx);
      for (const command of [
        new CommitTransactionCommand({ resourceArn, secretArn, transactionId: tx.transactionId }),
        new RollbackTransactionCommand({ resourceArn, secretArn, transactionId: tx.transactionId }),
        new ExecuteSqlCommand({ dbClusterOrInstanceArn: resourceArn, awsSecretStoreArn: secretArn, sqlStatements: 'select 1' }),
      ]) {
        await client.send(command as never).catch((error: unknown) => refusals.push(error));
      }
    });
    const record = sqsRecord();
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(refusals.map((error) => [(error as Error).name, (error as TransactionControlError).refused])).toEqual([
      ['TransactionControlError', 'CommitTransaction'],
      ['TransactionControlError', 'RollbackTransaction'],
      ['OrmBindingError', undefined],
    ]);
    expect(db.server.stats.calls).toMatchObject({ CommitTransaction: 1, RollbackTransaction: 0, ExecuteSql: 0 });
  });

  it.skipIf(ON_WIRE)(
    "sends a BatchExecuteStatement of the bound client in the inbox's transaction, and refuses one that holds transaction control",
    async () => {
      let refused: unknown;
      const { handler } = handlerWith(async (tx, message) => {
        const { client, resourceArn, secretArn } = transactionDataApi(tx);
        const insert = "INSERT INTO public.orders (order_id, status, shipped_count) VALUES (:id, 'shipped', 1)";
        const parameterSets = ['-a', '-b'].map((suffix) => [{ name: 'id', value: { stringValue: `${message.body.orderId}${suffix}` } }]);
        await client.send(new BatchExecuteStatementCommand({ resourceArn, secretArn, sql: insert, parameterSets }));
        await client
          .send(new BatchExecuteStatementCommand({ resourceArn, secretArn, sql: 'ROLLBACK', parameterSets: [[]] }))
          .catch((error: unknown) => void (refused = error));
      });
      const record = sqsRecord({ body: { orderId: 'o-batch-call' } });
      const transactions = watchTransactions();
      const batches: (string | undefined)[] = [];
      db.server.faults.watch(({ operation, transactionId }) => void (operation === 'BatchExecuteStatement' && batches.push(transactionId)));
      expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
      expect(refused).toMatchObject({ name: 'TransactionControlError', refused: 'ROLLBACK' });
      // The batch went in the claim's transaction, which the refusal then rolled back with it.
      expect(batches).toEqual([expect.any(String)]);
      expect(batches).toEqual(transactions.claim);
      expect(db.server.stats.calls).toMatchObject({ BatchExecuteStatement: 1, CommitTransaction: 0, RollbackTransaction: 1 });
      expect([await shippedCount('o-batch-call-a'), await shippedCount('o-batch-call-b'), await claimed(record.messageId)]).toEqual([
        undefined,
        undefined,
        false,
      ]);
    },
  );

  it.skipIf(!ON_WIRE)("refuses a cursor on the transaction's connection at once, before its caller reads from it", async () => {
    let refused: unknown;
    const { handler } = handlerWith(async (tx) => {
      const cursor = { submit: () => {}, read: async () => [], close: async () => {} };
      try {
        transactionConnection(tx).query(cursor);
      } catch (error) {
        refused = error;
      }
    });
    expect((await handler({ Records: [sqsRecord()] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(refused).toBeInstanceOf(OrmBindingError);
    expect(String(refused)).toContain('Fix: read the rows with one query');
  });

  it('refuses a tx that is not the one inbox() gives apply', () => {
    const handmade = {
      transactionId: 't',
      execute: async () => ({ rows: [], updated: 0 }),
      executeBatch: async () => 0,
      send: () => {},
    } satisfies InboxTransaction;
    expect(() => transactionDataApi(handmade)).toThrow(OrmBindingError);
    expect(() => transactionConnection(handmade)).toThrow(/needs the tx that apply or applyBatch receives from inbox\(\)/);
  });

  it('refuses a statement sent after apply returned without awaiting it', async () => {
    let late: Promise<unknown> | undefined;
    const { handler } = handlerWith(async (tx, message) => {
      const orm = ORMS[0]!;
      await orm.ship(tx, message.body.orderId);
      late = new Promise((resolve) => setTimeout(resolve, 0))
        .then(() => orm.ship(tx, `${message.body.orderId}-late`))
        .then(
          () => 'sent',
          (error: unknown) => error,
        );
    });
    await handler({ Records: [sqsRecord({ body: { orderId: 'o-late' } })] }, lambdaContext());
    // Refused, whether the transaction was still ending (the session's queue) or had ended (the binding).
    expect(messages(await late)).toMatch(/await every (tx\.execute|statement)/);
    expect(await shippedCount('o-late-late')).toBeUndefined();
    expect(await shippedCount('o-late')).toBe(1);
  });
});
