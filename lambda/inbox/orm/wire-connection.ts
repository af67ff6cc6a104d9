import type { InboxTransaction } from '../handler/options.js';
import type { TransactionChannel, WirePassThrough } from '../transport/pass-through.js';
import { channelOf } from './channel.js';
import { OrmBindingError } from './errors.js';

/** A node-postgres query result, as far as the ORMs read it. */
export interface TransactionQueryResult<Row = any> {
  readonly command: string;
  readonly rowCount: number | null;
  readonly rows: Row[];
  readonly fields: readonly { readonly name: string; readonly dataTypeID: number }[];
}

/**
 * The connection that holds the inbox's transaction, as an ORM's node-postgres driver takes it: a client
 * (`query`, `release`) for Drizzle's `drizzle-orm/node-postgres`, and a pool of that one client
 * (`connect`, `end`) for Kysely's `PostgresDialect`.
 */
export interface TransactionConnection {
  /** Runs one statement in the inbox's transaction; `text` with `$1`-style `values`, or a node-postgres query config. */
  query<Row = any>(text: string, values?: readonly unknown[]): Promise<TransactionQueryResult<Row>>;
  query<Row = any>(
    config: { readonly text: string; readonly values?: readonly unknown[] | undefined },
    values?: readonly unknown[],
  ): Promise<TransactionQueryResult<Row>>;
  /** A cursor (streaming) is refused: its reads would interleave with the transaction's statements. */
  query(cursor: { read(rows: number): Promise<unknown[]>; close(): Promise<void> }): never;
  /** Does nothing: the inbox gives the connection back after its commit or rollback. */
  release(destroy?: boolean | Error): void;
  /** This same connection (Kysely's pool asks for one per query). */
  connect(): Promise<TransactionConnection>;
  /** Does nothing: the pool is the inbox's. */
  end(): Promise<void>;
}

/**
 * The inbox transaction's own connection, for an ORM over the PostgreSQL wire protocol (`database:
 * postgres(pool)`): pass it as Drizzle's `client` (`drizzle-orm/node-postgres`) or as Kysely's
 * `PostgresDialect` `pool`. Its statements run on the connection that holds the message's claim, through
 * the inbox's session, so the ORM's writes commit with the claim or roll back with it. BEGIN, COMMIT,
 * ROLLBACK, SAVEPOINT and the like (an ORM's `db.transaction()`) are refused with a
 * {@link TransactionControlError} before they are sent, as in `tx.execute`; every query goes by the extended
 * protocol, so a text of several statements is refused by PostgreSQL, as the Data API refuses it.
 *
 * The object inherits from your pool's client (its `escapeIdentifier` and the rest are there), with
 * `query`, `release`, `connect` and `end` bound to the transaction; name that client's type as `Client` to
 * have it typed so (Drizzle asks for node-postgres' `PoolClient`).
 *
 * @example
 * import type { PoolClient } from 'pg';
 * import { drizzle } from 'drizzle-orm/node-postgres';
 * import { transactionConnection } from 'sqs-inbox/orm';
 * apply: async (tx, message) => {
 *   const db = drizzle({ client: transactionConnection<PoolClient>(tx), schema });
 *   await db.update(orders).set({ status: 'shipped' }).where(eq(orders.orderId, message.body.orderId));
 * }
 */
export function transactionConnection<Client extends object = TransactionConnection>(tx: InboxTransaction): Client & TransactionConnection {
  const { channel, passThrough } = channelOf(tx, 'postgres');
  const held = passThrough.connection(tx.transactionId);
  if (held === undefined) {
    throw new OrmBindingError(
      'transactionConnection(tx) was called after the transaction ended. Fix: call it inside apply, and await every statement before apply returns.',
    );
  }
  const connection: TransactionConnection = Object.create(held, {
    query: { value: (query: unknown, values?: unknown) => run(channel, passThrough, query, values) },
    release: { value: () => {} },
    connect: { value: async () => connection },
    end: { value: async () => {} },
  });
  return connection as Client & TransactionConnection;
}

/**
 * One query of the ORM's, refused before it is sent when it would stream (the session refuses one that would
 * end the transaction). A cursor is refused at once (node-postgres returns it, not a promise, so its caller reads from it right away).
 */
function run(channel: TransactionChannel, passThrough: WirePassThrough, query: unknown, values: unknown): Promise<never> {
  if (typeof query === 'object' && query !== null && typeof (query as { submit?: unknown }).submit === 'function') {
    throw new OrmBindingError(
      "a cursor or stream cannot run inside the inbox's transaction: its reads would interleave with the transaction's statements. Fix: read the rows with one query.",
    );
  }
  return send(channel, passThrough, query, values);
}

async function send(channel: TransactionChannel, passThrough: WirePassThrough, query: unknown, values: unknown): Promise<never> {
  if (typeof values === 'function' || typeof (query as { callback?: unknown } | null)?.callback === 'function') {
    throw new OrmBindingError("the inbox's connection answers with promises only. Fix: await client.query(text, values) instead of passing a callback.");
  }
  const config: Record<string, unknown> = typeof query === 'string' ? { text: query } : { ...(query as Record<string, unknown>) };
  if (Array.isArray(values)) config.values = values;
  if (typeof config.text !== 'string')
    throw new OrmBindingError('a query needs its SQL as text. Fix: pass client.query(text, values) or client.query({ text, values }).');
  return (await channel.run((transactionId) => passThrough.query(transactionId, config))) as never;
}
