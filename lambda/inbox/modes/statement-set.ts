import { UNWRITABLE_BODY, batchClaimSql, batchGatedSql, checkGatedStatement, readBatchClaims, statementBound } from '../sql/claim.js';
import type { BatchClaimOutcome } from '../sql/claim.js';
import type { Transaction } from '../transport/transaction.js';
import type { SqlParams } from '../transport/values.js';
import type { InboxSession } from '../transport/session.js';
import { DatabaseCallError, PermanentError } from '../errors.js';
import { hex } from '../prepare/keys.js';
import type { InboxMessage, ResolvedMode } from '../handler/options.js';
import { CLAIM_ROW_BYTES, fittingRuns } from '../transport/limits.js';
import type { RequestLimits } from '../transport/limits.js';

/** A message of a claimed set, with its body hash. */
export interface SetMember<Body, Raw = unknown> {
  readonly message: InboxMessage<Body, Raw>;
  readonly sha256: Uint8Array;
}

/** A `statementBatch` set: the tables it claims in, the consumer it claims for, the mode's statement, and its members. */
export interface StatementSet<Body, Raw = unknown> {
  readonly tables: Parameters<typeof batchGatedSql>[0];
  readonly consumer: string;
  readonly mode: Extract<ResolvedMode<Body, Raw>, { kind: 'batch-statement' }>;
  readonly members: readonly SetMember<Body, Raw>[];
}

/** An `applyBatch` set to claim inside its transaction: the tables, the consumer, the members, and the bound on each statement. */
export interface ClaimedSet {
  readonly tables: Parameters<typeof batchClaimSql>[0];
  readonly consumer: string;
  readonly members: readonly SetMember<unknown, unknown>[];
  readonly callTimeoutMs: number;
}

/** One record of the claim's JSON input: the columns the batch SQL declares, its text as base64 (see batchGatedSql). */
export function batchInputRow(message: InboxMessage<unknown, unknown>, sha256: Uint8Array, position: number) {
  return {
    position,
    message_key: message.key,
    sha256: hex(sha256),
    body: bodyColumn(message.body),
    group_id: base64(message.groupId),
    sqs_message_id: base64(message.id),
    attempt: message.attempt,
  };
}

/** The `body` column: the base64 of the parsed body's JSON; SQL NULL for a body of null (a Kafka tombstone) or one JSON has no text for. */
function bodyColumn(body: unknown): string | null {
  if (body === null) return null;
  let json: string | undefined;
  try {
    json = JSON.stringify(body) as string | undefined;
  } catch {
    return UNWRITABLE_BODY;
  }
  return base64(json);
}

/** The base64 of a text's UTF-8; null for none. */
function base64(text: string | undefined): string | null {
  return text === undefined ? null : Buffer.from(text).toString('base64');
}

/**
 * The message's own permanent failure, when its statement was refused for reading a body JSON cannot
 * write ({@link UNWRITABLE_BODY}, which the refusal quotes): no redelivery can change that. Undefined for
 * any other failure.
 */
export function unwritableBodyRead(error: unknown): PermanentError | undefined {
  if (!(error instanceof DatabaseCallError) || !error.message.includes(UNWRITABLE_BODY)) return undefined;
  return new PermanentError(
    "statementBatch.sql reads body, and this message's body, as parse returned it, cannot be written as JSON: JSON.stringify refuses it " +
      '(it nests too deep, or holds a BigInt or a cycle), so the message can never be applied as it is. ' +
      'Fix: have parse return plain JSON values (a BigInt as its digits in a string), or leave body out of the statement',
    { cause: error },
  );
}

/**
 * Batch single-statement mode: ONE autocommit statement claims every member and applies the user's
 * set-based effect to those it claimed. Returns each member's claim, in member order. With `strict`, a
 * collision with an earlier claim fails the whole statement (see {@link batchGatedSql}).
 */
export async function statementSet<Body, Raw>(session: InboxSession, set: StatementSet<Body, Raw>, strict: boolean): Promise<BatchClaimOutcome[]> {
  const { sql, params } = setStatement(set, strict);
  const { rows } = await session.executeIdempotent(sql, params);
  return readBatchClaims(rows);
}

/**
 * Whether the statement of {@link statementSet} for these members fits in one of the transport's calls
 * (the Data API: a 4 MiB request, a 1 MiB answer). Ten 1 MiB bodies in one statement would be refused, and
 * every record would then run alone; the batch modes split such a set into runs that fit.
 */
export function statementSetFits<Body, Raw>(limits: RequestLimits, set: StatementSet<Body, Raw>): boolean {
  const { sql, params } = setStatement(set, true);
  return limits.fits(sql, params, set.members.length * CLAIM_ROW_BYTES);
}

function setStatement<Body, Raw>({ tables, consumer, mode, members }: StatementSet<Body, Raw>, strict: boolean): { sql: string; params: SqlParams } {
  const params = mode.params(members.map((member) => member.message));
  const userSql = checkGatedStatement(mode.sql, params, 'statementBatch.sql');
  return {
    sql: batchGatedSql(tables, userSql),
    params: {
      ...params,
      inbox_consumer: consumer,
      inbox_batch: members.map((member, position) => batchInputRow(member.message, member.sha256, position)),
      inbox_strict: strict,
    },
  };
}

/**
 * Batch transaction mode: claims every member inside `tx`, in one statement, or in one per run of members
 * when their keys, or their verdicts, would not fit in one call, bounding the transaction's later
 * statements below `callTimeoutMs`. Returns each member's claim, in member order.
 */
export async function claimSet(tx: Transaction, { tables, consumer, members, callTimeoutMs }: ClaimedSet): Promise<BatchClaimOutcome[]> {
  const sql = batchClaimSql(tables);
  const params = (run: readonly SetMember<unknown, unknown>[]): SqlParams => ({
    ...statementBound(callTimeoutMs),
    inbox_consumer: consumer,
    inbox_batch: run.map((member, position) => ({ position, message_key: member.message.key, sha256: hex(member.sha256) })),
  });
  const claims: BatchClaimOutcome[] = [];
  for (const run of fittingRuns(members, (run) => tx.limits.fits(sql, params(run), run.length * CLAIM_ROW_BYTES))) {
    const { rows } = await tx.execute(sql, params(run));
    claims.push(...readBatchClaims(rows));
  }
  return claims;
}
