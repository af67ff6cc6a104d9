import type { SQSRecord } from 'aws-lambda';
import { dataApi } from '../transport/data-api/transport.js';
import { driverOf } from '../transport/transport.js';
import type { InboxTransport, TransportDriver } from '../transport/transport.js';
import type { SqlParams } from '../transport/values.js';
import { CONSUMER_NAME_PATTERN, CONSUMER_NAME_RULE, ENV_CONSUMER } from '../contract.js';
import { InboxConfigError } from '../errors.js';
import { described, oneOf, plainChoice, refuseUnknownKeys } from './option-checks.js';
import { STATEMENT_OPTIONS, resolveMode } from '../modes/mode-options.js';
import type { InboxLogger, InboxMetrics, BatchSummary } from '../telemetry/telemetry.js';
import type { OutboxOptions, OutboxTransport } from '../outbox/relay.js';
import { checkDestinations, environmentDestinations } from '../outbox/outbox-destinations.js';
import type { InboxSource } from '../sources/source.js';

/** The message `apply` and `statement` receive. */
export interface InboxMessage<Body = unknown, Raw = SQSRecord> {
  /** The idempotency key the claim used. */
  readonly key: string;
  /** The parsed body. */
  readonly body: Body;
  /** The record as Lambda delivered it: an SQS record, or a Kinesis, DynamoDB Streams or Kafka record. */
  readonly record: Raw;
  /**
   * The record's identifier: the SQS messageId, the stream's sequence number, or Kafka's
   * `topic-partition@offset`.
   */
  readonly id: string | undefined;
  /** SQS: ApproximateReceiveCount, 1 on the first delivery. The streams do not count deliveries: 1. */
  readonly attempt: number;
  /** The SQS MessageGroupId, if any; on a stream, the shard id or Kafka's topic-partition. */
  readonly groupId: string | undefined;
}

/** A single-statement mode statement: SQL that must gate its effect on the CTE `claimed`. */
export interface GatedStatement {
  /**
   * One statement with named `:parameters`. sqs-inbox prepends the claim as the CTE `claimed` (one row when
   * the claim inserted it, none for a duplicate); the statement must read `claimed` so that a duplicate
   * applies nothing.
   */
  readonly sql: string;
  /** Values of the statement's `:parameters`. @default - no parameters */
  readonly params?: SqlParams | undefined;
}

/** The transaction that `apply` and `applyBatch` run in. */
export interface InboxTransaction {
  /** The transaction's id: the Data API's, or the wire transport's own. */
  readonly transactionId: string;
  /**
   * Runs one statement in this transaction: its `rows` (of a SELECT or of `RETURNING`, keyed by column name,
   * each value typed by its column) and how many rows it inserted, updated or deleted (`updated`).
   */
  execute(sql: string, params?: SqlParams): Promise<{ readonly rows: Record<string, unknown>[]; readonly updated: number }>;
  /** Runs one statement once per parameter set in this transaction, in one call where the transport has one (the Data API's BatchExecuteStatement); returns how many sets ran. */
  executeBatch(sql: string, paramSets: readonly SqlParams[]): Promise<number>;
  /**
   * Hands a message on, exactly once: it is written to the outbox in this transaction (so it goes out only
   * if the claim and the effect commit) and sent after the commit under a stable idempotency key derived
   * from this message's key and the send's position (a re-run after a rollback sends the same key, and
   * the next consumer's inbox drops a re-send). Needs the consumer's `outbox` option. In `applyBatch` with
   * more than one message, pass the message the send belongs to as `from`.
   */
  send(
    message: {
      /**
       * Where to: a queue URL (`https://sqs.<region>.amazonaws.com/<account>/<name>`), or the name of one of
       * the outbox's `destinations`.
       */
      readonly to: string;
      /** The body; an object is sent as its JSON. */
      readonly body: string | object;
      /** The MessageGroupId: required by a FIFO destination. */
      readonly groupId?: string | undefined;
      /** String message attributes (at most 9: the idempotency key takes the tenth). */
      readonly attributes?: Readonly<Record<string, string>> | undefined;
      /** Per-message delay, standard queues only. */
      readonly delaySeconds?: number | undefined;
    },
    from?: { readonly key: string },
  ): void;
}

