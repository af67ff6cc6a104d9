import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../local/sqs/clock.js';
import { SqsModel } from '../../../local/sqs/model.js';
import { KafkaEventSource } from '../../../local/streams/kafka/event-source.js';
import type { KafkaEvent, KafkaEventSourceOptions, KafkaRecord } from '../../../local/streams/kafka/event-source.js';
import { KafkaModel } from '../../../local/streams/kafka/model.js';
import type { KafkaModelOptions } from '../../../local/streams/kafka/model.js';
import { murmur2, partitionForKey } from '../../../local/streams/kafka/murmur2.js';
import type { StreamInvocationOutcome } from '../../../local/streams/types.js';

const sources: KafkaEventSource[] = [];
afterEach(async () => {
  await Promise.all(sources.splice(0).map((s) => s.stop()));
});

const T0 = Date.UTC(2025, 0, 1);
const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);
const text = (base64: string | undefined): string => Buffer.from(base64 ?? '', 'base64').toString('utf8');

function setup(partitions = 1, options: KafkaModelOptions = {}) {
  const clock = new ManualClock(T0);
  const kafka = new KafkaModel({ clock, clusterName: 'demo', ...options });
  kafka.createTopic('orders', { partitions });
  return { clock, kafka };
}

function source(kafka: KafkaModel, options: Partial<KafkaEventSourceOptions> & Pick<KafkaEventSourceOptions, 'handler'>): KafkaEventSource {
  const es = new KafkaEventSource({ model: kafka, topic: 'orders', startingPosition: 'TRIM_HORIZON', maximumBatchingWindowMs: 0, ...options });
  sources.push(es);
  return es;
}

const valuesOf = (event: KafkaEvent): string[] =>
  Object.values(event.records)
    .flat()
    .map((r) => text(r.value));

describe('murmur2 and the default partitioner', () => {
  it('matches the vectors of Kafka’s own UtilsTest.testMurmur2', () => {
    const vectors: [string, number][] = [
      ['21', -973932308],
      ['foobar', -790332482],
      ['a-little-bit-long-string', -985981536],
      ['a-little-bit-longer-string', -1486304829],
      ['lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8', -58897971],
      ['abc', 479470107],
    ];
    for (const [input, hash] of vectors) expect(murmur2(bytes(input))).toBe(hash);
  });

  it('puts a keyed record on (murmur2(key) & 0x7fffffff) % partitions', () => {
    // murmur2("21") = -973932308; & 0x7fffffff = 1173551340; % 7 = 3.
    expect(partitionForKey(bytes('21'), 7)).toBe(1173551340 % 7);
    const { kafka } = setup(7);
    expect(kafka.produce('orders', { key: '21', value: 'x' }).partition).toBe(1173551340 % 7);
  });
});

describe('KafkaModel', () => {
  it('assigns offsets from 0 per partition and keeps a key on one partition', () => {
    const { kafka } = setup(3);
    const placed = Array.from({ length: 6 }, (_, i) => kafka.produce('orders', { key: 'order-1', value: String(i) }));
    expect(new Set(placed.map((p) => p.partition)).size).toBe(1);
    expect(placed.map((p) => p.offset)).toEqual([0, 1, 2, 3, 4, 5]);
    const partition = placed[0]?.partition ?? 0;
    expect(kafka.readPartition('orders', partition, 2, 2).map((r) => [r.offset, new TextDecoder().decode(r.value ?? new Uint8Array())])).toEqual([
      [2, '2'],
      [3, '3'],
    ]);
  });

  it('takes the partitions in turn for records without a key, and honours an explicit partition', () => {
    const { kafka } = setup(3);
    expect([0, 1, 2, 3].map((i) => kafka.produce('orders', { value: String(i) }).partition)).toEqual([0, 1, 2, 0]);
    expect(kafka.produce('orders', { key: 'k', value: 'x', partition: 2 }).partition).toBe(2);
    expect(() => kafka.produce('orders', { value: 'x', partition: 3 })).toThrow(/partition 3 of topic orders does not exist/);
  });

  it('keeps committed offsets per group, topic and partition', () => {
    const { kafka } = setup(2);
    kafka.commitOffset('g1', 'orders', 0, 5);
    expect(kafka.committedOffset('g1', 'orders', 0)).toBe(5);
    expect(kafka.committedOffset('g1', 'orders', 1)).toBeUndefined();
    expect(kafka.committedOffset('g2', 'orders', 0)).toBeUndefined();
  });
});

