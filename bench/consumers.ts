import { createHash } from 'node:crypto';
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { DataApiSession } from '../lambda/inbox/transport/data-api/session.js';
import { inbox } from '../lambda/inbox/index.js';
import type { InboxLogger, InboxMetrics, InboxOptions } from '../lambda/inbox/index.js';
import type { DatabaseTarget } from '../lambda/inbox/transport/data-api/session.js';
import { dataApi } from '../lambda/inbox/transport/data-api/transport.js';
import type { InboxTransport, TransportDriver } from '../lambda/inbox/transport/transport.js';
import { batchHandler, consumeNaively } from '../demo/naive.js';
import type { Outcome } from '../lambda/inbox/lanes/lanes.js';
import { EFFECT_SQL } from './database.js';
import { IDEMPOTENCY_TABLE, dynamoDbClient } from './dynamodb.js';
import { keyOf } from './records.js';
import type { OrderBody } from './records.js';

/** Records (standard queue) or message groups (FIFO) in flight at once, the same for every variant. */
export const CONCURRENCY = 10;

/** The id of the variant that runs Powertools' own code, as the tables label it. */
export const POWERTOOLS_REAL = 'powertools (real)';

/** A handler invoked directly with an SQS event, as Lambda would call it. */
export type BenchHandler = (event: SQSEvent) => Promise<SQSBatchResponse>;

/**
 * Why records failed, by messageId, as the handler saw it. The variants' loggers write here instead of
 * being silenced, so that a failure in a run with no fault injected names its cause.
 */
export class FailureLog {
  private readonly causes = new Map<string, string>();

  record(messageId: unknown, cause: unknown): void {
    this.causes.set(String(messageId), describe(cause));
  }

  /** The cause logged for this record, and forgets it. */
  take(messageId: string): string {
    const cause = this.causes.get(messageId);
    this.causes.delete(messageId);
    return cause ?? 'no cause was logged for it';
  }
}

function describe(cause: unknown): string {
  if (cause instanceof Error) {
    const inner = cause.cause instanceof Error ? ` (caused by ${cause.cause.name}: ${cause.cause.message})` : '';
    return `${cause.name}: ${cause.message}${inner}`;
  }
  if (cause && typeof cause === 'object' && 'name' in cause && 'message' in cause) return `${String(cause.name)}: ${String(cause.message)}`;
  return String(cause);
}

/** Makes a variant's handler against one Data API server (and the local DynamoDB, for the variants that use it). */
export type HandlerFactory = (target: DatabaseTarget, failures: FailureLog, dynamodbEndpoint: string | undefined) => BenchHandler;

/** One consumer compared by the benchmark: a real handler over the real local Data API and PostgreSQL. */
export interface Variant {
  /** Short name used in tables and to tag its effect rows. */
  readonly id: string;
  readonly description: string;
  /** The mode, as the summary table names it. */
  readonly mode: string;
  /** Whether the dedup record and the effect commit together, or not at all ('none': no dedup record). */
  readonly atomic: 'yes' | 'NO' | 'none';
  /** Effect statements (and effect rows) per applied message. */
  readonly effectStatements: number;
  /** False for the bare handler: every delivery applies the effect, redeliveries included. */
  readonly dedup: boolean;
  /** Data API calls per message this variant is designed to make, in batches of 10. */
  readonly expectedCalls: { readonly fresh: number; readonly duplicate: number };
  /** DynamoDB calls per message it is designed to make (Powertools' persistence layer). @default none */
  readonly expectedDynamoDbCalls?: { readonly fresh: number; readonly duplicate: number };
  /** Whether its calls serve the whole batch (the batch modes) rather than each record, which run side by side. */
  readonly perBatch: boolean;
  /** Why its records failed. */
  readonly failures: FailureLog;
  /** The handler against the server `target` points at (one per server, made on first use). */
  handler(server: string, target: () => DatabaseTarget, dynamodbEndpoint?: string): BenchHandler;
}