/**
 * Batch single-statement mode: ONE autocommit statement for the whole batch. sqs-inbox prepends the
 * batch's claim as the CTE `claimed`: one row per message this statement claimed, none for duplicates,
 * with the columns `message_key text`, `body jsonb` (what `parse` returned, as JSON), `group_id text`,
 * `sqs_message_id text`, `attempt int` and `position int` (the record's place in the batch, for order).
 */
export interface GatedBatchStatement<Body = unknown, Raw = SQSRecord> {
  /** One statement that reads `claimed`, e.g. `INSERT INTO shipments (order_id) SELECT body->>'orderId' FROM claimed`. */
  readonly sql: string;
  /** Values of the statement's own `:parameters`, from the messages of the batch. @default - no parameters */
  readonly params?: ((messages: readonly InboxMessage<Body, Raw>[]) => SqlParams) | undefined;
}

/** Which records the batch-level duplicate filter looks up before any transaction. */
export type DuplicateFilter = 'auto' | 'always' | 'never';

/** Options of every inbox consumer, whatever its source; `Raw` is the source's record type. */
export interface ConsumerOptions<Body = unknown, Raw = SQSRecord> {
  /**
   * The consumer name stored with each claim; one inbox table can serve many consumers. Never rename a
   * live consumer: its claims would no longer match its redeliveries.
   * @default process.env.INBOX_CONSUMER (set by the InboxConsumer construct)
   */
  readonly consumer?: string | undefined;
  /**
   * The transport to the database the inbox table lives in: `dataApi({ resourceArn?, secretArn?, database?,
   * client? })`, `postgres(pool)` from `sqs-inbox/postgres`, or `dsql({ ... })` from `sqs-inbox/dsql`.
   * @default dataApi(): the Data API, every setting from the INBOX_* environment
   */
  readonly database?: InboxTransport | undefined;
  /**
   * Transaction mode: runs only when the claim inserted the row, inside the claim's transaction. A throw
   * rolls back the claim and the effect together.
   */
  readonly apply?: ((tx: InboxTransaction, message: InboxMessage<Body, Raw>) => Promise<void>) | undefined;
  /**
   * Single-statement mode: ONE autocommit statement that claims and applies. It sees the claim as the CTE
   * `claimed` and must gate its effect on it. A constant `{ sql, params(message) }` is checked once at cold
   * start; a function is checked the first time it returns each SQL text.
   */
  readonly statement?:
    | ((message: InboxMessage<Body, Raw>) => GatedStatement)
    | { readonly sql: string; readonly params: (message: InboxMessage<Body, Raw>) => SqlParams }
    | undefined;
  /**
   * Batch transaction mode: ONE transaction for the batch. It claims every record in one statement and
   * calls `applyBatch` once with the messages it claimed (duplicates left out), in batch order. Write the
   * effect set-based: pass the messages as one JSON parameter (`jsonb_to_recordset(:orders::jsonb)`), or
   * use `tx.executeBatch`. When the batch's transaction fails, each record runs alone in a transaction of
   * its own (`applyBatch` with one message), so a bad record fails alone.
   */
  readonly applyBatch?: ((tx: InboxTransaction, messages: readonly InboxMessage<Body, Raw>[]) => Promise<void>) | undefined;
  /**
   * Batch single-statement mode: ONE autocommit statement claims the whole batch and applies its effect,
   * which reads the CTE `claimed` (see {@link GatedBatchStatement}). When it fails, each record runs alone
   * through the same statement.
   */
  readonly statementBatch?: GatedBatchStatement<Body, Raw> | undefined;
  /**
   * Looks up, in one autocommit call before any transaction, which of the batch's keys are already
   * claimed, and settles those duplicates without a transaction. `'auto'` does it when the batch holds a
   * redelivery (SQS: ApproximateReceiveCount above 1; any source: a key this handler instance met in a
   * recent invocation), where duplicates are likely, except in `statementBatch` mode, whose one statement
   * settles duplicates anyway. A duplicate the filter misses is still caught
   * by its claim.
   * @default 'auto'
   */
  readonly duplicateFilter?: 'auto' | 'always' | 'never' | undefined;
  /**
   * Parses the body (SQS: the body; Kinesis: the decoded `data`; Kafka: the decoded `value`; DynamoDB
   * Streams: the change as JSON). A throw (or a rejected promise: an async parse is awaited) is a
   * permanent `ParseError`, unless it is a temporary error of the inbox's own classes (parseWith's
   * `SchemaValidatorError`), which keeps its class: the record fails and is delivered again.
   * @default JSON.parse (DynamoDB Streams: the change with its images unmarshalled; Kafka: null for a tombstone)
   */
  readonly parse?: ((body: string, record: Raw) => Body | Promise<Body>) | undefined;
  /**
   * Transaction modes: where a record's claim goes. `'before-apply'` claims in a statement of its own
   * before `apply` runs: k + 3 Data API calls for an effect of k statements, and nothing of `apply` runs for
   * a duplicate. `withFirstStatement` (from `sqs-inbox`, which carries its code) sends the claim with the
   * effect's first statement (a data-modifying CTE, whose unique violation on the inbox key means a
   * duplicate): k + 2 calls, one round trip less per message. The code of `apply` before its first
   * statement then also runs for a duplicate the batch's duplicate filter did not settle (its statements
   * never apply), and such a duplicate costs 4 calls instead of 3.
   * @example
   * inbox({ consumer: 'order-worker', claim: 'with-first-statement', apply });
   * @default 'before-apply'
   */
  readonly claim?: 'before-apply' | 'with-first-statement' | undefined;
  /**
   * Records (standard queue) or lanes (FIFO message groups, shards, partitions) in flight at once. A FIFO
   * batch with `fifo: { onFailure: 'stop-batch' }` runs one record at a time whatever this says.
   * @default 10
   */
  readonly concurrency?: number | undefined;
  /**
   * What happens to a record that fails with a {@link PermanentError} (a throw of yours, a {@link ParseError},
   * or one the inbox raises, named in the log and the parked row: `KeyError`, `BodyTooLargeError`, `KeyCollisionError`):
   * `'retry'` reports it failed, so SQS redelivers it until it lands in the dead-letter queue; `'park'`
   * stores it in the inbox's parked-message table,
   * reports it succeeded, and lets you replay it later through `parkedMessages(handler)`.
   * @example
   * inbox({ consumer: 'order-worker', onPermanentError: 'park', apply });
   * @default 'retry'
   */
  readonly onPermanentError?: 'retry' | 'park' | undefined;
  /** The inbox's PostgreSQL schema. @default 'inbox' */
  readonly schema?: string | undefined;
  /** Abort one Data API call after this long; the record then fails as ambiguous. @default 10_000 */
  readonly callTimeoutMs?: number | undefined;
  /**
   * No record starts when the Lambda has less than this left; such records are reported failed, unstarted.
   * @default the smaller of callTimeoutMs * 2 (a record that starts can still run its claim and commit)
   * and half the time the invocation started with (so a short function timeout still runs records)
   */
  readonly deadlineMarginMs?: number | undefined;
  /** Waits before retrying a call refused while Aurora resumes from auto-pause. @default [250, 500, 1000, 2000, 4000, 8000] */
  readonly resumeDelaysMs?: readonly number[] | undefined;
  /**
   * Where failed, parked and colliding records are logged.
   * @default a logger that writes the JSON lines a Powertools `Logger` with serviceName = consumer writes,
   * read from the same environment, without bundling the utility (pass a `Logger` for its other features)
   */
  readonly logger?: InboxLogger | undefined;
  /**
   * Where each invocation's counts and latencies are published, as CloudWatch embedded metrics.
   * @default a Powertools Metrics in namespace process.env.POWERTOOLS_METRICS_NAMESPACE, else
   * `SqsInbox`, with serviceName = consumer
   */
  readonly metrics?: InboxMetrics | undefined;
  /**
   * The outbox behind `tx.send`: a transport and destination names, made by `sqsOutbox({ client })` from
   * `sqs-inbox/outbox`, or for a transport of yours `{ transport: { send: async (rows) => ... } }`. After the batch, the handler sends what its committed transactions wrote
   * (within the deadline); the sweeper sends what is left. Transaction modes only.
   * @default none: `tx.send` throws, naming this option
   */
  readonly outbox?: OutboxOptions | undefined;
  /** Told what each invocation did, after its metrics are published. */
  readonly onBatch?: ((summary: BatchSummary) => void) | undefined;
  /**
   * The clock, in epoch milliseconds, injected so that tests can drive latencies and deadlines.
   * @default Date.now
   */
  readonly now?: (() => number) | undefined;
  /**
   * Waits between retries of a call refused during auto-pause; injected so that tests need not wait.
   * @default a setTimeout promise
   */
  readonly sleep?: ((ms: number) => Promise<void>) | undefined;
}

