import { createHash } from 'node:crypto';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { DataApiSession, inbox } from '../lambda/inbox/index.js';
import type { DatabaseTarget, InboxLogger, InboxMetrics } from '../lambda/inbox/index.js';
import { batchHandler, consumeNaively } from '../local/naive.js';
import type { Outcome } from '../lambda/inbox/batch.js';
import { EFFECT_SQL } from './database.js';
import type { BenchDatabase } from './database.js';
import { keyOf } from './records.js';
import type { OrderBody } from './records.js';

/** Records (standard queue) or message groups (FIFO) in flight at once, the same for every variant. */
export const CONCURRENCY = 10;

/** A handler invoked directly with an SQS event, as Lambda would call it. */
export type BenchHandler = (event: SQSEvent) => Promise<SQSBatchResponse>;

/** One consumer compared by the benchmark: a real handler over the real local Data API and PostgreSQL. */
export interface Variant {
  /** Short name used in tables and to tag its effect rows. */
  readonly id: string;
  readonly description: string;
  /** Whether the dedup record and the effect commit together, or not at all. */
  readonly atomic: boolean;
  /** Effect statements (and effect rows) per new message. */
  readonly effectStatements: number;
  /** Data API calls per message this variant is designed to make. */
  readonly expectedCalls: { readonly fresh: number; readonly duplicate: number };
  readonly handler: BenchHandler;
}

const silentLogger: InboxLogger = { debug() {}, info() {}, warn() {}, error() {} };
const silentMetrics: InboxMetrics = { addMetric() {}, publishStoredMetrics() {} };

/**
 * The variants, in table order. Every one runs its records through the same batch runner with the same
 * concurrency, and applies the same effect, so that what differs is only the database path.
 */
export function variants(database: BenchDatabase): Variant[] {
  return [
    inboxTransaction(database.target(), 'inbox-tx', 1),
    inboxTransaction(database.target(), 'inbox-tx-k3', 3),
    inboxStatement(database.target(), 'inbox-stmt'),
    naive(database.target(), 'naive'),
    powertoolsStyle(database.target(), 'powertools-style'),
  ];
}

/** inbox() in transaction mode: Begin, claim, k effect statements, Commit. A duplicate: Begin, claim, Rollback. */
function inboxTransaction(target: DatabaseTarget, id: string, k: number): Variant {
  const handler = inbox<OrderBody>({
    consumer: `bench-${id}`,
    database: target,
    concurrency: CONCURRENCY,
    logger: silentLogger,
    metrics: silentMetrics,
    apply: async (tx, message) => {
      for (let step = 1; step <= k; step++) {
        await tx.execute(EFFECT_SQL, { variant: id, orderId: message.body.orderId, step });
      }
    },
  });
  return {
    id,
    description: `inbox(), transaction mode, apply of ${k} statement${k === 1 ? '' : 's'}`,
    atomic: true,
    effectStatements: k,
    expectedCalls: { fresh: k + 3, duplicate: 3 },
    handler: (event) => handler(event),
  };
}

/** inbox() in single-statement mode: the claim and the gated effect in one autocommit call. */
function inboxStatement(target: DatabaseTarget, id: string): Variant {
  const handler = inbox<OrderBody>({
    consumer: `bench-${id}`,
    database: target,
    concurrency: CONCURRENCY,
    logger: silentLogger,
    metrics: silentMetrics,
    statement: {
      sql: 'INSERT INTO public.bench_effect (variant, order_id, step) SELECT :variant, :orderId, 1 FROM claimed',
      params: (message) => ({ variant: id, orderId: message.body.orderId }),
    },
  });
  return {
    id,
    description: 'inbox(), single-statement mode (claim + gated effect in one statement)',
    atomic: true,
    effectStatements: 1,
    expectedCalls: { fresh: 1, duplicate: 1 },
    handler: (event) => handler(event),
  };
}

/**
 * The naive pattern (the demo's): check for a processed record, apply, record; three autocommit calls.
 * A crash or a lost response between the effect and the record applies the effect again on redelivery.
 */
function naive(target: DatabaseTarget, id: string): Variant {
  return {
    id,
    description: 'the naive pattern: SELECT processed?, apply, INSERT processed (3 autocommit calls)',
    atomic: false,
    effectStatements: 1,
    expectedCalls: { fresh: 3, duplicate: 1 },
    handler: benchHandler(target, (session, record) =>
      consumeNaively(
        {
          session,
          processedTable: 'public.bench_naive_processed',
          keyOf,
          effect: async (record) => {
            const body = JSON.parse(record.body) as OrderBody;
            await session.execute(EFFECT_SQL, { variant: id, orderId: body.orderId, step: 1 });
          },
        },
        record,
      ),
    ),
  };
}

