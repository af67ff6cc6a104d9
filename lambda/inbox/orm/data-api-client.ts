import { RDSData } from '@aws-sdk/client-rds-data';
import type { InboxTransaction } from '../handler/options.js';
import type { DataApiPassThrough, PassThroughOperation, TransactionChannel } from '../transport/pass-through.js';
import { channelOf } from './channel.js';
import { TransactionControlError } from '../errors.js';
import { OrmBindingError } from './errors.js';

/** What Drizzle's `drizzle-orm/aws-data-api/pg` and kysely-data-api's `DataApiDialect` take as their driver's settings. */
export interface TransactionDataApi {
  /** An RDS Data API client bound to the inbox's transaction. */
  readonly client: RDSData;
  /** The inbox's cluster ARN. */
  readonly resourceArn: string;
  /** The inbox's secret ARN. */
  readonly secretArn: string;
  /** The inbox's database (empty: the cluster's default). */
  readonly database: string;
}

/**
 * The Data API settings for an ORM inside the inbox's transaction: spread them into Drizzle's
 * `drizzle()` of `drizzle-orm/aws-data-api/pg`, or pass them as kysely-data-api's `driver`. The client
 * sends every ExecuteStatement and BatchExecuteStatement in the transaction that holds the message's
 * claim (its `transactionId`, cluster, secret and database filled in), through the inbox's session, so
 * the ORM's writes commit with the claim, or roll back with it. BeginTransaction, CommitTransaction and
 * RollbackTransaction (an ORM's `db.transaction()`) are refused with a {@link TransactionControlError},
 * and so is transaction control in its SQL (BEGIN, COMMIT, ROLLBACK, SAVEPOINT and the like): the session
 * refuses it, as it refuses it in `tx.execute`.
 *
 * @example
 * import { drizzle } from 'drizzle-orm/aws-data-api/pg';
 * import { transactionDataApi } from 'sqs-inbox/orm';
 * apply: async (tx, message) => {
 *   const db = drizzle({ ...transactionDataApi(tx), schema });
 *   await db.update(orders).set({ status: 'shipped' }).where(eq(orders.orderId, message.body.orderId));
 * }
 */
export function transactionDataApi(tx: InboxTransaction): TransactionDataApi {
  const { channel, passThrough } = channelOf(tx, 'data-api');
  return {
    client: new TransactionDataApiClient(channel, passThrough),
    resourceArn: passThrough.target.resourceArn,
    secretArn: passThrough.target.secretArn,
    database: passThrough.target.database ?? '',
  };
}

/** The statements an ORM may send; anything else would start, end or bypass the inbox's transaction. */
const PASSED: Readonly<Record<string, PassThroughOperation>> = { ExecuteStatement: 'ExecuteStatement', BatchExecuteStatement: 'BatchExecuteStatement' };

/** What an ORM's own `db.transaction()` sends. */
const TRANSACTION_CONTROL: ReadonlySet<string> = new Set(['BeginTransaction', 'CommitTransaction', 'RollbackTransaction']);

/**
 * An RDSData (so an ORM's `instanceof RDSDataClient` and kysely-data-api's `client.executeStatement()`
 * both work) whose every call goes into the inbox's transaction instead of to its own endpoint.
 */
class TransactionDataApiClient extends RDSData {
  constructor(
    private readonly channel: TransactionChannel,
    private readonly passThrough: DataApiPassThrough,
  ) {
    super({});
  }

  override send(command: unknown, ...rest: unknown[]): Promise<never> {
    const callback = rest.find((arg) => typeof arg === 'function') as ((error: unknown, output?: unknown) => void) | undefined;
    const sent = this.sendInTransaction(command);
    if (callback === undefined) return sent;
    sent.then(
      (output) => callback(null, output),
      (error: unknown) => callback(error),
    );
    return undefined as never;
  }

  private async sendInTransaction(command: unknown): Promise<never> {
    const operation = operationOf(command);
    const input = (command as { input?: Record<string, unknown> }).input ?? {};
    const passed = PASSED[operation];
    if (passed === undefined) {
      if (TRANSACTION_CONTROL.has(operation)) throw new TransactionControlError(operation);
      throw new OrmBindingError(
        `${operation} cannot run in the inbox's transaction: only ExecuteStatement and BatchExecuteStatement do. Fix: send the statement with ExecuteStatement.`,
      );
    }
    if (input.transactionId !== undefined) {
      throw new OrmBindingError(
        `${operation} names a transaction of its own (${String(input.transactionId)}); the inbox's client fills in the inbox's. Fix: send without transactionId.`,
      );
    }
    const { resourceArn, secretArn, database } = this.passThrough.target;
    // The inbox's transaction, cluster, secret and database, whatever the ORM was configured with.
    return (await this.channel.run((transactionId) => this.passThrough.send(passed, { ...input, resourceArn, secretArn, database, transactionId }))) as never;
  }
}

/**
 * The Data API operation a command object stands for: `ExecuteStatementCommand` and the others carry
 * their operation in their schema (SDK 3.9xx and later), and in their class name.
 */
function operationOf(command: unknown): string {
  const schema = (command as { schema?: unknown } | null)?.schema;
  if (Array.isArray(schema) && typeof schema[2] === 'string') return schema[2];
  const name = (command as object | null)?.constructor?.name ?? '';
  return name.replace(/Command$/, '') || 'an unknown command';
}
