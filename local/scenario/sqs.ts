import { randomUUID } from 'node:crypto';
import type { SQSClient, SQSClientConfig } from '@aws-sdk/client-sqs';
import type { OutboxTransport } from '../../lambda/inbox/outbox/relay.js';
import type { InboxSession } from '../../lambda/inbox/transport/session.js';
import { SqsEventSource } from '../event-source.js';
import type { PendingDelete, SqsEventHandler } from '../event-source.js';
import { loadSqsClient } from '../peer-loaders.js';
import type { QueueInfo, SqsModel } from '../sqs/model.js';
import type { LocalStack } from '../stack.js';
import type { FaultSchedule } from './fault-schedule.js';
import type { HandedOn } from './consumer.js';
import type { JudgedMessage } from './judge.js';
import { startSweeper, unsentRows } from './outbox-sweeper.js';
import type { PeriodicSweeper } from './outbox-sweeper.js';
import type { Production, ScenarioMessage, ScenarioSource } from './source.js';

/** A queue of a run, and its dead-letter queue (maxReceiveCount 5). */
export interface RunQueue {
  readonly queue: QueueInfo;
  readonly dlq: QueueInfo;
}

/** A message as the run sends it and judges it. */
export interface Outgoing extends JudgedMessage {
  readonly body: string;
  /** The MessageGroupId sent: FIFO always; a standard queue only when message() names one. */
  readonly sendGroupId: string | undefined;
}

/** One message a handler handed on to a destination. */
export type HandedOnMessage = HandedOn[string][number];

/** The queues of an SQS scenario: standard or FIFO, visibility and function timeout, FIFO groups for messages that name none. */
export interface SqsShape {
  readonly fifo: boolean;
  readonly visibilityTimeoutSeconds: number;
  readonly groups: number;
}

/**
 * The scenario driver's SQS adapter: the run's queues (standard or FIFO, each with its dead-letter queue),
 * the producer (through `createProducer`, the messages' keys as idempotency keys, the schedule's duplicate
 * sends and poison), Lambda's event source mappings with the schedule's per-invocation faults, and an
 * outbox sweeper when a consumer hands messages on. Drained when every consumed queue is empty, no
 * handler runs and no outbox row is unsent.
 */
export class SqsScenarioSource implements ScenarioSource {
  /** The queue the producer sends to. */
  readonly input: RunQueue;
  /** The event source mappings, one per consumer and queue. */
  readonly mappings: SqsEventSource[] = [];
  readonly #local: LocalStack;
  readonly #model: SqsModel;
  readonly #shape: SqsShape;
  readonly #client: SQSClient;
  readonly #clients: SQSClient[];
  readonly #queues: RunQueue[] = [];
  /** Queues a mapping consumes: the run is drained when they are empty. */
  readonly #consumed = new Set<string>();
  #writes = 0;
  /** Each sent message's key by its SQS message id, which its records and its dead-letter copy keep. */
  readonly #keys = new Map<string, string | undefined>();
  #sweep: (() => PeriodicSweeper) | undefined;
  #watch: InboxSession | undefined;
  #sweeper: PeriodicSweeper | undefined;

  private constructor(local: LocalStack, client: SQSClient, input: string, shape: SqsShape) {
    this.#local = local;
    this.#model = local.sqs.model;
    this.#shape = shape;
    this.#client = client;
    this.#clients = [client];
    this.input = this.queue(input);
  }

  /** The run's input queue `name` on the stack's SQS, and a producer's client, loaded once the optional peer is known to be there. */
  static async open(local: LocalStack, name: string, shape: SqsShape): Promise<SqsScenarioSource> {
    return new SqsScenarioSource(local, await localSqsClient(local), name, shape);
  }

