import { randomUUID } from 'node:crypto';
import { RDSDataClient } from '@aws-sdk/client-rds-data';
import type { SQSClient, SQSClientConfig } from '@aws-sdk/client-sqs';
import { DataApiSession } from '../lambda/inbox/data-api/session.js';
import type { DatabaseTarget } from '../lambda/inbox/data-api/session.js';
import { firstRow, judge, readEffects, selectByKey } from './effects.js';
import type { SentMessage, Verdict } from './effects.js';
import { SqsEventSource } from './event-source.js';
import type { PendingDelete, SqsEventHandler } from './event-source.js';
import type { Faults } from './data-api/faults.js';
import type { Stats } from './data-api/stats.js';
import type { FaultSchedule } from './fault-schedule.js';
import { loadPg, loadSqsClient } from './peer-loaders.js';
import { createDatabase } from './postgres.js';
import type { OutboxTransport } from '../lambda/inbox/outbox/relay.js';
import type { HandedOn, HandedOnMessage, ScenarioMessage } from './scenario.js';
import type { QueueInfo, SqsModel } from './sqs/model.js';
import { startLocal } from './stack.js';
import type { LocalStack } from './stack.js';
import { INBOX_ENV } from '../lambda/inbox/contract.js';

// The steps of a scenario run, shared by runScenario (one consumer) and runPipeline (two consumers
// chained by a queue): a database of the run's own, its queues, the producer with duplicate sends and
// poison, event sources with the schedule's faults, and the verdict read back from the database.

/** The Data API client, target and session a run's handlers and verdict use, on the run's database. */
export function openDatabase(local: LocalStack, database: string): { client: RDSDataClient; target: DatabaseTarget; session: DataApiSession } {
  const client = new RDSDataClient({
    endpoint: local.dataApi.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
  const target: DatabaseTarget = { client, resourceArn: local.dataApi.resourceArn, secretArn: local.dataApi.secretArn, database };
  const session = new DataApiSession(target, { callTimeoutMs: 10_000, resumeDelaysMs: [250, 500, 1000, 2000] });
  return { client, target, session };
}

/**
 * Runs `body` in a new database `name` on the stack's server, so runs never see each other's rows; drops
 * it at the end, passed or failed, or a DATABASE_URL server would keep two databases per demo run.
 */
export async function inOwnDatabase<T>(local: LocalStack, name: string, body: (database: string) => Promise<T>): Promise<T> {
  await createDatabase(local.postgres.url, name);
  // Embedded PostgreSQL goes away with its data directory; a server of the user's keeps what is not dropped.
  const interrupted = local.postgres.external ? dropOnSignal(local.postgres.url, name) : undefined;
  let result: T;
  try {
    result = await body(name);
  } catch (error) {
    // The run's own error says more than a failed drop would.
    await dropDatabase(local.postgres.url, name).catch(() => {});
    throw error;
  } finally {
    interrupted?.remove();
  }
  await dropDatabase(local.postgres.url, name);
  return result;
}

/**
 * Drops the run's database on SIGINT or SIGTERM (Ctrl-C on `npm start`), which would otherwise end the
 * process without the run's cleanup, then lets the signal end the process as it would have.
 */
function dropOnSignal(serverUrl: string, name: string): { remove(): void } {
  const remove = () => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
  const onSignal = (signal: NodeJS.Signals) => {
    remove();
    void dropDatabase(serverUrl, name)
      .catch(() => {})
      .finally(() => process.kill(process.pid, signal));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  return { remove };
}

/** Drops a database a run created, with the connections the local Data API still holds to it. */
async function dropDatabase(serverUrl: string, name: string): Promise<void> {
  const pg = await loadPg();
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    // FORCE (PostgreSQL 13+): the Data API's pools keep idle connections, and a crashed worker's
    // transaction may still be open until it expires.
    await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  } catch (error) {
    throw new Error(
      `runScenario: could not drop its database ${name} (${error instanceof Error ? error.message : String(error)}); drop it by hand: DROP DATABASE "${name}"`,
      { cause: error },
    );
  } finally {
    await client.end();
  }
}

/** A queue and its dead-letter queue (maxReceiveCount 5), through the model, which takes every queue attribute. */
export function createQueueWithDlq(model: SqsModel, name: string, fifo: boolean, visibilityTimeoutSeconds: number): { queue: QueueInfo; dlq: QueueInfo } {
  const suffix = fifo ? '.fifo' : '';
  const fifoAttribute: Record<string, string> = fifo ? { FifoQueue: 'true' } : {};
  const dlq = model.createQueue(`${name}-dlq${suffix}`, fifoAttribute);
  const queue = model.createQueue(`${name}${suffix}`, {
    ...fifoAttribute,
    VisibilityTimeout: String(visibilityTimeoutSeconds),
    RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 5 }),
  });
  return { queue, dlq };
}

