import type { BatchPlan, Outcome } from '../lanes/lanes.js';
import { checkGatedStatement, replayBatchGatedSql } from '../sql/claim.js';
import type { ClaimOutcome } from '../sql/claim.js';
import type { Transaction } from '../transport/transaction.js';
import type { SqlParams } from '../transport/values.js';
import type { InboxSession } from '../transport/session.js';
import { InboxConfigError } from '../errors.js';
import { STATEMENT_OPTIONS } from './mode-options.js';
import { described, refuseUnknownKeys } from '../handler/option-checks.js';
import type { InboxMessage, ResolvedMode, ResolvedOptions } from '../handler/options.js';
import type { PreparedRecord } from '../prepare/prepare.js';
import type { InboxTables } from '../sql/schema.js';
import type { BatchTally, InboxLogger } from '../telemetry/telemetry.js';
import { BatchModeRunner } from './batch-mode-runner.js';
import type { RecordConsumer } from './per-record.js';
import { batchInputRow, statementSet, unwritableBodyRead } from './statement-set.js';

type BatchStatement<Body, Raw> = Extract<ResolvedMode<Body, Raw>, { kind: 'batch-statement' }>;

/** Runs a batch's records as one set; what {@link BatchModeRunner} does. */
export interface SetRunner<Body, Raw> {
  run(
    prepared: readonly PreparedRecord<Body, Raw>[],
    plan: BatchPlan,
    session: InboxSession,
    tally: BatchTally,
    timed: (run: () => Promise<Outcome>) => Promise<Outcome>,
  ): Promise<Outcome[]>;
}

/**
 * The code of the batch modes (`applyBatch`, `statementBatch`) that the per-record modes never run. The
 * handlers of `sqs-inbox/batch` give it to the consumer core; those of `sqs-inbox` do not, so that a
 * per-record consumer's bundle leaves it out.
 */
export interface BatchModes {
  /** The `statementBatch` option, validated: `{ sql, params? }`. */
  statementOption<Body, Raw>(given: unknown): ResolvedMode<Body, Raw>;
  /** The runner of the batch's set. */
  runner<Body, Raw>(options: ResolvedOptions<Body, Raw>, tables: InboxTables, consumer: RecordConsumer<Body, Raw>, logger: InboxLogger): SetRunner<Body, Raw>;
  /** `statementBatch` with one record alone: its one-row statement, and the record's claim. */
  statementAlone<Body, Raw>(
    session: InboxSession,
    tables: InboxTables,
    consumer: string,
    mode: BatchStatement<Body, Raw>,
    message: InboxMessage<Body, Raw>,
    sha256: Uint8Array,
  ): Promise<ClaimOutcome>;
  /**
   * `statementBatch`: a parked message's effect inside the replay's transaction, which holds its claim;
   * resolves with the ids of the outbox rows it wrote (none: a statement has no `tx.send`).
   */
  replayStatement<Body, Raw>(tx: Transaction, mode: BatchStatement<Body, Raw>, message: InboxMessage<Body, Raw>): Promise<readonly number[]>;
}

export const BATCH_MODES: BatchModes = {
  statementOption: batchStatement,
  runner: (options, tables, consumer, logger) => new BatchModeRunner(options, tables, consumer, logger),
  async statementAlone(session, tables, consumer, mode, message, sha256) {
    try {
      const [claim] = await statementSet(session, tables, consumer, mode, [{ message, sha256 }], false);
      return claim!;
    } catch (error) {
      throw unwritableBodyRead(error) ?? error;
    }
  },
  async replayStatement(tx, mode, message) {
    const params = mode.params([message]);
    const userSql = checkGatedStatement(mode.sql, params, 'statementBatch.sql');
    await tx.execute(replayBatchGatedSql(userSql), { ...params, inbox_batch: [batchInputRow(message, new Uint8Array(), 0)] });
    return [];
  },
};

function batchStatement<Body, Raw>(given: unknown): ResolvedMode<Body, Raw> {
  if (!given || typeof given !== 'object' || Array.isArray(given)) {
    throw new InboxConfigError(
      'statementBatch',
      `must be { sql, params?: (messages) => params }, e.g. { sql: "INSERT INTO shipments (order_id) SELECT body->>'orderId' FROM claimed" }; got ${described(given)}`,
    );
  }
  refuseUnknownKeys(given, STATEMENT_OPTIONS, 'statementBatch');
  const { sql, params } = given as { sql: unknown; params: unknown };
  if (params !== undefined && typeof params !== 'function') {
    throw new InboxConfigError('statementBatch.params', `must be a function (messages) => ({ name: value, ... }); got ${described(params)}`);
  }
  if (typeof sql !== 'string') {
    throw new InboxConfigError('statementBatch.sql', `must be a string; got ${described(sql)}`);
  }
  const values = (params ?? (() => ({}))) as (messages: readonly InboxMessage<Body, Raw>[]) => SqlParams;
  return { kind: 'batch-statement', sql, params: values };
}