describe('KafkaEventSource: events', () => {
  it('delivers Lambda’s MSK event: records keyed by topic-partition, base64 key and value, headers as byte arrays', async () => {
    const { kafka } = setup(1);
    kafka.produce('orders', {
      key: 'order-1',
      value: '{"id":1}',
      headers: [
        ['trace', 'abc'],
        ['raw', new Uint8Array([0, 200])],
      ],
    });
    const events: KafkaEvent[] = [];
    const es = source(kafka, { handler: (event) => void events.push(event) });
    es.start();
    expect(await es.drain({ timeoutMs: 1000 })).toBe(true);
    expect(events).toEqual([
      {
        eventSource: 'aws:kafka',
        eventSourceArn: kafka.clusterArn,
        bootstrapServers: kafka.bootstrapServers,
        records: {
          'orders-0': [
            {
              topic: 'orders',
              partition: 0,
              offset: 0,
              timestamp: T0,
              timestampType: 'CREATE_TIME',
              key: Buffer.from('order-1').toString('base64'),
              value: Buffer.from('{"id":1}').toString('base64'),
              // Java's signed bytes: 200 arrives as -56.
              headers: [{ trace: [97, 98, 99] }, { raw: [0, -56] }],
            },
          ],
        },
      },
    ]);
    expect(kafka.clusterArn).toMatch(/^arn:aws:kafka:us-east-1:000000000000:cluster\/demo\/[0-9a-f-]{36}-1$/);
    expect(kafka.bootstrapServers).toBe('b-1.demo.local.c1.kafka.us-east-1.amazonaws.com:9092,b-2.demo.local.c1.kafka.us-east-1.amazonaws.com:9092');
  });

  it('delivers a self-managed cluster’s event: eventSource SelfManagedKafka and no ARN', async () => {
    const { kafka } = setup(1, { kind: 'self-managed', bootstrapServers: 'kafka-1:9092' });
    kafka.produce('orders', { value: 'x' });
    const events: KafkaEvent[] = [];
    const es = source(kafka, { handler: (event) => void events.push(event) });
    es.start();
    expect(await es.drain({ timeoutMs: 1000 })).toBe(true);
    expect(events[0]).toMatchObject({ eventSource: 'SelfManagedKafka', bootstrapServers: 'kafka-1:9092' });
    expect(events[0]).not.toHaveProperty('eventSourceArn');
    expect(Object.values(events[0]?.records ?? {})[0]?.[0]).not.toHaveProperty('key');
  });

  it('waits 500 ms by default to gather a batch (Kafka’s default batching window)', async () => {
    const { clock, kafka } = setup(1);
    kafka.produce('orders', { value: 'x' });
    const events: KafkaEvent[] = [];
    const es = new KafkaEventSource({ model: kafka, topic: 'orders', startingPosition: 'TRIM_HORIZON', handler: (event) => void events.push(event) });
    sources.push(es);
    es.start();
    await new Promise((resolve) => setTimeout(resolve, 10));
    clock.advance(499);
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(events).toHaveLength(0);
    clock.advance(1);
    expect(await es.drain({ timeoutMs: 1000 })).toBe(true);
    expect(events).toHaveLength(1);
  });

  it('starts from the group’s committed offsets when it has them, and commits after success', async () => {
    const { kafka } = setup(1);
    for (const value of ['a', 'b', 'c']) kafka.produce('orders', { value, partition: 0 });
    kafka.commitOffset('billing', 'orders', 0, 2);
    const seen: string[] = [];
    const es = source(kafka, { consumerGroupId: 'billing', handler: (event) => void seen.push(...valuesOf(event)) });
    es.start();
    expect(await es.drain({ timeoutMs: 1000 })).toBe(true);
    expect(seen).toEqual(['c']);
    expect(kafka.committedOffset('billing', 'orders', 0)).toBe(3);
    expect(es.checkpoint('orders-0')).toBe('3');
  });
});