/** An SQS client on the stack's SQS endpoint, loaded once the optional peer is known to be there. */
export async function localSqsClient(local: LocalStack, config: Pick<SQSClientConfig, 'maxAttempts'> = {}): Promise<SQSClient> {
  const { SQSClient } = await loadSqsClient();
  return new SQSClient({ endpoint: local.sqs.endpoint, region: local.sqs.region, credentials: { accessKeyId: 'local', secretAccessKey: 'local' }, ...config });
}

/** A message as the run sends it and judges it. */
export interface Outgoing extends SentMessage {
  readonly body: string;
  /** The MessageGroupId sent: FIFO always; a standard queue only when message() names one. */
  readonly sendGroupId: string | undefined;
}

/** What {@link buildMessages} builds from. */
export interface MessagePlan {
  readonly messages: number;
  readonly message: (index: number) => ScenarioMessage;
  readonly fifo: boolean;
  readonly groups: number;
}

/** Builds every message, cuts the poison ones short, and numbers each FIFO group's messages in send order. */
export function buildMessages(plan: MessagePlan, schedule: FaultSchedule): Outgoing[] {
  const keys = new Map<string, number>();
  const positions = new Map<string, number>();
  return Array.from({ length: plan.messages }, (_, index): Outgoing => {
    const built = plan.message(index);
    if (!built || typeof built.key !== 'string' || (typeof built.body !== 'string' && (typeof built.body !== 'object' || built.body === null))) {
      throw new TypeError(`runScenario: message(${index}) must return { key: string, body: string | object, groupId?: string }; got ${JSON.stringify(built)}.`);
    }
    const earlier = keys.get(built.key);
    if (earlier !== undefined)
      throw new RangeError(`runScenario: message(${index}) and message(${earlier}) both have the key "${built.key}"; every message needs its own key.`);
    keys.set(built.key, index);
    const groupId = plan.fifo ? (built.groupId ?? `group-${index % plan.groups}`) : undefined;
    const position = groupId === undefined ? 0 : (positions.get(groupId) ?? 0) + 1;
    if (groupId !== undefined) positions.set(groupId, position);
    const text = typeof built.body === 'string' ? built.body : JSON.stringify(built.body);
    const poison = schedule.poisons(built.key);
    return {
      key: built.key,
      // Cut short: a JSON body no longer parses.
      body: poison ? `${text.slice(0, -1)}, truncated` : text,
      groupId,
      sendGroupId: groupId ?? built.groupId,
      position,
      poison,
    };
  });
}

/**
 * Sends every message once through the producer (its key as the idempotency key), and the duplicates the
 * schedule picks with the same key but a fresh deduplication id, then names them to the schedule; returns
 * how many duplicates it sent.
 */
export async function produce(model: SqsModel, client: SQSClient, queue: QueueInfo, sent: readonly Outgoing[], schedule: FaultSchedule): Promise<number> {
  // The producer imports @aws-sdk/client-sqs statically: load it only once the peer is known to be there.
  const { createProducer } = await import('../lambda/inbox/producer/producer.js');
  const producer = createProducer({ client, queueUrl: queue.url });
  let duplicateSends = 0;
  for (let from = 0; from < sent.length; from += 100) {
    const chunk = sent.slice(from, from + 100);
    await producer.send(chunk.map((message) => ({ key: message.key, body: message.body, groupId: message.sendGroupId })));
    for (const message of chunk) {
      if (!schedule.resends(message.key)) continue;
      duplicateSends++;
      await model.sendMessage({
        queue: queue.url,
        body: message.body,
        ...(message.sendGroupId !== undefined ? { messageGroupId: message.sendGroupId } : {}),
        ...(queue.fifo ? { messageDeduplicationId: `resend-${randomUUID()}` } : {}),
        messageAttributes: { 'idempotency-key': { dataType: 'String', stringValue: message.key } },
      });
    }
  }
  // Named once all are in: SQS's message ids are new every run, the schedule decides by these names.
  schedule.name(model.peekMessages(queue.url));
  return duplicateSends;
}

