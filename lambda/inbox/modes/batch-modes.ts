import { checkGatedStatement, replayBatchGatedSql } from '../sql/claim.js';
import type { ClaimOutcome } from '../sql/claim.js';
import type { Transaction } from '../transport/transaction.js';
import type { InboxSession } from '../transport/session.js';
import type { InboxMessage, ResolvedMode } from '../handler/options.js';
import { batchInputRow, statementSet, unwritableBodyRead } from './statement-set.js';
import type { SetMember, StatementSet } from './statement-set.js';

type BatchStatement<Body, Raw> = Extract<ResolvedMode<Body, Raw>, { kind: 'batch-statement' }>;

/** `statementBatch` with one record alone: its one-row statement, and the record's claim. */
export async function statementAlone<Body, Raw>(
  session: InboxSession,
  statement: Omit<StatementSet<Body, Raw>, 'members'>,
  member: SetMember<Body, Raw>,
): Promise<ClaimOutcome> {
  try {
    const [claim] = await statementSet(session, { ...statement, members: [member] }, false);
    return claim!;
  } catch (error) {
    throw unwritableBodyRead(error) ?? error;
  }
}

/**
 * `statementBatch`: a parked message's effect inside the replay's transaction, which holds its claim;
 * resolves with the ids of the outbox rows it wrote (none: a statement has no `tx.send`).
 */
export async function replayStatement<Body, Raw>(
  tx: Transaction,
  mode: BatchStatement<Body, Raw>,
  message: InboxMessage<Body, Raw>,
): Promise<readonly number[]> {
  const params = mode.params([message]);
  const userSql = checkGatedStatement(mode.sql, params, 'statementBatch.sql');
  await tx.execute(replayBatchGatedSql(userSql), { ...params, inbox_batch: [batchInputRow(message, new Uint8Array(), 0)] });
  return [];
}
