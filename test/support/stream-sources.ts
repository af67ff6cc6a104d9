import { dynamoDbInbox, kafkaInbox, kinesisInbox } from '../../lambda/inbox/index.js';
import type { ConsumerOptions, InboxMessage, InboxTransaction } from '../../lambda/inbox/index.js';
import { lambdaContext } from './inbox.js';
import { dynamoDbEvent, dynamoDbRecord, kafkaEvent, kafkaRecord, kinesisEvent, kinesisRecord, nextDynamoDbSequenceNumber } from './streams.js';

// One adapter per stream source, so that the order, fault and race suites are written once and run on
// each: it builds records as Lambda delivers them, invokes the source's handler, and reads the response
// as the event source mapping does (per lane, the record to restart from; or the whole batch again).

/** What a test record carries: its lane and its place in the lane (1, 2, ...). */
export interface Step {
  readonly lane: string;
  readonly n: number;
}

/** One built record: the id its source names it by (in `message.id` and in the response), and the record itself. */
export interface StreamItem extends Step {
  readonly id: string;
  readonly raw: unknown;
}

/**
 * What the event source mapping makes of an invocation: `partial`, per lane the id of the first record to
 * deliver again (lanes not named are done); `whole`, the invocation failed and the batch comes again.
 */
export type Report = { readonly kind: 'partial'; readonly restartAt: ReadonlyMap<string, string> } | { readonly kind: 'whole'; readonly error: unknown };

/** Invokes a source's handler with the records given, as one event. */
export type StreamHandler = (items: readonly StreamItem[]) => Promise<Report>;

export interface StreamSource {
  /** The test name of the source (and variant). */
  readonly name: string;
  /** The lanes one event of this source may hold as Lambda delivers it (a Kinesis or DynamoDB event: one shard). */
  readonly lanes: readonly string[];
  /** False: a failure fails the invocation (Kafka without ReportBatchItemFailures). */
  readonly partial: boolean;
  /** SQL reading the step from the `claimed` CTE of a batch statement: the body, or the part of it holding the step. */
  readonly stepSql: string;
  /** The step a message body carries, as the source's default `parse` hands it. */
  stepOf(body: unknown): Step;
  /** Fresh records, one per step, in the order given. */
  build(steps: readonly Step[]): StreamItem[];
  /** A handler of this source with these options. */
  handler(options: ConsumerOptions<any, any>): StreamHandler;
}

/** Reads `{ batchItemFailures }`, naming each reported record by its id; refuses what names no record of the batch, or a lane twice. */
function readFailures(response: unknown, items: readonly StreamItem[], idOf: (identifier: unknown) => string): Report {
  const failures = (response as { batchItemFailures?: { itemIdentifier: unknown }[] } | undefined)?.batchItemFailures ?? [];
  const restartAt = new Map<string, string>();
  for (const { itemIdentifier } of failures) {
    const id = idOf(itemIdentifier);
    const item = items.find((candidate) => candidate.id === id);
    if (!item) throw new Error(`the response names ${JSON.stringify(itemIdentifier)}, which is no record of the batch`);
    if (restartAt.has(item.lane)) throw new Error(`the response names two records of lane ${item.lane}: ${restartAt.get(item.lane)} and ${id}`);
    restartAt.set(item.lane, id);
  }
  return { kind: 'partial', restartAt };
}

async function invoke(run: () => Promise<unknown>, items: readonly StreamItem[], idOf: (identifier: unknown) => string): Promise<Report> {
  let response: unknown;
  try {
    response = await run();
  } catch (error) {
    return { kind: 'whole', error };
  }
  return readFailures(response, items, idOf);
}

const sequenceNumberId = (identifier: unknown) => identifier as string;

function kinesis(name: string, lanes: readonly string[]): StreamSource {
  return {
    name,
    lanes,
    partial: true,
    stepSql: 'body',
    stepOf: (body) => body as Step,
    build: (steps) =>
      steps.map((step) => {
        const raw = kinesisRecord({ shard: step.lane, body: { lane: step.lane, n: step.n } });
        return { ...step, id: raw.kinesis.sequenceNumber, raw };
      }),
    handler: (options) => {
      const handler = kinesisInbox(options);
      return (items) => invoke(() => handler(kinesisEvent(items.map((item) => item.raw) as never), lambdaContext()), items, sequenceNumberId);
    },
  };
}

const dynamodb: StreamSource = {
  name: 'dynamodb',
  // One batch comes from one shard, which the records do not name: the whole batch is one lane.
  lanes: ['shard'],
  partial: true,
  stepSql: "body->'newImage'",
  stepOf: (body) => (body as { newImage: Step }).newImage,
  build: (steps) =>
    steps.map((step) => {
      const raw = dynamoDbRecord({
        id: `${step.lane}/${step.n}`,
        eventName: step.n === 1 ? 'INSERT' : 'MODIFY',
        newImage: { lane: step.lane, n: step.n },
        sequenceNumber: nextDynamoDbSequenceNumber(),
      });
      return { ...step, id: raw.dynamodb!.SequenceNumber!, raw };
    }),
  handler: (options) => {
    const handler = dynamoDbInbox(options);
    return (items) => invoke(() => handler(dynamoDbEvent(items.map((item) => item.raw) as never), lambdaContext()), items, sequenceNumberId);
  },
};

