import { createHash, randomBytes } from 'node:crypto';
import { RDSDataClient } from '@aws-sdk/client-rds-data';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { DataApiSession, INBOX_MIGRATIONS, inbox, migrate } from '../lambda/inbox/index.js';
import type { DatabaseTarget, InboxLogger, InboxMetrics } from '../lambda/inbox/index.js';
import { createProducer } from '../lambda/inbox/producer.js';
import { SqsEventSource } from './event-source.js';
import type { SqsEventHandler } from './event-source.js';
import { batchHandler, consumeNaively } from './naive.js';
import type { RemainingTime } from './naive.js';
import { createDatabase } from './postgres.js';
import type { LocalStack } from './stack.js';

/** The faults a scenario can inject, each at its own rate, decided by the seed. */
export const FAULTS = [
  /** The producer sends ~5% of orders twice with one idempotency key (a retry past SQS's 5-minute dedup window). */
  'duplicate-sends',
  /** ~4% of invocations: the worker dies after its commits, before SQS deletes the batch. */
  'crash-after-commit',
  /**
   * ~3% of records arm a lost response: the next call that makes an effect durable (the inbox's commit,
   * the naive INSERT), whichever consumer sends it, runs but its answer never arrives. Counted when armed.
   */
  'drop-commit',
  /** ~3% of records: the worker dies after the effect's statement, before the commit (inbox) or the dedup record (naive). */
  'crash-in-transaction',
  /** Aurora auto-pause: every Data API call is refused for 800 ms, at the start and again half-way. */
  'auto-pause',
  /** ~3% of invocations start their records just as the visibility timeout ends, racing the consumer that gets the batch next. */
  'visibility-expiry',
  /** ~2% of invocations: the next Data API call answers 500 without running. */
  'server-errors',
  /** ~0.5% of orders have a body that is not JSON: they must end parked or in the dead-letter queue, never lost. */
  'poison',
] as const;

export type FaultName = (typeof FAULTS)[number];

const RATES: Record<FaultName, number> = {
  'duplicate-sends': 0.05,
  'crash-after-commit': 0.04,
  'drop-commit': 0.03,
  'crash-in-transaction': 0.03,
  'auto-pause': 1,
  'visibility-expiry': 0.03,
  'server-errors': 0.02,
  poison: 0.005,
};

/** A scenario: one pattern, one fault schedule. */
export interface ScenarioOptions {
  /** `inbox`: claim and effect in one transaction. `naive`: check, apply, record, each on its own. */
  readonly pattern: 'inbox' | 'naive';
  /** Logical orders produced. */
  readonly messages: number;
  /** Same seed, same fault decisions. */
  readonly seed: number;
  /** @default every fault in {@link FAULTS} */
  readonly faults?: readonly FaultName[];
  /** Event source mappings polling the queue at once, each with its own handler instance. @default 3 */
  readonly consumers?: number;
  /** FIFO message groups (customers). @default max(4, messages / 10) */
  readonly groups?: number;
  /** Visibility timeout and function timeout, in seconds. @default 2 */
  readonly visibilityTimeoutSeconds?: number;
  /** Give up after this long. @default 120 s, or 40 ms per message when that is longer */
  readonly timeoutMs?: number;
  /** Told of progress: records settled (deleted or dead-lettered) out of those sent. */
  readonly onProgress?: (settled: number, sent: number) => void;
}

/** What a scenario saw, from the database and the queues at the end. */
export interface ScenarioResult {
  readonly pattern: 'inbox' | 'naive';
  readonly seed: number;
  readonly messages: number;
  readonly sends: number;
  readonly duplicateSends: number;
  readonly poison: number;
  readonly invocations: number;
  readonly recordsDelivered: number;
  /** Invocations that ran past the function timeout: nothing of their batch was deleted. */
  readonly timeouts: number;
  /** Orders whose effect was applied at least once. */
  readonly shipped: number;
  /** Orders whose effect was applied more than once. */
  readonly doubled: number;
  /** Effects beyond the first, summed over orders. */
  readonly extraEffects: number;
  /** Orders with no effect that are neither parked nor in the dead-letter queue. */
  readonly lost: number;
  /** Well-formed orders with no effect, accounted for in the dead-letter queue or the parked table. */
  readonly validNotShipped: number;
  readonly parked: number;
  readonly deadLettered: number;
  /** Orders whose first effect was written after a later order of the same message group. */
  readonly orderViolations: number;
  readonly dataApiCalls: number;
  readonly callsPerMessage: number;
  readonly faultsInjected: Readonly<Record<string, number>>;
  readonly elapsedMs: number;
  /** False when the queue did not drain before the timeout. */
  readonly completed: boolean;
}