/** Options of {@link inbox}: an SQS consumer. */
export interface InboxOptions<Body = unknown> extends ConsumerOptions<Body, SQSRecord> {
  /**
   * How each record's idempotency key is chosen: the key the claim stores. `'auto'`: the `idempotency-key`
   * attribute (the producer's), else the FIFO deduplication id, else the message id; `'message-id'`,
   * `'deduplication-id'`, `{ attribute }` (a message attribute), or a function of the record.
   * @default 'auto'
   */
  readonly key?: 'auto' | 'message-id' | 'deduplication-id' | { readonly attribute: string } | ((record: SQSRecord) => string) | undefined;
  /**
   * FIFO queues: what to do after a record fails. `skip-group`: report the rest of its message group in
   * the batch failed, unstarted, while the other groups go on side by side. `stop-batch`: run the batch one
   * record at a time, in batch order, and report every record after the failed one failed, unstarted,
   * whatever its group; sequential, so in the per-record modes it takes the batch's summed latency
   * (docs/fifo.md).
   * @default { onFailure: 'skip-group' }
   */
  readonly fifo?: { readonly onFailure?: 'skip-group' | 'stop-batch' | undefined } | undefined;
}

/** Options after validation, with defaults filled in. */
export interface ResolvedOptions<Body, Raw = SQSRecord> {
  readonly consumer: string;
  readonly transport: TransportDriver;
  readonly mode: ResolvedMode<Body, Raw>;
  readonly duplicateFilter: DuplicateFilter;
  /** Where a record's claim goes (transaction modes). */
  readonly claim: 'before-apply' | 'with-first-statement';
  readonly parse: (body: string, record: Raw) => Body | Promise<Body>;
  readonly onFailure: 'skip-group' | 'stop-batch';
  readonly concurrency: number;
  readonly onPermanentError: 'retry' | 'park';
  readonly schema: string;
  readonly callTimeoutMs: number;
  /** Undefined: derived per invocation, see {@link InboxOptions.deadlineMarginMs}. */
  readonly deadlineMarginMs: number | undefined;
  readonly resumeDelaysMs: readonly number[];
  readonly now: () => number;
  readonly sleep: (ms: number) => Promise<void>;
  readonly outbox: { readonly transport: OutboxTransport; readonly destinations: Readonly<Record<string, string>> } | undefined;
}