/** The offset a lane's first record gets: a batch crosses 99 to 100, so offset order differs from text order. */
const FIRST_OFFSET = 98;

function kafka(name: string, partial: boolean): StreamSource {
  return {
    name,
    // Two topics: the lane is the topic-partition, not the partition number.
    lanes: ['orders-0', 'orders-1', 'payments-0'],
    partial,
    stepSql: 'body',
    stepOf: (body) => body as Step,
    build: (steps) => {
      const offsets = new Map<string, number>();
      return steps.map((step) => {
        const offset = offsets.get(step.lane) ?? FIRST_OFFSET;
        offsets.set(step.lane, offset + 1);
        const cut = step.lane.lastIndexOf('-');
        const raw = kafkaRecord({ topic: step.lane.slice(0, cut), partition: Number(step.lane.slice(cut + 1)), offset, body: { lane: step.lane, n: step.n } });
        return { ...step, id: `${step.lane}@${offset}`, raw };
      });
    },
    handler: (options) => {
      const handler = kafkaInbox({ ...options, reportBatchItemFailures: partial });
      const idOf = (identifier: unknown) => {
        const { partition, offset } = identifier as { partition: string; offset: number };
        return `${partition}@${offset}`;
      };
      return async (items) => {
        const report = await invoke(() => handler(kafkaEvent(items.map((item) => item.raw) as never), lambdaContext()), items, idOf);
        // Without a partial response the handler answers nothing but success: its failures are throws.
        if (!partial && report.kind === 'partial' && report.restartAt.size > 0)
          throw new Error('kafkaInbox without reportBatchItemFailures answered a partial response');
        return report;
      };
    },
  };
}

/** Kinesis as Lambda delivers it (one shard per event), DynamoDB Streams, Kafka with and without a partial batch response. */
export const STREAM_SOURCES: readonly StreamSource[] = [
  kinesis('kinesis', ['shardId-000000000000']),
  dynamodb,
  kafka('kafka', true),
  kafka('kafka without partial response', false),
];

/** A hand-built Kinesis event holding three shards: each shard is a lane of its own. */
export const KINESIS_MULTI_SHARD: StreamSource = kinesis('kinesis, hand-built event of three shards', [
  'shardId-000000000000',
  'shardId-000000000001',
  'shardId-000000000002',
]);

/** What the event source mapping delivers next: per reported lane, the records from the restart point on; or the whole batch. */
export function nextDelivery(items: readonly StreamItem[], report: Report): StreamItem[] {
  if (report.kind === 'whole') return [...items];
  const restarted = new Set<string>();
  return items.filter((item) => {
    if (report.restartAt.get(item.lane) === item.id) restarted.add(item.lane);
    return restarted.has(item.lane);
  });
}

/** The report compared in assertions: per lane the restart record's id, or 'whole'. */
export function restarts(report: Report): Record<string, string> | 'whole' {
  return report.kind === 'whole' ? 'whole' : Object.fromEntries(report.restartAt);
}

/**
 * The model of one delivery: lane by lane in order, a committed record is a duplicate, a failing record
 * stops its lane and is its restart point, any other record is applied. Returns the restart points and
 * the records applied.
 */
export function expectedDelivery(items: readonly StreamItem[], committed: ReadonlySet<string>, failing: ReadonlySet<string>) {
  const restartAt = new Map<string, string>();
  const applied: string[] = [];
  for (const item of items) {
    if (restartAt.has(item.lane) || committed.has(item.id)) continue;
    if (failing.has(item.id)) restartAt.set(item.lane, item.id);
    else applied.push(item.id);
  }
  return { restartAt, applied };
}

/** The report the source must give for the model's restart points. */
export function expectedRestarts(source: StreamSource, restartAt: ReadonlyMap<string, string>): Record<string, string> | 'whole' {
  if (!source.partial && restartAt.size > 0) return 'whole';
  return Object.fromEntries(restartAt);
}

/** Per lane, the ids of `items` that are in `committed`, in lane order: what the effects table must hold. */
export function laneIds(items: readonly StreamItem[], committed: ReadonlySet<string> = new Set(items.map((item) => item.id))): Record<string, string[]> {
  const lanes: Record<string, string[]> = {};
  for (const item of items) if (committed.has(item.id)) (lanes[item.lane] ??= []).push(item.id);
  return lanes;
}

