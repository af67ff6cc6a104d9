import type { Transaction } from '../transport/transaction.js';
import type { InboxSession } from '../transport/session.js';
import type { InboxTables } from '../sql/schema.js';
import type { InboxLogger } from '../telemetry/telemetry.js';
import type { OutboxSend } from './outbox-message.js';
import type { OutboxTransport, RelayReport } from './relay.js';

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

/**
 * The outbox's code, carried by the option that `outbox()` and `sqsOutbox()` (package export
 * `sqs-inbox/outbox`) make, so that a consumer without an outbox bundles none of it.
 */
export interface OutboxRuntime {
  /** The outbox of one transaction; `only` is the message a send belongs to when it names none. */
  writer(config: OutboxConfig, only: { readonly key: string } | undefined): TransactionOutbox;
  /**
   * Sends the rows `ids` that committed transactions wrote, and marks them sent, when `timeLeft`. Never
   * throws: the records committed, so they succeed whatever happens here; what is not sent stays for the
   * sweeper, and `logger` says so.
   */
  relay(
    session: InboxSession,
    tables: InboxTables,
    transport: OutboxTransport,
    ids: readonly number[],
    timeLeft: boolean,
    logger: InboxLogger,
  ): Promise<RelayReport>;
  /** The option's `destinations`, checked at cold start: names mapped to queue URLs. */
  checkDestinations(destinations: unknown): Readonly<Record<string, string>>;
  /** The destinations INBOX_DESTINATIONS names, when the option gives none. */
  environmentDestinations(env: NodeJS.ProcessEnv): Readonly<Record<string, string>>;
}

/**
 * Where the outbox option keeps its {@link OutboxRuntime}: a registered symbol, so the option is still
 * recognised when the package is loaded twice (its ESM and CommonJS builds side by side), and so that the
 * option's own keys stay `transport` and `destinations`.
 */
export const OUTBOX_RUNTIME: unique symbol = Symbol.for('sqs-inbox.outbox-runtime');
