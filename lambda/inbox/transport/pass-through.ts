/**
 * How an ORM's own driver reaches the inbox's transaction (`sqs-inbox/orm`): each transport hands over its
 * calls as the driver builds them, unconverted, inside the transaction the inbox opened. The ORM never sees
 * the transaction's id or connection; it sends through the session, so the session's timeouts and failure
 * classification apply to its statements as to the inbox's own.
 */
export type PassThrough = DataApiPassThrough | WirePassThrough;

/** The operations an ORM's Data API driver may send inside the inbox's transaction. */
export type PassThroughOperation = 'ExecuteStatement' | 'BatchExecuteStatement';

/** The Data API's: the SDK's own commands, sent as the session sends its statements. */
export interface DataApiPassThrough {
  readonly transport: 'data-api';
  /** The cluster, secret and database every call goes to. */
  readonly target: { readonly resourceArn: string; readonly secretArn: string; readonly database?: string | undefined };
  /**
   * Sends the operation with this input (the ORM's, with the inbox's transaction, cluster, secret and
   * database filled in) as the session sends its own: one command per attempt, the session's timeout,
   * transaction control in its `sql` refused, failures classified. Resolves with the SDK's output.
   */
  send(operation: PassThroughOperation, input: Readonly<Record<string, unknown>>): Promise<unknown>;
}

/** The wire's: node-postgres queries, run on the connection that holds the transaction. */
export interface WirePassThrough {
  readonly transport: 'postgres';
  /** Runs a query config (`{ text, values, rowMode, types, ... }`) on the connection of `transactionId`; resolves with node-postgres' result. */
  query(transactionId: string, query: Readonly<Record<string, unknown>>): Promise<unknown>;
  /** The pool's client that holds `transactionId`, for an ORM's client to inherit from (never to query on directly). */
  connection(transactionId: string): object | undefined;
}

/**
 * Each `tx` that `apply` gets, and its way into the transaction for `sqs-inbox/orm`. A map, not a property
 * of `tx`, so `tx` carries no key of ours; `sqs-inbox/orm` and the handler come from the same build.
 */
const channels = new WeakMap<object, TransactionChannel>();

/** `tx`, with `channel` as its way in for `sqs-inbox/orm`. */
export function withChannel<T extends object>(tx: T, channel: TransactionChannel): T {
  channels.set(tx, channel);
  return tx;
}

/** The way in of a `tx` that `apply` got, or undefined for anything else. */
export function channelFor(tx: unknown): TransactionChannel | undefined {
  return typeof tx === 'object' && tx !== null ? channels.get(tx) : undefined;
}

/** What an ORM binding needs of the inbox's transaction. */
export interface TransactionChannel {
  /** The transport's pass-through, or none when the transport has no way for ORMs. */
  readonly passThrough: PassThrough | undefined;
  /**
   * Runs one call of the ORM's driver with the transaction's id: after the claim (it goes alone first when
   * no statement carried it yet, and a taken claim refuses the call), queued with the transaction's
   * statements, so a failed call makes the commit roll back.
   */
  run<T>(call: (transactionId: string) => Promise<T>): Promise<T>;
}