function variant(fields: Omit<Variant, 'failures' | 'handler'>, make: HandlerFactory): Variant {
  const failures = new FailureLog();
  const handlers = new Map<string, BenchHandler>();
  return {
    ...fields,
    failures,
    handler(server, target, dynamodbEndpoint) {
      let handler = handlers.get(server);
      if (!handler) {
        handler = make(target(), failures, dynamodbEndpoint);
        handlers.set(server, handler);
      }
      return handler;
    },
  };
}

const silentMetrics: InboxMetrics = { addMetric() {}, publishStoredMetrics() {} };

function isTransport(target: DatabaseTarget | InboxTransport): target is InboxTransport {
  return typeof (target as Partial<TransportDriver>).open === 'function';
}

/** inbox()'s logger, writing the cause of every failed record to the variant's failure log. */
function failureLogger(failures: FailureLog): InboxLogger {
  const keep = (message: string, extra?: Record<string, unknown>) => {
    if (extra && 'messageId' in extra) failures.record(extra.messageId, extra.error ?? message);
  };
  return { debug() {}, info() {}, warn: keep, error: keep };
}

function inboxHandler(target: DatabaseTarget, failures: FailureLog, id: string, mode: Partial<InboxOptions<OrderBody>>): BenchHandler {
  const handler = inbox<OrderBody>({
    consumer: `bench-${id}`,
    // The wire table (transports.ts) hands in postgres(pool), a transport, where the factories type a Data API target.
    database: isTransport(target) ? target : dataApi(target),
    concurrency: CONCURRENCY,
    logger: failureLogger(failures),
    metrics: silentMetrics,
    ...mode,
  });
  return (event) => handler(event);
}

/** The batch modes write the whole batch's effect in one statement, from the messages as one JSON parameter. */
const BATCH_EFFECT_SQL =
  'INSERT INTO public.bench_effect (variant, order_id, step) SELECT :variant, o.order_id, 1 FROM jsonb_to_recordset(:orders::jsonb) AS o(order_id text)';

/**
 * The variants, in table order. Every one runs its records through the same batch runner with the same
 * concurrency, and applies the same effect, so that what differs is only the database path.
 */
export function variants(): Variant[] {
  return [
    bare('bare'),
    variant(
      {
        id: 'inbox-stmt',
        mode: 'single statement, per record',
        description: 'inbox(), single-statement mode: the claim and the gated effect in one autocommit statement per record',
        atomic: 'yes',
        effectStatements: 1,
        dedup: true,
        expectedCalls: { fresh: 1, duplicate: 0.1 },
        perBatch: false,
      },
      (target, failures) =>
        inboxHandler(target, failures, 'inbox-stmt', {
          statement: {
            sql: 'INSERT INTO public.bench_effect (variant, order_id, step) SELECT :variant, :orderId, 1 FROM claimed',
            params: (message) => ({ variant: 'inbox-stmt', orderId: message.body.orderId }),
          },
        }),
    ),
    variant(
      {
        id: 'inbox-batch-stmt',
        mode: 'single statement, batch',
        description: 'inbox(), batch single-statement mode (statementBatch): one autocommit statement claims the batch and applies its effect',
        atomic: 'yes',
        effectStatements: 1,
        dedup: true,
        expectedCalls: { fresh: 0.1, duplicate: 0.1 },
        perBatch: true,
      },
      (target, failures) =>
        inboxHandler(target, failures, 'inbox-batch-stmt', {
          statementBatch: {
            sql: "INSERT INTO public.bench_effect (variant, order_id, step) SELECT :variant, body->>'orderId', 1 FROM claimed",
            params: () => ({ variant: 'inbox-batch-stmt' }),
          },
        }),
    ),
    inboxTransaction('inbox-tx', 1),
    inboxTransaction('inbox-tx-k3', 3),
    variant(
      {
        id: 'inbox-batch-tx',
        mode: 'transaction, batch',
        description: 'inbox(), batch transaction mode (applyBatch): Begin, one claim for the batch, one set-based effect statement, Commit',
        atomic: 'yes',
        effectStatements: 1,
        dedup: true,
        expectedCalls: { fresh: 0.4, duplicate: 0.1 },
        perBatch: true,
      },
      (target, failures) =>
        inboxHandler(target, failures, 'inbox-batch-tx', {
          applyBatch: async (tx, messages) => {
            await tx.execute(BATCH_EFFECT_SQL, { variant: 'inbox-batch-tx', orders: messages.map((message) => ({ order_id: message.body.orderId })) });
          },
        }),
    ),
    naive('naive'),
    powertoolsStyle('powertools-style'),
    powertoolsReal(POWERTOOLS_REAL),
  ];
}