/** How claimed records are applied. */
export type ResolvedMode<Body, Raw = SQSRecord> =
  | { readonly kind: 'transaction'; readonly apply: NonNullable<ConsumerOptions<Body, Raw>['apply']> }
  | { readonly kind: 'statement'; readonly statement: (message: InboxMessage<Body, Raw>) => GatedStatement; readonly constantSql?: string }
  | { readonly kind: 'batch-transaction'; readonly applyBatch: NonNullable<ConsumerOptions<Body, Raw>['applyBatch']> }
  | { readonly kind: 'batch-statement'; readonly sql: string; readonly params: (messages: readonly InboxMessage<Body, Raw>[]) => SqlParams };

// Every option, so that a misspelt one is refused instead of ignored. Typed as a record of the interface's
// keys: adding an option to the interface and not here does not compile.
const CONSUMER_OPTIONS: Readonly<Record<keyof ConsumerOptions, true>> = {
  consumer: true,
  database: true,
  apply: true,
  statement: true,
  applyBatch: true,
  statementBatch: true,
  duplicateFilter: true,
  claim: true,
  parse: true,
  concurrency: true,
  onPermanentError: true,
  schema: true,
  callTimeoutMs: true,
  deadlineMarginMs: true,
  resumeDelaysMs: true,
  logger: true,
  metrics: true,
  outbox: true,
  onBatch: true,
  now: true,
  sleep: true,
};
const FIFO_OPTIONS: Readonly<Record<keyof NonNullable<InboxOptions['fifo']>, true>> = { onFailure: true };
const NESTED_OPTIONS = { fifo: FIFO_OPTIONS, statement: STATEMENT_OPTIONS, statementBatch: STATEMENT_OPTIONS };