describe('KafkaEventSource: provisioned mode', () => {
  it('resumes a reported partition from the reported offset and commits the others past the batch', async () => {
    const { kafka } = setup(2);
    for (const value of ['p0-a', 'p0-b', 'p0-c']) kafka.produce('orders', { value, partition: 0 });
    for (const value of ['p1-a', 'p1-b']) kafka.produce('orders', { value, partition: 1 });
    const batches: string[][] = [];
    const outcomes: StreamInvocationOutcome<KafkaRecord>[] = [];
    const es = source(kafka, {
      // One consumer for both partitions: one event holds records of both, as a Lambda Kafka payload can.
      consumers: 1,
      consumerGroupId: 'g',
      batchSize: 10,
      onInvocation: (o) => outcomes.push(o),
      handler: (event) => {
        batches.push(valuesOf(event).sort());
        if (batches.length > 1) return undefined;
        return { batchItemFailures: [{ itemIdentifier: { partition: 'orders-0', offset: 2 } }, { itemIdentifier: { partition: 'orders-0', offset: 1 } }] };
      },
    });
    es.start();
    expect(await es.drain({ timeoutMs: 1000 })).toBe(true);
    expect(batches).toEqual([
      ['p0-a', 'p0-b', 'p0-c', 'p1-a', 'p1-b'],
      ['p0-b', 'p0-c'],
    ]);
    expect(outcomes[0]?.checkpoints).toEqual({ 'orders-0': '1', 'orders-1': '2' });
    expect(kafka.committedOffset('g', 'orders', 0)).toBe(3);
    expect(kafka.committedOffset('g', 'orders', 1)).toBe(2);
  });

  it('fails the whole batch when an itemIdentifier is a string, as stream sources send', async () => {
    const { kafka } = setup(1);
    kafka.produce('orders', { value: 'a' });
    const outcomes: StreamInvocationOutcome<KafkaRecord>[] = [];
    const es = source(kafka, {
      onInvocation: (o) => outcomes.push(o),
      handler: () => (outcomes.length === 0 ? { batchItemFailures: [{ itemIdentifier: '0' }] } : undefined),
    });
    es.start();
    expect(await es.drain({ timeoutMs: 1000 })).toBe(true);
    expect(outcomes.map((o) => o.result)).toEqual(['invalid-response', 'success']);
    expect(String(outcomes[0]?.error)).toMatch(/must be an object \{ partition/);
  });

  it('with a destination and no retry limit, gives up after 10 retries and sends KafkaBatchInfo', async () => {
    const { clock, kafka } = setup(1);
    const sqs = new SqsModel({ clock });
    sqs.createQueue('kafka-failures');
    kafka.produce('orders', { key: 'k', value: 'poison' });
    let calls = 0;
    const es = source(kafka, {
      onFailure: { type: 'sqs', model: sqs, queue: 'kafka-failures' },
      handler: () => {
        calls += 1;
        throw new Error('poison');
      },
    });
    es.start();
    expect(await es.drain({ timeoutMs: 1000 })).toBe(true);
    expect(calls).toBe(11);
    const failure = JSON.parse(sqs.peekMessages('kafka-failures')[0]?.body ?? '{}') as Record<string, Record<string, unknown>>;
    expect(failure.requestContext).toMatchObject({ condition: 'RetryAttemptsExhausted', approximateInvokeCount: 11 });
    expect(failure.KafkaBatchInfo).toEqual({
      batchSize: 1,
      eventSourceArn: kafka.clusterArn,
      bootstrapServers: kafka.bootstrapServers,
      payloadSize: expect.any(Number),
      recordsInfo: {
        'orders-0': {
          firstRecordOffset: '0',
          lastRecordOffset: '0',
          firstRecordTimestamp: '2025-01-01T00:00:00.000Z',
          lastRecordTimestamp: '2025-01-01T00:00:00.000Z',
        },
      },
    });
    expect(kafka.committedOffset(es.consumerGroupId, 'orders', 0)).toBe(1);
  });
});

describe('KafkaEventSource: record age', () => {
  it('skips a too-old record only when every earlier record of its partition is skipped too', async () => {
    // Kafka's CreateTime is the producer's clock, which can step back: a later record may look older.
    let now = T0;
    const clock = { now: () => now };
    const kafka = new KafkaModel({ clock });
    kafka.createTopic('orders', { partitions: 1 });
    kafka.produce('orders', { value: 'fresh' });
    now = T0 - 100_000;
    kafka.produce('orders', { value: 'stamped-earlier' });
    now = T0 + 30_000;
    const batches: string[][] = [];
    const discards: string[][] = [];
    const es = source(kafka, {
      maximumRecordAgeSeconds: 60,
      clock: new ManualClock(now),
      onDiscard: (d) => discards.push(d.records.map((r) => text(r.value))),
      handler: (event) => void batches.push(valuesOf(event)),
    });
    es.start();
    expect(await es.drain({ timeoutMs: 1000 })).toBe(true);
    // Skipping the second alone would move the checkpoint past it while the first was still to run.
    expect(batches).toEqual([['fresh', 'stamped-earlier']]);
    expect(discards).toEqual([]);
  });
});

describe('KafkaEventSource: on-demand mode', () => {
  it('does not read the response: a reported failure is committed like a success', async () => {
    const { kafka } = setup(1);
    kafka.produce('orders', { value: 'a' });
    const outcomes: StreamInvocationOutcome<KafkaRecord>[] = [];
    const es = source(kafka, {
      pollerMode: 'on-demand',
      onInvocation: (o) => outcomes.push(o),
      handler: () => ({ batchItemFailures: [{ itemIdentifier: { partition: 'orders-0', offset: 0 } }] }),
    });
    es.start();
    expect(await es.drain({ timeoutMs: 1000 })).toBe(true);
    expect(outcomes.map((o) => o.result)).toEqual(['success']);
    expect(kafka.committedOffset(es.consumerGroupId, 'orders', 0)).toBe(1);
  });

  it('retries a throwing batch until it succeeds', async () => {
    const { kafka } = setup(1);
    kafka.produce('orders', { value: 'a' });
    let calls = 0;
    const es = source(kafka, {
      pollerMode: 'on-demand',
      handler: () => {
        calls += 1;
        if (calls <= 20) throw new Error('down');
      },
    });
    es.start();
    expect(await es.drain({ timeoutMs: 1000 })).toBe(true);
    expect(calls).toBe(21);
    expect(es.stats.recordsDiscarded).toBe(0);
  });

  it('refuses the error handling controls of provisioned mode, naming each and the fix', () => {
    const { clock, kafka } = setup(1);
    const sqs = new SqsModel({ clock });
    sqs.createQueue('q');
    const make = (options: Partial<KafkaEventSourceOptions>) => () => source(kafka, { handler: () => undefined, pollerMode: 'on-demand', ...options });
    const fix = /it is an error handling control of provisioned mode: set pollerMode: 'provisioned'/;
    expect(make({ reportBatchItemFailures: true })).toThrow(/reportBatchItemFailures: it is an error handling control/);
    expect(make({ bisectBatchOnFunctionError: true })).toThrow(/bisectBatchOnFunctionError: /);
    expect(make({ maximumRetryAttempts: 3 })).toThrow(/maximumRetryAttempts: /);
    expect(make({ maximumRecordAgeSeconds: 60 })).toThrow(/maximumRecordAgeSeconds: /);
    expect(make({ onFailure: { type: 'sqs', model: sqs, queue: 'q' } })).toThrow(fix);
    expect(make({})).not.toThrow();
  });

  it('refuses more consumers than partitions, and an unknown topic', () => {
    const { kafka } = setup(2);
    expect(() => source(kafka, { handler: () => undefined, consumers: 3 })).toThrow(
      /consumers must be an integer from 1 to the partition count of orders \(2\); got 3/,
    );
    expect(() => source(kafka, { handler: () => undefined, topic: 'nope' })).toThrow(/topic "nope" does not exist in the Kafka model/);
  });
});