/** inbox() in transaction mode: Begin, claim, k effect statements, Commit. */
function inboxTransaction(id: string, k: number): Variant {
  return variant(
    {
      id,
      mode: k === 1 ? 'transaction, per record' : `transaction, per record, ${k} statements`,
      description: `inbox(), transaction mode, apply of ${k} statement${k === 1 ? '' : 's'}: Begin, claim, ${k === 1 ? 'the statement' : `${k} statements`}, Commit`,
      atomic: 'yes',
      effectStatements: k,
      dedup: true,
      expectedCalls: { fresh: k + 3, duplicate: 0.1 },
      perBatch: false,
    },
    (target, failures) =>
      inboxHandler(target, failures, id, {
        apply: async (tx, message) => {
          for (let step = 1; step <= k; step++) {
            await tx.execute(EFFECT_SQL, { variant: id, orderId: message.body.orderId, step });
          }
        },
      }),
  );
}

/** The effect and nothing else: one autocommit statement per delivery, redeliveries applied again. */
function bare(id: string): Variant {
  return variant(
    {
      id,
      mode: 'no inbox (the effect alone)',
      description: 'the effect alone, one autocommit statement per delivery, no dedup at all: the floor every mode is measured against',
      atomic: 'none',
      effectStatements: 1,
      dedup: false,
      expectedCalls: { fresh: 1, duplicate: 1 },
      perBatch: false,
    },
    (target, failures) =>
      benchHandler(target, failures, async (session, record) => {
        const body = JSON.parse(record.body) as OrderBody;
        await session.execute(EFFECT_SQL, { variant: id, orderId: body.orderId, step: 1 });
        return { kind: 'processed' };
      }),
  );
}

/**
 * The naive pattern (the demo's): check for a processed record, apply, record; three autocommit calls.
 * A crash or a lost response between the effect and the record applies the effect again on redelivery.
 */