/** The options as the code gave them, checked, with defaults filled in: all but what the environment settles. */
export interface CheckedOptions<Body, Raw = SQSRecord> extends Omit<ResolvedOptions<Body, Raw>, 'consumer' | 'outbox'> {
  /** The consumer the code gave, checked; undefined leaves it to INBOX_CONSUMER. */
  readonly consumer: string | undefined;
  /** The outbox's transport, and its destinations when the code gave them (else INBOX_DESTINATIONS). */
  readonly outbox: { readonly transport: OutboxTransport; readonly destinations: Readonly<Record<string, string>> | undefined } | undefined;
  /** `inbox`, `kinesisInbox`, ...: for the messages. */
  readonly handlerName: string;
}

/**
 * Validates the options the code gives once, when `inbox(options)` is called, with errors that name the
 * option and the fix. The source gives the handler's name, the options it takes besides those of every
 * consumer and the default `parse`. The INBOX_* environment is {@link settleEnvironment}'s.
 */
export function checkOptions<Body, Raw = SQSRecord>(
  options: ConsumerOptions<Body, Raw> & { readonly fifo?: InboxOptions['fifo'] },
  source: Pick<InboxSource<Raw, unknown, unknown>, 'handlerName' | 'options' | 'parse'>,
): CheckedOptions<Body, Raw> {
  const { handlerName } = source;
  if (!options || typeof options !== 'object' || Array.isArray(options)) {
    throw new InboxConfigError('options', `pass an object, e.g. ${handlerName}({ consumer: 'order-worker', apply })`);
  }
  // First: a misspelt `consumr` is better named as a typo than reported as a missing `consumer`.
  refuseUnknownKeys(options, { ...CONSUMER_OPTIONS, ...source.options }, undefined, { top: `${handlerName}()`, misplaced: NESTED_OPTIONS });
  // null, like undefined, means "the default": INBOX_CONSUMER.
  const consumer = options.consumer ?? undefined;
  if (consumer !== undefined) checkConsumer(consumer, handlerName);
  const mode = resolveMode(options);
  const duplicateFilter = oneOf(options.duplicateFilter ?? 'auto', 'duplicateFilter', ['auto', 'always', 'never']);
  const claim = checkClaim(options.claim);
  if (options.claim !== undefined && (mode.kind === 'statement' || mode.kind === 'batch-statement')) {
    throw new InboxConfigError(
      'claim',
      'places the claim of the transaction modes (apply, applyBatch); a single statement always carries its claim as the CTE `claimed`: remove it',
    );
  }

  const fifo: unknown = options.fifo;
  if (fifo !== undefined && fifo !== null) {
    if (typeof fifo !== 'object' || Array.isArray(fifo)) {
      // `fifo: 'stop-batch'` reads naturally but names the mode where the object belongs.
      const example = fifo === 'skip-group' ? 'skip-group' : 'stop-batch';
      throw new InboxConfigError('fifo', `must be an object, e.g. fifo: { onFailure: '${example}' }; got ${described(fifo)}`);
    }
    refuseUnknownKeys(fifo, FIFO_OPTIONS, 'fifo');
  }
  const onFailure = oneOf(options.fifo?.onFailure ?? 'skip-group', 'fifo.onFailure', ['skip-group', 'stop-batch']);
  const onPermanentError = checkOnPermanentError(options.onPermanentError);
  const concurrency = positiveInteger(options.concurrency ?? 10, 'concurrency', 'e.g. 10');
  const callTimeoutMs = positiveInteger(options.callTimeoutMs ?? 10_000, 'callTimeoutMs', 'e.g. 10000');
  const deadlineMarginMs = options.deadlineMarginMs === undefined ? undefined : nonNegativeInteger(options.deadlineMarginMs, 'deadlineMarginMs');
  const delays: unknown = options.resumeDelaysMs ?? [250, 500, 1000, 2000, 4000, 8000];
  if (!Array.isArray(delays)) {
    throw new InboxConfigError('resumeDelaysMs', `must be an array of whole numbers of milliseconds >= 0, e.g. [250, 500, 1000]; got ${described(delays)}`);
  }
  // A copy: the array was checked now, and must not change after.
  const resumeDelaysMs = delays.map((delay, index) => nonNegativeInteger(delay, `resumeDelaysMs[${index}]`));
  optionalFunction(options.parse, 'parse', '(body, record) => parsed body');
  optionalFunction(options.onBatch, 'onBatch', '(summary) => void');
  optionalFunction(options.now, 'now', '() => epoch milliseconds, e.g. Date.now');
  optionalFunction(options.sleep, 'sleep', '(ms) => Promise<void>');
  optionalMethods(options.logger, 'logger', ['debug', 'info', 'warn', 'error'], 'a Powertools Logger or console fits');
  optionalMethods(options.metrics, 'metrics', ['addMetric', 'publishStoredMetrics'], 'a Powertools Metrics fits');

  return {
    consumer,
    transport: checkTransport(options.database),
    mode,
    duplicateFilter,
    claim,
    parse: options.parse ?? (source.parse as (body: string, record: Raw) => Body),
    onFailure,
    concurrency,
    onPermanentError,
    schema: options.schema ?? 'inbox',
    callTimeoutMs,
    deadlineMarginMs,
    resumeDelaysMs,
    now: options.now ?? Date.now,
    sleep: options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms))),
    outbox: checkOutbox(options.outbox, mode.kind),
    handlerName,
  };
}

