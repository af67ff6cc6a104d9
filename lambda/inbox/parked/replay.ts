import { replayStatement } from '../modes/batch-modes.js';
import type { Transaction } from '../transport/transaction.js';
import { inboxTransaction } from '../modes/record-consumer.js';
import { toMessage } from '../prepare/prepare.js';
import { checkGatedStatement, replayGatedSql } from '../sql/claim.js';
import type { ConsumerParts } from '../handler/consumer-parts.js';
import type { ParkedMessage } from './store.js';

/**
 * Runs the effect of a parked message inside the replay's transaction, which already holds its claim, in
 * the consumer's mode; resolves with the ids of the outbox rows it wrote, for the replay to relay after its
 * commit.
 */
export async function replayEffect<Body, Raw>(parts: ConsumerParts<Body, Raw>, tx: Transaction, parked: ParkedMessage): Promise<readonly number[]> {
  const { resolved, source, records } = parts;
  const message = await toMessage(source.fromParked(parked), parked.key ?? parked.sqsMessageId, resolved.parse);
  const mode = resolved.mode;
  switch (mode.kind) {
    case 'transaction':
    case 'batch-transaction': {
      // The replay's sends commit with it, and go out right after.
      const writer = records.outbox(message);
      const inboxTx = inboxTransaction(tx, writer);
      await (mode.kind === 'transaction' ? mode.apply(inboxTx, message) : mode.applyBatch(inboxTx, [message]));
      return writer.flush(tx);
    }
    case 'statement': {
      const { sql, params } = mode.statement(message);
      const userSql = checkGatedStatement(sql, params, 'statement');
      await tx.execute(replayGatedSql(userSql), { ...params, inbox_key: message.key });
      return [];
    }
    case 'batch-statement':
      return replayStatement(tx, mode, message);
  }
}
