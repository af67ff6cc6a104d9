import { batchClaimSql, batchGatedSql, checkGatedStatement, readBatchClaims } from '../claim.js';
import type { BatchClaimOutcome } from '../claim.js';
import type { Transaction } from '../data-api.js';
import type { InboxSession } from '../transport/session.js';
import { hex } from '../keys.js';
import type { InboxMessage, ResolvedMode } from '../options.js';

/** A message of a claimed set, with its body hash. */
export interface SetMember<Body, Raw = unknown> {
  readonly message: InboxMessage<Body, Raw>;
  readonly sha256: Uint8Array;
}

/** One record of the claim's JSON input: the columns the batch SQL declares. */
export function batchInputRow(message: InboxMessage<unknown, unknown>, sha256: Uint8Array, position: number) {
  return {
    position,
    message_key: message.key,
    sha256: hex(sha256),
    body: message.body ?? null,
    group_id: message.groupId ?? null,
    sqs_message_id: message.id ?? null,
    attempt: message.attempt,
  };
}

/**
 * Batch single-statement mode: ONE autocommit statement claims every member and applies the user's
 * set-based effect to those it claimed. Returns each member's claim, in member order. With `strict`, a
 * collision with an earlier claim fails the whole statement (see {@link batchGatedSql}).
 */
export async function statementSet<Body, Raw>(
  session: InboxSession,
  tables: Parameters<typeof batchGatedSql>[0],
  consumer: string,
  mode: Extract<ResolvedMode<Body, Raw>, { kind: 'batch-statement' }>,
  members: readonly SetMember<Body, Raw>[],
  strict: boolean,
): Promise<BatchClaimOutcome[]> {
  const params = mode.params(members.map((member) => member.message));
  // Stryker disable next-line StringLiteral: the statement was checked at cold start, so this check never throws
  const userSql = checkGatedStatement(mode.sql, params, 'statementBatch.sql');
  const { rows } = await session.execute(batchGatedSql(tables, userSql), {
    ...params,
    inbox_consumer: consumer,
    inbox_batch: members.map((member, position) => batchInputRow(member.message, member.sha256, position)),
    inbox_strict: strict,
  });
  return readBatchClaims(rows);
}

/** Batch transaction mode: claims every member in one statement inside `tx`. Returns each member's claim, in member order. */
export async function claimSet(
  tx: Transaction,
  tables: Parameters<typeof batchClaimSql>[0],
  consumer: string,
  members: readonly SetMember<unknown, unknown>[],
): Promise<BatchClaimOutcome[]> {
  const { rows } = await tx.execute(batchClaimSql(tables), {
    inbox_consumer: consumer,
    inbox_batch: members.map((member, position) => ({ position, message_key: member.message.key, sha256: hex(member.sha256) })),
  });
  return readBatchClaims(rows);
}