/**
 * Whether the environment is still to come: the consumer, when the code left it to INBOX_CONSUMER and that
 * is not set yet. A handler module then imports cleanly, in a test or a tool, and its first invocation
 * settles the environment, with the same errors. The transport settles its own environment at first use.
 */
export function awaitsEnvironment(checked: Pick<CheckedOptions<unknown>, 'consumer'>, env: NodeJS.ProcessEnv = process.env): boolean {
  return checked.consumer === undefined && !env[ENV_CONSUMER];
}

/** Fills in, from the INBOX_* environment, what the code left to it, naming what is missing or wrong. */
export function settleEnvironment<Body, Raw>(checked: CheckedOptions<Body, Raw>, env: NodeJS.ProcessEnv = process.env): ResolvedOptions<Body, Raw> {
  const { handlerName, outbox, ...rest } = checked;
  const consumer = checked.consumer ?? checkConsumer(env[ENV_CONSUMER], handlerName);
  return {
    ...rest,
    consumer,
    outbox: outbox && {
      transport: outbox.transport,
      destinations: outbox.destinations ?? environmentDestinations(env),
    },
  };
}

function checkConsumer(consumer: unknown, handlerName: string): string {
  if (consumer === undefined || consumer === '') {
    throw new InboxConfigError('consumer', `is not set: pass ${handlerName}({ consumer: 'order-worker', ... }) or set INBOX_CONSUMER`);
  }
  if (typeof consumer !== 'string') {
    throw new InboxConfigError('consumer', `must be a string, e.g. 'order-worker'; got ${described(consumer)}`);
  }
  if (!CONSUMER_NAME_PATTERN.test(consumer)) {
    throw new InboxConfigError('consumer', `"${consumer}" must be ${CONSUMER_NAME_RULE}, e.g. 'order-worker'`);
  }
  return consumer;
}