/** What {@link faultedSource} needs: the handler of one event source mapping and where the schedule strikes it. */
export interface FaultedSourceOptions {
  readonly model: SqsModel;
  readonly queue: QueueInfo;
  readonly handler: SqsEventHandler;
  readonly schedule: FaultSchedule;
  readonly visibilityTimeoutSeconds: number;
  readonly functionName: string;
  /** The crash hook. @default the schedule's crash-after-commit */
  readonly beforeDelete?: ((pending: PendingDelete) => 'crash' | undefined) | undefined;
}

/** An event source mapping as a scenario runs it: batches of 10, 2 at a time, with the schedule's per-invocation faults. */
export function faultedSource(options: FaultedSourceOptions): SqsEventSource {
  const { schedule, visibilityTimeoutSeconds } = options;
  return new SqsEventSource({
    model: options.model,
    queue: options.queue.url,
    handler: schedule.wrap(options.handler, visibilityTimeoutSeconds),
    batchSize: 10,
    maxConcurrency: 2,
    functionTimeoutMs: visibilityTimeoutSeconds * 1000,
    functionName: options.functionName,
    beforeDelete: options.beforeDelete ?? schedule.beforeDelete(),
  });
}

/** Whether the sources still run a handler, timed-out ones included: the database may still change. */
export function sourcesBusy(sources: readonly SqsEventSource[]): boolean {
  return sources.some((source) => source.stats.activeInvocations + source.stats.abandonedInvocations > 0);
}

/** The keys of the messages in a dead-letter queue, from their idempotency-key attribute. */
export function deadLetteredKeys(model: SqsModel, dlq: QueueInfo): Set<string> {
  return new Set(model.peekMessages(dlq.url).map((message) => message.messageAttributes['idempotency-key']?.stringValue ?? ''));
}

/**
 * Judges what was sent against the effects query (read in pages), the keys `parkedSql` returns (a `key`
 * column) and the dead-lettered keys; a dead-lettered message applied out of order is no violation.
 */