  /** Another queue of the run (a destination, the next stage's input), with its dead-letter queue; deleted at close. */
  queue(name: string): RunQueue {
    const suffix = this.#shape.fifo ? '.fifo' : '';
    const fifoAttribute: Record<string, string> = this.#shape.fifo ? { FifoQueue: 'true' } : {};
    const dlq = this.#model.createQueue(`${name}-dlq${suffix}`, fifoAttribute);
    const queue = this.#model.createQueue(`${name}${suffix}`, {
      ...fifoAttribute,
      VisibilityTimeout: String(this.#shape.visibilityTimeoutSeconds),
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 5 }),
    });
    this.#queues.push({ queue, dlq });
    return { queue, dlq };
  }

  /** Another SQS client on the stack's endpoint, destroyed at close. */
  async client(config: Pick<SQSClientConfig, 'maxAttempts'>): Promise<SQSClient> {
    const client = await localSqsClient(this.#local, config);
    this.#clients.push(client);
    return client;
  }

  /**
   * Sends every message once through the producer (its key as the idempotency key), and the duplicates the
   * schedule picks with the same key but a fresh deduplication id, then names them to the schedule.
   */
  async produce(schedule: FaultSchedule, messages: number, message: (index: number) => ScenarioMessage): Promise<Production> {
    const sent = buildMessages(messages, message, this.#shape, schedule);
    // The producer imports @aws-sdk/client-sqs statically: load it only once the peer is known to be there.
    const { createProducer } = await import('../../lambda/inbox/producer/producer.js');
    const { queue } = this.input;
    const producer = createProducer({ client: this.#client, queueUrl: queue.url });
    let duplicateSends = 0;
    for (let from = 0; from < sent.length; from += 100) {
      const chunk = sent.slice(from, from + 100);
      await producer.send(chunk.map((outgoing) => ({ key: outgoing.key, body: outgoing.body, groupId: outgoing.sendGroupId })));
      for (const outgoing of chunk) {
        if (!schedule.resends(outgoing.key)) continue;
        duplicateSends++;
        await this.#model.sendMessage({
          queue: queue.url,
          body: outgoing.body,
          ...(outgoing.sendGroupId !== undefined ? { messageGroupId: outgoing.sendGroupId } : {}),
          ...(queue.fifo ? { messageDeduplicationId: `resend-${randomUUID()}` } : {}),
          messageAttributes: { 'idempotency-key': { dataType: 'String', stringValue: outgoing.key } },
        });
      }
    }
    // Named once all are in: SQS's message ids are new every run, the schedule decides by these names.
    const queued = this.#model.peekMessages(queue.url);
    schedule.name(queued);
    for (const message of queued) this.#keys.set(message.messageId, message.messageAttributes['idempotency-key']?.stringValue);
    this.#writes = sent.length + duplicateSends;
    return { sent, duplicateSends, writes: this.#writes };
  }

  /**
   * Subscribes `handler` to `to` as a scenario runs a mapping: batches of 10, 2 at a time, the function
   * timeout the visibility timeout, with the schedule's per-invocation faults and its crash after the
   * commits (or `beforeDelete`'s).
   */
  consume(
    to: RunQueue,
    handler: SqsEventHandler,
    schedule: FaultSchedule,
    mapping: { readonly functionName: string; readonly beforeDelete?: ((pending: PendingDelete) => 'crash' | undefined) | undefined },
  ): void {
    const seconds = this.#shape.visibilityTimeoutSeconds;
    this.#consumed.add(to.queue.url);
    this.mappings.push(
      new SqsEventSource({
        model: this.#model,
        queue: to.queue.url,
        handler: schedule.wrap(handler, seconds),
        batchSize: 10,
        maxConcurrency: 2,
        functionTimeoutMs: seconds * 1000,
        functionName: mapping.functionName,
        beforeDelete: mapping.beforeDelete ?? schedule.beforeDelete(),
      }),
    );
  }

  /**
   * Runs an outbox sweeper beside the mappings, as the scheduled function does on AWS, scaled down from a
   * minute to every half second on rows older than the function timeout; the run is not drained while
   * `watch` sees an unsent row.
   */
  sweep(session: InboxSession, transport: OutboxTransport, watch: InboxSession): void {
    const timing = { everyMs: 500, minAgeMs: this.#shape.visibilityTimeoutSeconds * 1000 };
    this.#sweep = () => startSweeper(session, transport, timing);
    this.#watch = watch;
  }

  /** The outbox's SQS transport over the run's client, for a sweeper; `onSent` is told how many rows went out. */
  outboxTransport(onSent: (sent: number) => void): OutboxTransport {
    // Lazily: sqsOutbox imports @aws-sdk/client-sqs, an optional peer, which the client shows is there.
    let transport: OutboxTransport | undefined;
    return {
      send: async (rows) => {
        transport ??= (await import('../../lambda/inbox/outbox/sqs-outbox.js')).sqsOutbox({ client: this.#client }).transport;
        const results = await transport.send(rows);
        onSent(results.filter((result) => result.error === undefined).length);
        return results;
      },
    };
  }

  /** What the sweeper did, once it ran. */
  get sweeper(): PeriodicSweeper | undefined {
    return this.#sweeper;
  }

  start(): void {
    for (const mapping of this.mappings) mapping.start();
    this.#sweeper = this.#sweep?.();
  }

  progress(): { settled: number; total: number } {
    return { settled: this.#writes - this.waiting(this.input), total: this.#writes };
  }

  /**
   * Whether the consumed queues are empty, no handler runs and no outbox row is unsent; if not, after a
   * 100 ms wait. The queues are looked at again after the outbox: a sweep may have sent its last rows (and
   * marked them) in between.
   */
  async drained(): Promise<boolean> {
    const idle = () => this.left() === 0 && !this.mappings.some((m) => m.stats.activeInvocations + m.stats.abandonedInvocations > 0);
    const watch = this.#watch;
    // Aurora may be paused, or the next call fail: not drained yet, then.
    if (idle() && (!this.#sweeper || !watch || ((await unsentRows(watch).catch(() => 1)) === 0 && idle()))) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
    return false;
  }

  async stop(): Promise<void> {
    await this.#sweeper?.stop();
    await Promise.all(this.mappings.map((mapping) => mapping.stop()));
  }

  left(): number {
    let left = 0;
    for (const url of this.#consumed) left += waiting(this.#model, url);
    return left;
  }

  /** Messages of `run`'s queue visible, in flight or delayed. */
  waiting(run: RunQueue): number {
    return waiting(this.#model, run.queue.url);
  }

  /** A sum over the mappings' counters. */
  total(count: (stats: SqsEventSource['stats']) => number): number {
    return this.mappings.reduce((sum, mapping) => sum + count(mapping.stats), 0);
  }

  /** What reached `run`'s dead-letter queue, each message by `keyOf` (its idempotency-key attribute). */
  deadLettered(run: RunQueue, keyOf = (message: { body: string; key: string | undefined }) => message.key ?? ''): Set<string> {
    return new Set(this.handedOn({ queue: run.dlq, dlq: run.dlq }).map((message) => keyOf(message)));
  }

  /** The keys of the input queue's messages with these ids (a record's messageId). */
  keysOf(messageIds: Iterable<string>): Set<string> {
    return new Set([...messageIds].map((id) => this.#keys.get(id)).filter((key): key is string => key !== undefined));
  }

  /** The messages in `run`'s queue, in the order they arrived. */
  handedOn(run: RunQueue): HandedOnMessage[] {
    return this.#model.peekMessages(run.queue.url).map((message) => ({
      body: message.body,
      key: message.messageAttributes['idempotency-key']?.stringValue,
      groupId: message.messageGroupId,
    }));
  }

  close(): void {
    for (const client of this.#clients) client.destroy();
    for (const { queue, dlq } of this.#queues) {
      this.#model.deleteQueue(queue.url);
      this.#model.deleteQueue(dlq.url);
    }
  }
}

/** An SQS client on the stack's SQS endpoint, loaded once the optional peer is known to be there. */
async function localSqsClient(local: LocalStack, config: Pick<SQSClientConfig, 'maxAttempts'> = {}): Promise<SQSClient> {
  const { SQSClient } = await loadSqsClient();
  return new SQSClient({ endpoint: local.sqs.endpoint, region: local.sqs.region, credentials: { accessKeyId: 'local', secretAccessKey: 'local' }, ...config });
}

/** Builds every message, cuts the poison ones short, and numbers each FIFO group's messages in send order. */
function buildMessages(messages: number, message: (index: number) => ScenarioMessage, shape: SqsShape, schedule: FaultSchedule): Outgoing[] {
  const keys = new Map<string, number>();
  const positions = new Map<string, number>();
  return Array.from({ length: messages }, (_, index): Outgoing => {
    const built = message(index);
    if (!built || typeof built.key !== 'string' || (typeof built.body !== 'string' && (typeof built.body !== 'object' || built.body === null))) {
      throw new TypeError(`runScenario: message(${index}) must return { key: string, body: string | object, groupId?: string }; got ${JSON.stringify(built)}.`);
    }
    const earlier = keys.get(built.key);
    if (earlier !== undefined)
      throw new RangeError(`runScenario: message(${index}) and message(${earlier}) both have the key "${built.key}"; every message needs its own key.`);
    keys.set(built.key, index);
    const groupId = shape.fifo ? (built.groupId ?? `group-${index % shape.groups}`) : undefined;
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

/** Messages of a queue visible, in flight or delayed. */
function waiting(model: SqsModel, queueUrl: string): number {
  const counts = model.counts(queueUrl);
  return counts.visible + counts.inFlight + counts.delayed;
}