/** `claim` checked. */
const checkClaim = (given: unknown) =>
  plainChoice(given, 'claim', {
    choices: ['before-apply', 'with-first-statement'],
    fallback: 'before-apply',
    retired: { name: 'withFirstStatement', value: 'with-first-statement' },
  });

/** `onPermanentError` checked. */
const checkOnPermanentError = (given: unknown) =>
  plainChoice(given, 'onPermanentError', { choices: ['retry', 'park'], fallback: 'retry', retired: { name: 'park', value: 'park' } });

/** The outbox option checked: a transport, destinations when given, a transaction mode. */
function checkOutbox(outbox: unknown, mode: ResolvedMode<unknown>['kind']): CheckedOptions<unknown>['outbox'] {
  if (outbox === undefined || outbox === null) return undefined;
  const transport = (outbox as { transport?: { send?: unknown } }).transport;
  if (typeof outbox !== 'object' || typeof transport?.send !== 'function') {
    throw new InboxConfigError(
      'outbox',
      `must be { transport, destinations? }, e.g. sqsOutbox({ client: new SQSClient({}) }) from "sqs-inbox/outbox"; got ${described(outbox)}`,
    );
  }
  refuseUnknownKeys(outbox, { transport: true, destinations: true }, 'outbox');
  if (mode === 'statement' || mode === 'batch-statement') {
    throw new InboxConfigError(
      'outbox',
      "works in the transaction modes (apply, applyBatch), where tx.send writes in the claim's transaction; a single statement has no tx.send",
    );
  }
  const destinations: unknown = (outbox as { destinations?: unknown }).destinations;
  return {
    transport: transport as OutboxTransport,
    destinations: destinations === undefined ? undefined : checkDestinations(destinations ?? {}),
  };
}

/** The `database` option checked: a transport, or `dataApi()` when none is given. */
function checkTransport(database: unknown): TransportDriver {
  if (database === undefined || database === null) return driverOf(dataApi());
  if (typeof (database as Partial<TransportDriver>).open !== 'function') {
    throw new InboxConfigError(
      'database',
      'must be a transport: dataApi({ resourceArn, secretArn, database, client }) from "sqs-inbox", postgres(pool) from "sqs-inbox/postgres" ' +
        `or dsql({ ... }) from "sqs-inbox/dsql"; got ${described(database)}`,
    );
  }
  return database as TransportDriver;
}

function positiveInteger(value: unknown, option: string, example: string): number {
  if (typeof value !== 'number') throw new InboxConfigError(option, `must be a number (a positive integer, ${example}); got ${described(value)}`);
  if (!Number.isInteger(value) || value < 1) throw new InboxConfigError(option, `${String(value)} must be a positive integer, ${example}`);
  return value;
}

function nonNegativeInteger(value: unknown, option: string): number {
  if (typeof value !== 'number') {
    throw new InboxConfigError(option, `must be a number (a non-negative integer number of milliseconds); got ${described(value)}`);
  }
  if (!Number.isInteger(value) || value < 0) {
    throw new InboxConfigError(option, `${String(value)} must be a non-negative integer number of milliseconds`);
  }
  return value;
}

// null, like undefined, means "the default": every option falls back with `??`.
function optionalFunction(value: unknown, option: string, shape: string): void {
  if (value !== undefined && value !== null && typeof value !== 'function') {
    throw new InboxConfigError(option, `must be a function ${shape}; got ${described(value)}`);
  }
}

function optionalMethods(value: unknown, option: string, methods: readonly string[], fits: string): void {
  if (value === undefined || value === null) return;
  const wanted = `must be an object with the methods ${methods.join(', ')} (${fits})`;
  if (typeof value !== 'object') throw new InboxConfigError(option, `${wanted}; got ${described(value)}`);
  const missing = methods.filter((method) => typeof (value as Record<string, unknown>)[method] !== 'function');
  if (missing.length > 0) throw new InboxConfigError(option, `${wanted}; this one has no ${missing.join(', ')}`);
}
