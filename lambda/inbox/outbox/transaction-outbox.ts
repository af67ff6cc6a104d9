import type { Transaction } from '../transport/transaction.js';
import type { InboxTables } from '../sql/schema.js';
import type { OutboxSend } from './outbox-message.js';

/** What the consumer's outbox knows at cold start. */
export interface OutboxConfig {
  readonly consumer: string;
  readonly tables: InboxTables;
  /** Destination names and their queue URLs. */
  readonly destinations: Readonly<Record<string, string>>;
}

/** The outbox of one transaction: `tx.send` keeps messages, `flush` writes them in the transaction. */
export interface TransactionOutbox {
  send(message: OutboxSend, from?: { readonly key: string }): void;
  /** Writes the kept messages inside `tx`; returns their row ids. */
  flush(tx: Transaction): Promise<number[]>;
}