export async function readVerdict(
  session: DataApiSession,
  effectsSql: string,
  sent: readonly SentMessage[],
  parkedSql: string,
  deadLettered: ReadonlySet<string>,
): Promise<Verdict> {
  const effectsFailed = (error: unknown): never => {
    throw new Error(`runScenario: the effects query failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  };
  // One row first, so a query without a key column is named as such, not as PostgreSQL's complaint about the pages' ORDER BY.
  readEffects(await firstRow(session, effectsSql).catch(effectsFailed));
  // In pages: past some 13,000 of the demo's orders one answer would pass the Data API's 1 MiB limit.
  const effects = readEffects(await selectByKey(session, effectsSql).catch(effectsFailed));
  const parkedRows = await selectByKey(session, parkedSql);
  const verdict = judge(sent, effects, new Set(parkedRows.map((row) => String(row.key))), deadLettered);
  // A message in the dead-letter queue that was applied anyway was applied from the producer's later
  // re-send (`duplicate-sends`), which FIFO rightly delivers after its group's later messages. (Poison
  // takes the messages behind it in its batches along; under load, function timeouts can use up a
  // message's 5 receives.)
  return { ...verdict, outOfOrder: verdict.outOfOrder.filter((effect) => !deadLettered.has(effect.key)) };
}

let owned: string | undefined;

/**
 * Runs `body` as the process's one scenario: it owns `process.env` (what `setEnv` sets is restored at the
 * end) and the stack's faults and call counts until it returns. `name` is the runner's, for the refusal.
 */
export async function exclusively<T>(name: string, body: (setEnv: (env: Readonly<Record<string, string | undefined>>) => void) => Promise<T>): Promise<T> {
  if (owned !== undefined) {
    throw new Error(
      `${name}: another scenario (${owned}) is running in this process. A run owns process.env and the stack's faults: await one before starting the next.`,
    );
  }
  owned = name;
  const saved = new Map<string, string | undefined>();
  try {
    return await body((env) => {
      for (const [key, value] of Object.entries(env)) {
        if (!saved.has(key)) saved.set(key, process.env[key]);
        // undefined unsets the variable for the run.
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
    });
  } finally {
    for (const [key, value] of saved) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
    owned = undefined;
  }
}

/**
 * The variables a run sets for the handlers it makes: `INBOX_*` on the run's database, and the AWS SDK's
 * region, credentials and SQS endpoint, so that `new SQSClient({})` in a handler (an outbox's transport,
 * a producer) works against the local SQS: the SDK sends a call that names a queue to its URL's host,
 * but refuses to start without a region and credentials, and the endpoint serves calls without a queue
 * URL. `extra` comes last and may override any of them.
 */
export function runEnvironment(
  local: LocalStack,
  database: string,
  extra: Readonly<Record<string, string | undefined>> | undefined,
): Record<string, string | undefined> {
  return {
    [INBOX_ENV.DATA_API_ENDPOINT]: local.dataApi.endpoint,
    [INBOX_ENV.RESOURCE_ARN]: local.dataApi.resourceArn,
    [INBOX_ENV.SECRET_ARN]: local.dataApi.secretArn,
    [INBOX_ENV.DATABASE]: database,
    [INBOX_ENV.CONSUMER]: 'local-consumer',
    AWS_ENDPOINT_URL_SQS: local.sqs.endpoint,
    AWS_REGION: local.sqs.region,
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    ...extra,
  };
}

/** What {@link driveUntilDrained} drives: the run's consumers, and how far they are. */
export interface Drive {
  readonly local: LocalStack;
  /** Where the consumers' database calls are faulted and counted. @default the stack's Data API server */
  readonly calls?: { readonly faults: Faults; readonly stats: Stats } | undefined;
  readonly schedule: FaultSchedule;
  /** When the run started: the deadline counts from it. */
  readonly started: number;
  readonly timeoutMs: number;
  /** Starts the consumers (event sources, a sweeper). */
  start(): void;
  /** Records settled out of those to settle, for the half-way pause and `onProgress`. */
  progress(): { readonly settled: number; readonly total: number };
  /** Told of progress every tick. */
  readonly onProgress?: (() => void) | undefined;
  /** Whether everything is settled and nothing runs, waiting up to about 100 ms. */
  drained(): Promise<boolean>;
  /** Stops the consumers and waits for them. */
  stop(): Promise<void>;
}

/**
 * The skeleton every scenario runs: the stack's faults and counts cleared, the commit-point faults
 * armed, Aurora paused, the consumers started; Aurora paused again half-way; then, once drained (or at
 * the deadline), the consumers stopped and the faults cleared. Returns whether it drained, and the
 * database calls the consumers made (Data API calls, or statements through the wire proxy).
 */
export async function driveUntilDrained(drive: Drive): Promise<{ completed: boolean; dataApiCalls: number }> {
  const { local, schedule } = drive;
  const calls = drive.calls ?? local.dataApi;
  calls.stats.reset();
  calls.faults.clear();
  schedule.armCommitPoint();
  schedule.pause();
  drive.start();
  const deadline = drive.started + drive.timeoutMs;
  let pausedAgain = false;
  let completed = false;
  for (;;) {
    const { settled, total } = drive.progress();
    drive.onProgress?.();
    if (!pausedAgain && settled >= total / 2) {
      pausedAgain = true;
      schedule.pause();
    }
    if (await drive.drained()) {
      completed = true;
      break;
    }
    if (Date.now() > deadline) break;
  }
  await drive.stop();
  calls.faults.clear();
  local.sqs.faults.clear();
  return { completed, dataApiCalls: calls.stats.total() };
}

/**
 * Runs the user's own check: its findings, and its failure, as `verify: ` problems.
 */
export async function runVerify(
  verify: ((session: DataApiSession, handedOn: HandedOn) => unknown) | undefined,
  session: DataApiSession,
  handedOn: HandedOn = {},
): Promise<string[]> {
  if (!verify) return [];
  try {
    const found = (await verify(session, handedOn)) as string | readonly string[] | undefined | null;
    if (found === undefined || found === null) return [];
    return (typeof found === 'string' ? [found] : [...found]).map((problem) => `verify: ${problem}`);
  } catch (error) {
    return [`verify: ${error instanceof Error ? error.message : String(error)}`];
  }
}

/** Creates a run's own tables in its fresh database: one SQL statement per string, or a function of a session on it. */
export async function runSetup(
  name: string,
  session: DataApiSession,
  setup: string | readonly string[] | ((session: DataApiSession) => Promise<void>) | undefined,
): Promise<void> {
  if (setup === undefined) return;
  if (typeof setup === 'function') {
    await setup(session);
    return;
  }
  for (const sql of typeof setup === 'string' ? [setup] : setup) {
    try {
      await session.execute(sql);
    } catch (error) {
      throw new Error(`${name}: setup statement failed (${sql.slice(0, 80)}): ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
  }
}

/** Runs `body` on `local`, or on a stack of its own (a 2 s transaction idle timeout, so a crashed transaction expires fast), closed at the end. */
export async function onStack<T>(local: LocalStack | undefined, body: (local: LocalStack) => Promise<T>): Promise<T> {
  if (local) return body(local);
  const own = await startLocal({ dataApi: { transactionIdleTimeoutMs: 2000 } });
  try {
    return await body(own);
  } finally {
    await own.close();
  }
}

/** Messages of a queue visible, in flight or delayed. */
export function waiting(model: SqsModel, queueUrl: string): number {
  const counts = model.counts(queueUrl);
  return counts.visible + counts.inFlight + counts.delayed;
}

/**
 * Whether the queues are empty, no handler runs and (given `unsent`) no outbox row is unsent; if not,
 * after a 100 ms wait. The queues are looked at again after the outbox: a sweep may have sent its last
 * rows (and marked them) in between.
 */
export async function sqsDrained(
  model: SqsModel,
  queues: readonly string[],
  sources: readonly SqsEventSource[],
  unsent?: () => Promise<number>,
): Promise<boolean> {
  const idle = () => queues.every((queue) => waiting(model, queue) === 0) && !sourcesBusy(sources);
  // Aurora may be paused, or the next call fail: not drained yet, then.
  if (idle() && (!unsent || ((await unsent().catch(() => 1)) === 0 && idle()))) return true;
  await new Promise((resolve) => setTimeout(resolve, 100));
  return false;
}

/** The sweeper's session: without resume retries, since a sweep refused by a paused Aurora is tried again at the next. */
export function sweeperSession(target: DatabaseTarget): DataApiSession {
  return new DataApiSession(target, { callTimeoutMs: 10_000, resumeDelaysMs: [] });
}

/** The outbox's SQS transport for a run's sweeper, over the run's SQS client; `onSent` is told how many rows went out. */
export function sweeperTransport(client: SQSClient, onSent: (sent: number) => void): OutboxTransport {
  // Lazily: sqsOutbox imports @aws-sdk/client-sqs, an optional peer, which the client shows is there.
  let transport: OutboxTransport | undefined;
  return {
    async send(rows) {
      transport ??= (await import('../lambda/inbox/outbox/sqs-outbox.js')).sqsOutbox({ client }).transport;
      const results = await transport.send(rows);
      onSent(results.filter((result) => result.error === undefined).length);
      return results;
    },
  };
}

/** The messages in a destination's queue, in the order they arrived. */
export function handedOnMessages(model: SqsModel, queue: QueueInfo): HandedOnMessage[] {
  return model.peekMessages(queue.url).map((message) => ({
    body: message.body,
    key: message.messageAttributes['idempotency-key']?.stringValue,
    groupId: message.messageGroupId,
  }));
}
