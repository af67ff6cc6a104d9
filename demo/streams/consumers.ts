import type { DynamoDBRecord, KinesisStreamRecord } from 'aws-lambda';
import { dynamoDbInbox, kafkaHeaders, kafkaInbox, kinesisInbox } from '../../lambda/inbox/index.js';
import { migrate } from '../../lambda/inbox/sql/schema.js';
import type { InboxTransaction } from '../../lambda/inbox/index.js';
import type { InboxTransport } from '../../lambda/inbox/transport/transport.js';
import type { InboxSession } from '../../lambda/inbox/transport/session.js';
import { dynamoDbInboxSource } from '../../lambda/inbox/sources/dynamodb.js';
import { kafkaInboxSource } from '../../lambda/inbox/sources/kafka.js';
import type { KafkaRecord } from '../../lambda/inbox/sources/kafka.js';
import { kinesisInboxSource } from '../../lambda/inbox/sources/kinesis.js';
import type { StreamConsumer } from '../../local/scenario/run-stream-scenario.js';
import type { StreamSourceName } from '../../local/scenario/stream.js';
import { EXAMPLE_ORDER_MIGRATIONS } from '../functions/example-migrations.js';
import { shipOrder } from '../functions/ship-order.js';
import { demoInboxSettings } from '../consumers.js';
import { batchHandler, consumeNaively } from '../naive.js';
import { driverOf } from '../../lambda/inbox/transport/transport.js';

/** The two consumers compared: the inbox (claim and effect in one transaction) and the naive check, apply, record. */
export type StreamPattern = 'inbox' | 'naive';

type StreamHandlerOf = (database: InboxTransport, session: InboxSession) => (event: never, context: never) => unknown;

const LANES = 4;
// As the SQS demo's inbox consumers.
const inboxSettings = demoInboxSettings('stream-demo-orders');

/** Where the effect becomes durable for the naive consumer: shipOrder's autocommit upsert. */
export const NAIVE_SHIP_STATEMENT = (sql: string): boolean => sql.includes('INSERT INTO public.orders');

// public.orders (the example workers' table) with the sequence of each order's first shipment: the
// upsert's conflict branch leaves it alone, so it orders first effects, as the SQS demo's bigserial id does.
const FIRST_SHIPPED = 'ALTER TABLE public.orders ADD COLUMN first_shipped bigserial';
const NAIVE_TABLE = 'CREATE TABLE public.naive_processed (message_key text PRIMARY KEY)';
const EFFECTS = 'SELECT order_id AS key, shipped_count AS count, first_shipped AS seq FROM public.orders';

/**
 * The stream demo's order consumer of `pattern` on `source`, as runStreamScenario drives any consumer:
 * orders keyed by customer, shipped into public.orders (the example workers' table), judged by
 * shipped_count and the first shipment's sequence. Each customer's orders share a lane and must ship in
 * production order: max(4, messages / 10) customers for a run of `messages` orders.
 */
export function streamDemoConsumer(source: StreamSourceName, pattern: StreamPattern, messages: number): StreamConsumer {
  const customers = Math.max(4, Math.floor(messages / 10));
  const handlers = HANDLERS[source];
  return {
    label: pattern,
    // The naive consumer fails a record and lets the stream retry it: no resume retries of its own.
    handler: ({ database }) => handlers[pattern](database, driverOf(database).open({ callTimeoutMs: 2000, resumeDelaysMs: [] })) as never,
    setup: async (session) => {
      await migrate(session, [EXAMPLE_ORDER_MIGRATIONS]);
      await session.execute(FIRST_SHIPPED);
      await session.execute(NAIVE_TABLE);
    },
    message: (index) => ({
      key: `order-${index}`,
      body: { orderId: `order-${index}`, customerId: `customer-${index % customers}` },
      groupId: `customer-${index % customers}`,
    }),
    effects: EFFECTS,
    // One item per customer, rewritten by each order. A retried PutItem of the same item writes no stream
    // record. One that changed an attribute (a retry timestamp) would: the inbox would then see the
    // order's key with another body, and park it as a key collision, which is its rule, not a double effect.
    ...(source === 'dynamodb' ? { partitionKey: 'customerId' } : {}),
    ...(pattern === 'naive' ? { commitPoint: { statement: NAIVE_SHIP_STATEMENT } } : {}),
  };
}