type OrderBody = { orderId: string; group: string; position: number };

const silentLogger: InboxLogger = { debug() {}, info() {}, warn() {}, error() {} };
const silentMetrics: InboxMetrics = { addMetric() {}, publishStoredMetrics() {} };

class SimulatedCrash extends Error {
  override name = 'SimulatedCrash';
}

/**
 * Runs one fault-injection scenario end to end on the local stack: a FIFO queue and its FIFO dead-letter
 * queue, the producer, several event source mappings invoking the chosen pattern's handler, faults from
 * the seed; then reads the database and the queues to count double, lost and out-of-order effects.
 */
export async function runScenario(local: LocalStack, options: ScenarioOptions): Promise<ScenarioResult> {
  const started = Date.now();
  const faults = new Set<FaultName>(options.faults ?? FAULTS);
  const consumers = options.consumers ?? 3;
  const groups = options.groups ?? Math.max(4, Math.floor(options.messages / 10));
  const visibilitySeconds = options.visibilityTimeoutSeconds ?? 2;
  const run = `${options.pattern}_${options.seed}_${randomBytes(3).toString('hex')}`;
  const injected: Record<string, number> = {};
  const decide = (fault: FaultName, ...parts: (string | number)[]) => {
    if (!faults.has(fault)) return false;
    const hit = uniform(options.seed, fault, ...parts) < RATES[fault];
    if (hit) injected[fault] = (injected[fault] ?? 0) + 1;
    return hit;
  };

  // A database of its own, so runs never see each other's rows.
  const database = `demo_${run}`;
  await createDatabase(local.postgres.url, database);
  const dataApiClient = new RDSDataClient({
    endpoint: local.dataApi.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
  const target: DatabaseTarget = { client: dataApiClient, resourceArn: local.dataApi.resourceArn, secretArn: local.dataApi.secretArn, database };
  const session = new DataApiSession(target, { callTimeoutMs: 10_000, resumeDelaysMs: [] });
  await migrate(session, [INBOX_MIGRATIONS]);
  await session.execute(
    'CREATE TABLE public.demo_shipment (id bigserial PRIMARY KEY, order_id text NOT NULL, group_id text NOT NULL, position integer NOT NULL)',
  );
  await session.execute('CREATE TABLE public.naive_processed (message_key text PRIMARY KEY)');

  // The queues, through the model (queue attributes) and the producer through the SQS endpoint.
  const model = local.sqs.model;
  const dlq = model.createQueue(`orders-${run}-dlq.fifo`, { FifoQueue: 'true' });
  const queue = model.createQueue(`orders-${run}.fifo`, {
    FifoQueue: 'true',
    VisibilityTimeout: String(visibilitySeconds),
    RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 5 }),
  });
  const sqsClient = new SQSClient({ endpoint: local.sqs.endpoint, region: local.sqs.region, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });

  // Produce: every order once through the producer (stable UUIDv7 keys), duplicates with the same key
  // but a fresh deduplication id, and a few poison bodies.
  const producer = createProducer({ client: sqsClient, queueUrl: queue.url });
  const positions = new Map<string, number>();
  const orders = Array.from({ length: options.messages }, (_, index) => {
    const group = `customer-${index % groups}`;
    const position = (positions.get(group) ?? 0) + 1;
    positions.set(group, position);
    const orderId = `order-${index}`;
    const poison = decide('poison', orderId);
    const body = poison ? `{"orderId":"${orderId}", truncated` : JSON.stringify({ orderId, group, position } satisfies OrderBody);
    return { orderId, group, position, poison, body };
  });
  const keyToOrder = new Map<string, string>();
  let duplicateSends = 0;
  for (let from = 0; from < orders.length; from += 100) {
    const chunk = orders.slice(from, from + 100);
    const { sent } = await producer.send(chunk.map((order) => ({ body: order.body, groupId: order.group })));
    for (const message of sent) {
      const order = chunk[message.index]!;
      keyToOrder.set(message.key, order.orderId);
      if (decide('duplicate-sends', order.orderId)) {
        duplicateSends++;
        await model.sendMessage({
          queue: queue.url,
          body: order.body,
          messageGroupId: order.group,
          messageDeduplicationId: `${message.key}-resend`,
          messageAttributes: { 'idempotency-key': { dataType: 'String', stringValue: message.key } },
        });
      }
    }
  }
  const sends = orders.length + duplicateSends;

  // The handlers. Both see the same faults at the same logical points.
  const attemptOf = (record: SQSRecord) => Number(record.attributes.ApproximateReceiveCount);
  const keyOf = (record: SQSRecord) => record.messageAttributes['idempotency-key']?.stringValue ?? record.messageId;
  const crashesInside = (record: SQSRecord) => decide('crash-in-transaction', keyOf(record), record.messageId, attemptOf(record));
  const armDrop = (record: SQSRecord, operation: 'CommitTransaction' | 'ExecuteStatement') => {
    if (decide('drop-commit', keyOf(record), record.messageId, attemptOf(record))) {
      local.dataApi.faults.dropResponse({ operation, count: 1, ...(operation === 'ExecuteStatement' ? { match: (sql: string) => sql.includes('demo_shipment') } : {}) });
    }
  };
  const SHIP = 'INSERT INTO public.demo_shipment (order_id, group_id, position) VALUES (:orderId, :group, :position)';

  const makeHandler = (): ((event: SQSEvent, context?: RemainingTime) => Promise<SQSBatchResponse>) => {
    if (options.pattern === 'inbox') {
      const handler = inbox<OrderBody>({
        consumer: 'demo-orders',
        database: target,
        onPermanentError: 'park',
        callTimeoutMs: 2000,
        deadlineMarginMs: 100,
        resumeDelaysMs: [100, 200, 300, 400, 500],
        logger: silentLogger,
        metrics: silentMetrics,
        apply: async (tx, message) => {
          armDrop(message.record, 'CommitTransaction');
          const { orderId, group, position } = message.body;
          await tx.execute(SHIP, { orderId, group, position });
          if (crashesInside(message.record)) throw new SimulatedCrash('the worker died before its commit');
        },
      });
      return (event, context) => handler(event, context);
    }
    // The naive pattern: check, apply, record, each its own autocommit call.
    return batchHandler(
      (record) =>
        consumeNaively(
          {
            session,
            processedTable: 'public.naive_processed',
            keyOf,
            effect: async (record) => {
              const body = JSON.parse(record.body) as OrderBody;
              armDrop(record, 'ExecuteStatement');
              await session.execute(SHIP, { orderId: body.orderId, group: body.group, position: body.position });
            },
            afterEffect: (record) => {
              if (crashesInside(record)) throw new SimulatedCrash('the worker died before recording the message');
            },
          },
          record,
        ),
      { concurrency: 10, mayStart: (context) => (context?.getRemainingTimeInMillis() ?? Infinity) > 100 },
    );
  };

  const sources = Array.from({ length: consumers }, (_, index) => {
    const handler = makeHandler();
    const wrapped: SqsEventHandler = async (event, context) => {
      const first = event.Records[0]!;
      const invocation = `${index}:${first.messageId}:${attemptOf(first)}`;
      if (decide('server-errors', invocation)) local.dataApi.faults.serverError({ count: 1, status: 500 });
      if (decide('visibility-expiry', invocation)) {
        // A consumer whose run outlives the queue's visibility timeout (the misconfiguration the CDK
        // constructs refuse): it starts its records just before SQS hands the same batch to another
        // consumer, still believing it has time, so the two race on the same claims.
        const until = Date.now() + visibilitySeconds * 3000;
        await new Promise((resolve) => setTimeout(resolve, visibilitySeconds * 950));
        return handler(event, { getRemainingTimeInMillis: () => until - Date.now() });
      }
      // Lambda stops a timed-out invocation; the handler sees its remaining time run out and starts no
      // further record, which is as close as one process gets to being killed. The event source waits
      // for such abandoned handlers before it calls the queue drained.
      return handler(event, context);
    };
    return new SqsEventSource({
      model,
      queue: queue.url,
      handler: wrapped,
      batchSize: 10,
      maxConcurrency: 2,
      functionTimeoutMs: visibilitySeconds * 1000,
      functionName: `demo-consumer-${index}`,
      beforeDelete: (pending) => (decide('crash-after-commit', `${index}:${pending.records[0]?.messageId}:${attemptOf(pending.records[0]!)}`) ? 'crash' : undefined),
    });
  });

  local.dataApi.stats.reset();
  local.dataApi.faults.clear();
  const pause = () => {
    if (faults.has('auto-pause')) {
      injected['auto-pause'] = (injected['auto-pause'] ?? 0) + 1;
      local.dataApi.faults.autoPause({ resumeAfterMs: 800 });
    }
  };
  pause();
  for (const source of sources) source.start();

  const deadline = started + (options.timeoutMs ?? Math.max(120_000, options.messages * 40));
  let pausedAgain = false;
  let completed = false;
  for (;;) {
    const counts = model.counts(queue.url);
    const settled = sends - counts.visible - counts.inFlight - counts.delayed;
    options.onProgress?.(Math.max(0, settled), sends);
    if (!pausedAgain && settled >= sends / 2) {
      pausedAgain = true;
      pause();
    }
    const active = sources.reduce((sum, source) => sum + source.stats.activeInvocations + source.stats.abandonedInvocations, 0);
    if (counts.visible + counts.inFlight + counts.delayed === 0 && active === 0) {
      completed = true;
      break;
    }
    if (Date.now() > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await Promise.all(sources.map((source) => source.stop()));
  local.dataApi.faults.clear();
  const dataApiCalls = local.dataApi.stats.total();

  // Count, from the database and the dead-letter queue.
  const effects = await session.execute('SELECT order_id, group_id, position FROM public.demo_shipment ORDER BY id');
  const perOrder = new Map<string, number>();
  const lastPosition = new Map<string, number>();
  let orderViolations = 0;
  for (const row of effects.rows) {
    const orderId = String(row.order_id);
    perOrder.set(orderId, (perOrder.get(orderId) ?? 0) + 1);
    // Order is judged on each order's first effect, in insert order (the id); a repeated one is already
    // counted as a double.
    if (perOrder.get(orderId)! > 1) continue;
    const group = String(row.group_id);
    const position = Number(row.position);
    if (position <= (lastPosition.get(group) ?? 0)) orderViolations++;
    lastPosition.set(group, Math.max(position, lastPosition.get(group) ?? 0));
  }
  const parkedRows = await session.execute('SELECT message_key FROM inbox.parked_message');
  const parkedOrders = new Set(parkedRows.rows.map((row) => keyToOrder.get(String(row.message_key))).filter(Boolean));
  const dlqOrders = new Set(
    model.peekMessages(dlq.url).map((message) => keyToOrder.get(message.messageAttributes['idempotency-key']?.stringValue ?? '')).filter(Boolean),
  );
  let lost = 0;
  let validNotShipped = 0;
  for (const order of orders) {
    if ((perOrder.get(order.orderId) ?? 0) > 0) continue;
    if (!parkedOrders.has(order.orderId) && !dlqOrders.has(order.orderId)) lost++;
    else if (!order.poison) validNotShipped++;
  }
  const counts = [...perOrder.values()];
  const stats = sources.map((source) => source.stats);
  const result: ScenarioResult = {
    pattern: options.pattern,
    seed: options.seed,
    messages: options.messages,
    sends,
    duplicateSends,
    poison: orders.filter((order) => order.poison).length,
    invocations: stats.reduce((sum, s) => sum + s.invocations, 0),
    recordsDelivered: stats.reduce((sum, s) => sum + s.recordsDelivered, 0),
    timeouts: stats.reduce((sum, s) => sum + s.timeouts, 0),
    shipped: counts.length,
    doubled: counts.filter((count) => count > 1).length,
    extraEffects: counts.reduce((sum, count) => sum + Math.max(0, count - 1), 0),
    lost,
    validNotShipped,
    parked: parkedOrders.size,
    deadLettered: dlqOrders.size,
    orderViolations,
    dataApiCalls,
    callsPerMessage: dataApiCalls / sends,
    faultsInjected: injected,
    elapsedMs: Date.now() - started,
    completed,
  };
  sqsClient.destroy();
  dataApiClient.destroy();
  model.deleteQueue(queue.url);
  model.deleteQueue(dlq.url);
  return result;
}

/** A uniform number in [0, 1) from the seed and the parts: the same inputs always give the same fault. */
function uniform(seed: number, ...parts: (string | number)[]): number {
  const digest = createHash('sha256').update(`${seed}|${parts.join('|')}`).digest();
  return digest.readUInt32BE(0) / 2 ** 32;
}