/**
 * Powertools' conditional PutItem, in SQL: take the record when it is absent, expired, or an in-progress
 * record whose in-progress expiry passed; otherwise report the existing record's status in the same call,
 * as `ReturnValuesOnConditionCheckFailure: ALL_OLD` does.
 */
const PUT_IN_PROGRESS = `WITH put AS (
    INSERT INTO public.bench_idempotency AS r (id, status, expiration, in_progress_expiration)
    VALUES (:id, 'INPROGRESS', :expiration, :inProgressExpiration)
    ON CONFLICT (id) DO UPDATE
      SET status = 'INPROGRESS', expiration = excluded.expiration,
          in_progress_expiration = excluded.in_progress_expiration, data = NULL
      WHERE r.expiration < :nowSeconds OR (r.status = 'INPROGRESS' AND r.in_progress_expiration < :nowMs)
    RETURNING true AS acquired
  )
  SELECT coalesce((SELECT acquired FROM put), false) AS acquired,
         (SELECT status FROM public.bench_idempotency WHERE id = :id) AS existing_status`;
const COMPLETE = "UPDATE public.bench_idempotency SET status = 'COMPLETED', data = :data WHERE id = :id";
const DELETE_RECORD = 'DELETE FROM public.bench_idempotency WHERE id = :id';

/** Powertools' default expiresAfterSeconds. */
const EXPIRES_AFTER_SECONDS = 3600;
/** What Powertools takes from context.getRemainingTimeInMillis() for the in-progress expiry. */
const REMAINING_MS = 60_000;

/**
 * The Powertools idempotency utility's protocol, with its record kept in the same PostgreSQL (Powertools
 * itself uses DynamoDB or Redis): INSERT an INPROGRESS record (conditional, autocommit), apply the effect
 * (autocommit), UPDATE the record to COMPLETED with the result (autocommit); on a throw, DELETE the record.
 * Not atomic: a crash after the effect leaves INPROGRESS, which expires and lets the effect run again.
 */
function powertoolsStyle(target: DatabaseTarget, id: string): Variant {
  return {
    id,
    description: "Powertools idempotency's protocol: conditional INSERT of an INPROGRESS record, apply, UPDATE to COMPLETED (3 autocommit calls)",
    atomic: false,
    effectStatements: 1,
    expectedCalls: { fresh: 3, duplicate: 1 },
    handler: benchHandler(target, async (session, record) => {
      // Powertools stores `<function name>#<md5 of the key>`.
      const recordId = `bench-${id}#${createHash('md5').update(keyOf(record)).digest('hex')}`;
      const body = JSON.parse(record.body) as OrderBody;
      const now = Date.now();
      const nowSeconds = Math.floor(now / 1000);
      const { rows } = await session.execute(PUT_IN_PROGRESS, {
        id: recordId,
        expiration: nowSeconds + EXPIRES_AFTER_SECONDS,
        inProgressExpiration: now + REMAINING_MS,
        nowSeconds,
        nowMs: now,
      });
      const row = rows[0];
      if (row?.acquired !== true) {
        // COMPLETED: Powertools returns the stored result without running the function.
        if (row?.existing_status === 'COMPLETED') return { kind: 'duplicate' };
        throw new Error('IdempotencyAlreadyInProgressError: another invocation holds this record');
      }
      try {
        await session.execute(EFFECT_SQL, { variant: id, orderId: body.orderId, step: 1 });
      } catch (error) {
        await session.execute(DELETE_RECORD, { id: recordId }).catch(() => {});
        throw error;
      }
      await session.execute(COMPLETE, { id: recordId, data: JSON.stringify({ shipped: body.orderId }) });
      return { kind: 'processed' };
    }),
  };
}

/**
 * A batch handler for the hand-written variants: the same batch runner inbox() uses (FIFO groups in order,
 * CONCURRENCY in flight), one Data API session per invocation, partial batch failures.
 */
function benchHandler(target: DatabaseTarget, consume: (session: DataApiSession, record: SQSRecord) => Promise<Outcome>): BenchHandler {
  return (event) => {
    const session = new DataApiSession(target, { callTimeoutMs: 10_000, resumeDelaysMs: [] });
    return batchHandler(async (record) => {
      try {
        return await consume(session, record);
      } catch (error) {
        return { kind: 'failed', error: error instanceof Error ? error : new Error(String(error)) };
      }
    }, { concurrency: CONCURRENCY })(event);
  };
}