function naive(id: string): Variant {
  return variant(
    {
      id,
      mode: 'naive',
      description: 'the naive pattern: SELECT processed?, apply, INSERT processed (3 autocommit calls)',
      atomic: 'NO',
      effectStatements: 1,
      dedup: true,
      expectedCalls: { fresh: 3, duplicate: 1 },
      perBatch: false,
    },
    (target, failures) =>
      benchHandler(target, failures, async (session, record) => {
        const outcome = await consumeNaively(
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
        );
        if (outcome.kind === 'failed') throw outcome.error;
        return outcome;
      }),
  );
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
function powertoolsStyle(id: string): Variant {
  return variant(
    {
      id,
      mode: 'Powertools idempotency protocol',
      description: "Powertools idempotency's protocol: conditional INSERT of an INPROGRESS record, apply, UPDATE to COMPLETED (3 autocommit calls)",
      atomic: 'NO',
      effectStatements: 1,
      dedup: true,
      expectedCalls: { fresh: 3, duplicate: 1 },
      perBatch: false,
    },
    (target, failures) =>
      benchHandler(target, failures, async (session, record) => {
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
  );
}

/** What the Powertools handler tells the utility of the time left: its in-progress expiry is now plus this. */
export const POWERTOOLS_REMAINING_MS = 60_000;

/**
 * Powertools itself, as its docs write an idempotent SQS batch handler (bench/handlers/powertools-consumer.ts
 * is the same handler, bundled): `BatchProcessor` + `processPartialResponse` (records in parallel), each
 * record through `makeIdempotent` with `DynamoDBPersistenceLayer` on the local DynamoDB, keyed on the
 * producer's `idempotency-key` attribute; the effect is the same INSERT over the Data API as every
 * variant's. Per new message: PutItem (INPROGRESS, conditional), the effect, UpdateItem (COMPLETED); per
 * duplicate: the PutItem alone, whose failed condition returns the COMPLETED record. Not atomic: the record
 * lives in DynamoDB and the effect in Aurora, so a worker that dies between the effect and the UpdateItem
 * leaves INPROGRESS, and once the in-progress expiry passes the redelivery applies the effect again.
 */
export function powertoolsReal(id: string, remainingMs = POWERTOOLS_REMAINING_MS): Variant {
  return variant(
    {
      id,
      mode: 'Powertools idempotency + batch, DynamoDB record',
      description:
        "Powertools' makeIdempotent + BatchProcessor with DynamoDBPersistenceLayer (dynalite): PutItem INPROGRESS, the effect over the Data API, UpdateItem COMPLETED",
      atomic: 'NO',
      effectStatements: 1,
      dedup: true,
      expectedCalls: { fresh: 1, duplicate: 0 },
      expectedDynamoDbCalls: { fresh: 2, duplicate: 1 },
      perBatch: false,
    },
    (target, failures, dynamodbEndpoint) => {
      if (dynamodbEndpoint === undefined) throw new Error(`${id} needs the local DynamoDB's endpoint`);
      const session = new DataApiSession(target, { callTimeoutMs: 10_000, resumeDelaysMs: [] });
      const processor = new BatchProcessor(EventType.SQS);
      const persistenceStore = new DynamoDBPersistenceLayer({ tableName: IDEMPOTENCY_TABLE, awsSdkV3Client: dynamoDbClient(dynamodbEndpoint) });
      const config = new IdempotencyConfig({ eventKeyJmesPath: 'messageAttributes."idempotency-key".stringValue' });
      const processIdempotently = makeIdempotent(
        async (record: SQSRecord) => {
          const body = JSON.parse(record.body) as OrderBody;
          await session.execute(EFFECT_SQL, { variant: id, orderId: body.orderId, step: 1 });
        },
        { persistenceStore, config },
      );
      const recordHandler = async (record: SQSRecord) => {
        try {
          await processIdempotently(record);
        } catch (error) {
          failures.record(record.messageId, error);
          throw error;
        }
      };
      return async (event) => {
        const context = lambdaContext(remainingMs);
        config.registerLambdaContext(context);
        return processPartialResponse(event, recordHandler, processor, { context });
      };
    },
  );
}

/** The Lambda context Powertools reads: the function's name and the time left. */
export function lambdaContext(remainingMs: number): Context {
  return {
    functionName: 'bench-powertools',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:us-east-1:123456789012:function:bench-powertools',
    memoryLimitInMB: '1024',
    awsRequestId: createHash('md5').update(String(Math.random())).digest('hex'),
    logGroupName: '/aws/lambda/bench-powertools',
    logStreamName: 'bench',
    callbackWaitsForEmptyEventLoop: false,
    getRemainingTimeInMillis: () => remainingMs,
    done: () => {},
    fail: () => {},
    succeed: () => {},
  };
}

/**
 * A batch handler for the hand-written variants: the same batch runner inbox() uses (FIFO groups in order,
 * CONCURRENCY in flight), one Data API session per invocation, partial batch failures, and the cause of
 * every failed record in the variant's failure log.
 */
function benchHandler(target: DatabaseTarget, failures: FailureLog, consume: (session: DataApiSession, record: SQSRecord) => Promise<Outcome>): BenchHandler {
  return (event) => {
    const session = new DataApiSession(target, { callTimeoutMs: 10_000, resumeDelaysMs: [] });
    return batchHandler(
      async (record) => {
        try {
          return await consume(session, record);
        } catch (error) {
          failures.record(record.messageId, error);
          return { kind: 'failed', error: error instanceof Error ? error : new Error(String(error)) };
        }
      },
      { concurrency: CONCURRENCY },
    )(event);
  };
}