/**
 * The safety rule of a stream report, against what committed: every record before a lane's restart
 * point committed (Lambda checkpoints past them), and, for a lane not named, every record of it.
 * Returns the records the report would skip uncommitted: none, when the report is safe.
 */
export function skippedUncommitted(items: readonly StreamItem[], report: Report, committed: ReadonlySet<string>): string[] {
  if (report.kind === 'whole') return [];
  const stopped = new Set<string>();
  const skipped: string[] = [];
  for (const item of items) {
    if (report.restartAt.get(item.lane) === item.id) stopped.add(item.lane);
    if (!stopped.has(item.lane) && !committed.has(item.id)) skipped.push(`${item.lane}: ${item.id} (n=${item.n}) is uncommitted but not redelivered`);
  }
  return skipped;
}

/** The effects table every stream suite writes to: one row per application of a record's effect. */
export const EFFECTS_DDL =
  'CREATE TABLE public.stream_effects (seq bigserial PRIMARY KEY, consumer text NOT NULL, lane text NOT NULL, n int NOT NULL, record_id text NOT NULL)';

/** Per lane, the record ids whose effect was applied, in the order applied (duplicates kept). */
export async function effectsByLane(
  query: (sql: string, params: unknown[]) => Promise<Record<string, any>[]>,
  consumer: string,
): Promise<Record<string, string[]>> {
  const rows = await query('SELECT lane, record_id FROM public.stream_effects WHERE consumer = $1 ORDER BY seq', [consumer]);
  const lanes: Record<string, string[]> = {};
  for (const row of rows) (lanes[row.lane as string] ??= []).push(row.record_id as string);
  return lanes;
}

/** An `applyBatch` that applies each message of the batch in turn, in the batch's transaction. */
export function applyEach<Message>(effect: (tx: InboxTransaction, message: Message) => Promise<void>) {
  return async (tx: InboxTransaction, messages: readonly Message[]) => {
    for (const message of messages) await effect(tx, message);
  };
}

/** The ways to write a consumer. */
export type Mode = 'apply' | 'applyBatch' | 'statement' | 'statementBatch';

const EFFECT_SQL = 'INSERT INTO public.stream_effects (consumer, lane, n, record_id) VALUES (:consumer, :lane, :n, :id)';

export interface EffectHooks {
  /** The records whose effect fails now (a throw in apply; a NOT NULL violation in the statement modes). */
  readonly failing?: () => ReadonlySet<string>;
  /** apply/applyBatch: before a record's effect statement, in its transaction. */
  readonly before?: (tx: InboxTransaction, message: InboxMessage<unknown, unknown>) => Promise<void>;
  /** apply/applyBatch: after a record's effect statement, before its commit (the fault suites arm faults here). */
  readonly after?: (message: InboxMessage<unknown, unknown>) => Promise<void> | void;
}

/**
 * The consumer options of a mode whose effect inserts one row per record into `public.stream_effects`,
 * and fails for the records `failing` names: in apply/applyBatch by a throw after the insert (so the
 * rollback matters), in the statement modes by the insert itself (PostgreSQL refuses a NULL n).
 */
export function effectOptions(mode: Mode, source: StreamSource, consumer: string, hooks: EffectHooks = {}): Partial<ConsumerOptions<any, any>> {
  const failing = hooks.failing ?? (() => new Set<string>());
  const effect = async (tx: InboxTransaction, message: InboxMessage<unknown, unknown>) => {
    const step = source.stepOf(message.body);
    await hooks.before?.(tx, message);
    await tx.execute(EFFECT_SQL, { consumer, lane: step.lane, n: step.n, id: message.id! });
    await hooks.after?.(message);
    if (failing().has(message.id!)) throw new Error(`${message.id} fails`);
  };
  switch (mode) {
    case 'apply':
      return { apply: effect };
    case 'applyBatch':
      return { applyBatch: applyEach(effect) };
    case 'statement':
      return {
        statement: {
          sql: `INSERT INTO public.stream_effects (consumer, lane, n, record_id)
                SELECT :consumer, :lane, CASE WHEN :fail THEN NULL ELSE :n END, :id FROM claimed`,
          params: (message: InboxMessage<unknown, unknown>) => {
            const step = source.stepOf(message.body);
            return { consumer, lane: step.lane, n: step.n, id: message.id!, fail: failing().has(message.id!) };
          },
        },
      };
    case 'statementBatch':
      return {
        statementBatch: {
          // ORDER BY position: the effects of one statement in batch order (its claims go in key order).
          sql: `INSERT INTO public.stream_effects (consumer, lane, n, record_id)
                SELECT :consumer, ${source.stepSql}->>'lane',
                       CASE WHEN jsonb_exists(:failing::jsonb, sqs_message_id) THEN NULL ELSE (${source.stepSql}->>'n')::int END, sqs_message_id
                FROM claimed ORDER BY position`,
          params: () => ({ consumer, failing: [...failing()] }),
        },
      };
  }
}