type OrderBody = { orderId?: unknown };

function kinesis(): Record<StreamPattern, StreamHandlerOf> {
  const orderOf = (record: KinesisStreamRecord) => JSON.parse(Buffer.from(record.kinesis.data, 'base64').toString('utf8')) as OrderBody;
  return {
    inbox: (database) =>
      kinesisInbox<OrderBody>({ ...inboxSettings, database, key: { field: 'orderId' }, apply: (tx, m) => shipOrder(tx, m.body.orderId, m.key) }) as never,
    naive: (_, session) =>
      naive(
        session,
        kinesisInboxSource,
        (record: KinesisStreamRecord) => String(orderOf(record).orderId),
        (record) => orderOf(record).orderId,
      ),
  };
}

function dynamodb(): Record<StreamPattern, StreamHandlerOf> {
  // The producer's key, from the new image. A function: the record's body is the change with its images
  // still marshalled, so a field path would be NewImage.orderId.S.
  const orderIdOf = (record: DynamoDBRecord) => record.dynamodb?.NewImage?.orderId?.S;
  const keyOf = (record: DynamoDBRecord) => String(orderIdOf(record));
  return {
    inbox: (database) =>
      dynamoDbInbox({
        ...inboxSettings,
        database,
        key: keyOf,
        apply: async (tx, { body, key }) => {
          if (body.eventName !== 'REMOVE') await shipOrder(tx, body.newImage?.orderId, key);
        },
      }) as never,
    naive: (_, session) =>
      naive(session, dynamoDbInboxSource, keyOf, (record: DynamoDBRecord) => (record.eventName === 'REMOVE' ? undefined : orderIdOf(record))),
  };
}

function kafka(): Record<StreamPattern, StreamHandlerOf> {
  const orderOf = (record: KafkaRecord) => JSON.parse(Buffer.from(record.value ?? '', 'base64').toString('utf8')) as OrderBody;
  const keyOf = (record: KafkaRecord) => kafkaHeaders(record)['idempotency-key'] ?? '';
  return {
    inbox: (database) =>
      kafkaInbox<OrderBody>({
        ...inboxSettings,
        database,
        key: { header: 'idempotency-key' },
        reportBatchItemFailures: true,
        apply: (tx, m) => shipOrder(tx, m.body.orderId, m.key),
      }) as never,
    naive: (_, session) => naive(session, kafkaInboxSource(true), keyOf, (record: KafkaRecord) => orderOf(record).orderId),
  };
}

/**
 * The naive baseline on a stream: the inbox's own batch planning and failure report for the source, and
 * per record check, ship, record, each an autocommit call. It ships with the same shipOrder as the inbox,
 * outside any transaction.
 */
function naive<Raw>(
  session: InboxSession,
  source: Parameters<typeof batchHandler<Raw, unknown, unknown>>[2],
  keyOf: (record: Raw) => string,
  orderIdOf: (record: Raw) => unknown,
): (event: never, context: never) => unknown {
  const autocommit = { execute: (sql: string, params?: Record<string, unknown>) => session.execute(sql, params as never) } as unknown as InboxTransaction;
  return batchHandler<Raw, unknown, unknown>(
    (record) =>
      consumeNaively(
        {
          session,
          processedTable: 'public.naive_processed',
          keyOf,
          effect: async (r) => {
            const orderId = orderIdOf(r);
            if (orderId !== undefined) await shipOrder(autocommit, orderId, keyOf(r));
          },
        },
        record,
      ),
    { concurrency: LANES, mayStart: (context) => (context?.getRemainingTimeInMillis() ?? Infinity) > 100 },
    source,
  ) as never;
}

const HANDLERS: Record<StreamSourceName, Record<StreamPattern, StreamHandlerOf>> = { kinesis: kinesis(), dynamodb: dynamodb(), kafka: kafka() };
