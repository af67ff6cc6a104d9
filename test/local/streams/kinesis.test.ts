import type { KinesisStreamRecord } from 'aws-lambda';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../local/sqs/clock.js';
import { StreamModelError } from '../../../local/streams/errors.js';
import { KinesisEventSource } from '../../../local/streams/kinesis/event-source.js';
import type { KinesisEventSourceOptions } from '../../../local/streams/kinesis/event-source.js';
import { MAX_HASH_KEY, evenHashKeyRanges, hashKeyOf } from '../../../local/streams/kinesis/hash-keys.js';
import { KinesisModel } from '../../../local/streams/kinesis/model.js';

const sources: KinesisEventSource[] = [];
afterEach(async () => {
  await Promise.all(sources.splice(0).map((s) => s.stop()));
});

function setup(shardCount = 1): { clock: ManualClock; kinesis: KinesisModel } {
  const clock = new ManualClock(Date.UTC(2025, 0, 1));
  const kinesis = new KinesisModel({ clock });
  kinesis.createStream('orders', { shardCount });
  return { clock, kinesis };
}

function source(kinesis: KinesisModel, options: Partial<KinesisEventSourceOptions> & Pick<KinesisEventSourceOptions, 'handler'>): KinesisEventSource {
  const es = new KinesisEventSource({ model: kinesis, stream: 'orders', startingPosition: 'TRIM_HORIZON', ...options });
  sources.push(es);
  return es;
}

describe('KinesisModel', () => {
  it('splits the 128-bit hash key space evenly over the shards', () => {
    const { kinesis } = setup(2);
    expect(kinesis.describeStream('orders').shards).toEqual([
      { shardId: 'shardId-000000000000', hashKeyRange: { startingHashKey: '0', endingHashKey: String((1n << 127n) - 1n) } },
      { shardId: 'shardId-000000000001', hashKeyRange: { startingHashKey: String(1n << 127n), endingHashKey: String(MAX_HASH_KEY) } },
    ]);
  });

  it('routes a record by the MD5 of its partition key, read as a 128-bit integer', () => {
    // md5("a") = 0cc175b9c0f1b6a831c399e269772661: below 2^127, so shard 0 of 2.
    expect(hashKeyOf('a')).toBe(0x0cc175b9c0f1b6a831c399e269772661n);
    // md5("b") = 92eb5ffee6ae2fec3ad71c777531578f: above 2^127, so shard 1 of 2.
    expect(hashKeyOf('b')).toBe(0x92eb5ffee6ae2fec3ad71c777531578fn);
    const { kinesis } = setup(2);
    expect(kinesis.putRecord({ stream: 'orders', partitionKey: 'a', data: 'x' }).shardId).toBe('shardId-000000000000');
    expect(kinesis.putRecord({ stream: 'orders', partitionKey: 'b', data: 'x' }).shardId).toBe('shardId-000000000001');
  });

  it('lets an explicit hash key override the partition key', () => {
    const { kinesis } = setup(2);
    expect(kinesis.putRecord({ stream: 'orders', partitionKey: 'a', data: 'x', explicitHashKey: String(MAX_HASH_KEY) }).shardId).toBe('shardId-000000000001');
    expect(kinesis.putRecord({ stream: 'orders', partitionKey: 'b', data: 'x', explicitHashKey: '0' }).shardId).toBe('shardId-000000000000');
    expect(() => kinesis.putRecord({ stream: 'orders', partitionKey: 'a', data: 'x', explicitHashKey: String(MAX_HASH_KEY + 1n) })).toThrow(/above 2\^128 - 1/);
    expect(() => kinesis.putRecord({ stream: 'orders', partitionKey: 'a', data: 'x', explicitHashKey: '01' })).toThrow(/decimal integer/);
  });

  it('hands out increasing 56-digit decimal sequence numbers, distinct in the last digits only', () => {
    const { kinesis } = setup(1);
    const numbers = Array.from({ length: 3 }, (_, i) => kinesis.putRecord({ stream: 'orders', partitionKey: 'k', data: String(i) }).sequenceNumber);
    for (const n of numbers) expect(n).toMatch(/^\d{56}$/);
    expect(BigInt(numbers[0] ?? '') < BigInt(numbers[1] ?? '')).toBe(true);
    expect(BigInt(numbers[1] ?? '') < BigInt(numbers[2] ?? '')).toBe(true);
    // As JavaScript numbers they collapse into one: only BigInt orders them.
    expect(Number(numbers[0])).toBe(Number(numbers[1]));
  });

  it('stamps the arrival time from the clock and trims records older than the retention', () => {
    const { clock, kinesis } = setup(1);
    kinesis.putRecord({ stream: 'orders', partitionKey: 'k', data: 'first' });
    clock.advance(3_600_000);
    kinesis.putRecord({ stream: 'orders', partitionKey: 'k', data: 'second' });
    const [first] = kinesis.readShard('orders', 'shardId-000000000000', undefined);
    expect(first?.approximateArrivalTimestamp).toBe(Date.UTC(2025, 0, 1));
    clock.advance(23 * 3_600_000 - 1);
    expect(kinesis.readShard('orders', 'shardId-000000000000', undefined)).toHaveLength(2);
    clock.advance(1);
    const left = kinesis.readShard('orders', 'shardId-000000000000', undefined);
    expect(left.map((r) => Buffer.from(r.data).toString())).toEqual(['second']);
    expect(kinesis.shardBounds('orders', 'shardId-000000000000').oldest).toBe(BigInt(left[0]?.sequenceNumber ?? ''));
  });

  it('keeps records for a longer retention, and refuses one outside 24 to 8760 hours', () => {
    const { clock, kinesis } = setup(1);
    kinesis.setRetentionHours('orders', 48);
    kinesis.putRecord({ stream: 'orders', partitionKey: 'k', data: 'x' });
    clock.advance(30 * 3_600_000);
    expect(kinesis.readShard('orders', 'shardId-000000000000', undefined)).toHaveLength(1);
    expect(() => kinesis.setRetentionHours('orders', 23)).toThrow(/retentionHours must be an integer from 24 to 8760/);
    expect(() => kinesis.createStream('other', { retentionHours: 8761 })).toThrow(StreamModelError);
  });

  it('refuses bad partition keys and unknown streams with Kinesis error codes', () => {
    const { kinesis } = setup(1);
    expect(() => kinesis.putRecord({ stream: 'orders', partitionKey: '', data: 'x' })).toThrow(/partitionKey must be 1 to 256/);
    expect(() => kinesis.putRecord({ stream: 'orders', partitionKey: 'x'.repeat(257), data: 'x' })).toThrow(/partitionKey must be 1 to 256/);
    try {
      kinesis.putRecord({ stream: 'nope', partitionKey: 'k', data: 'x' });
      expect.unreachable();
    } catch (error) {
      expect((error as StreamModelError).code).toBe('ResourceNotFoundException');
    }
  });

  it('computes ranges that cover the space without gaps for any shard count', () => {
    const ranges = evenHashKeyRanges(3);
    expect(ranges[0]?.startingHashKey).toBe(0n);
    expect(ranges[2]?.endingHashKey).toBe(MAX_HASH_KEY);
    expect(ranges[1]?.startingHashKey).toBe((ranges[0]?.endingHashKey ?? 0n) + 1n);
    expect(ranges[2]?.startingHashKey).toBe((ranges[1]?.endingHashKey ?? 0n) + 1n);
  });
});

describe('KinesisEventSource', () => {
  it('delivers records in Lambda’s exact Kinesis shape', async () => {
    const { kinesis } = setup(1);
    const { sequenceNumber } = kinesis.putRecord({ stream: 'orders', partitionKey: 'order-1', data: 'Hello, this is a test.' });
    const seen: KinesisStreamRecord[] = [];
    const es = source(kinesis, { handler: (event) => void seen.push(...event.Records), functionName: 'worker' });
    es.start();
    expect(await es.drain({ timeoutMs: 1000 })).toBe(true);
    expect(seen).toEqual([
      {
        kinesis: {
          kinesisSchemaVersion: '1.0',
          partitionKey: 'order-1',
          sequenceNumber,
          data: 'SGVsbG8sIHRoaXMgaXMgYSB0ZXN0Lg==',
          approximateArrivalTimestamp: Date.UTC(2025, 0, 1) / 1000,
        },
        eventSource: 'aws:kinesis',
        eventVersion: '1.0',
        eventID: `shardId-000000000000:${sequenceNumber}`,
        eventName: 'aws:kinesis:record',
        invokeIdentityArn: 'arn:aws:iam::000000000000:role/worker-role',
        awsRegion: 'us-east-1',
        eventSourceARN: 'arn:aws:kinesis:us-east-1:000000000000:stream/orders',
      },
    ]);
    expect(es.checkpoint('shardId-000000000000')).toBe(sequenceNumber);
  });

  it('sends a failure record with KinesisBatchInfo, arrival times to the millisecond', async () => {
    const { clock, kinesis } = setup(1);
    const first = kinesis.putRecord({ stream: 'orders', partitionKey: 'k', data: 'a' });
    clock.advance(1234);
    const last = kinesis.putRecord({ stream: 'orders', partitionKey: 'k', data: 'b' });
    const failures: Record<string, unknown>[] = [];
    const es = source(kinesis, {
      handler: () => {
        throw new Error('poison');
      },
      maximumRetryAttempts: 0,
      onFailure: { type: 'memory', records: failures },
    });
    es.start();
    expect(await es.drain({ timeoutMs: 1000 })).toBe(true);
    expect(failures[0]?.KinesisBatchInfo).toEqual({
      shardId: 'shardId-000000000000',
      startSequenceNumber: first.sequenceNumber,
      endSequenceNumber: last.sequenceNumber,
      approximateArrivalOfFirstRecord: '2025-01-01T00:00:00.000Z',
      approximateArrivalOfLastRecord: '2025-01-01T00:00:01.234Z',
      batchSize: 2,
      streamArn: 'arn:aws:kinesis:us-east-1:000000000000:stream/orders',
    });
    expect(failures[0]?.timestamp).toBe('2025-01-01T00:00:01.234Z');
  });

  it('compares reported sequence numbers as BigInt: the lowest wins even where Number cannot tell them apart', async () => {
    const { kinesis } = setup(1);
    for (const data of ['a', 'b', 'c']) kinesis.putRecord({ stream: 'orders', partitionKey: 'k', data });
    const batches: string[][] = [];
    const es = source(kinesis, {
      handler: (event) => {
        batches.push(event.Records.map((r) => Buffer.from(r.kinesis.data, 'base64').toString()));
        if (batches.length > 1) return undefined;
        const [, b, c] = event.Records;
        return { batchItemFailures: [{ itemIdentifier: c?.kinesis.sequenceNumber }, { itemIdentifier: b?.kinesis.sequenceNumber }] };
      },
    });
    es.start();
    expect(await es.drain({ timeoutMs: 1000 })).toBe(true);
    expect(batches).toEqual([
      ['a', 'b', 'c'],
      ['b', 'c'],
    ]);
  });

  it('skips records trimmed by the retention while a batch keeps failing', async () => {
    const { clock, kinesis } = setup(1);
    kinesis.putRecord({ stream: 'orders', partitionKey: 'k', data: 'doomed' });
    const discards: string[] = [];
    let calls = 0;
    const es = source(kinesis, {
      handler: () => {
        calls += 1;
        clock.advance(24 * 3_600_000);
        throw new Error('fails for a day');
      },
      onDiscard: (d) => discards.push(d.condition),
    });
    es.start();
    expect(await es.drain({ timeoutMs: 100 * 3_600_000 })).toBe(true);
    expect(calls).toBe(1);
    expect(discards).toEqual(['RecordAgeExceeded']);
  });

  it('refuses options outside Lambda’s limits, naming each option and the fix', () => {
    const { kinesis } = setup(1);
    const make = (options: Partial<KinesisEventSourceOptions>) => () => source(kinesis, { handler: () => undefined, ...options });
    expect(make({ batchSize: 0 })).toThrow(/batchSize must be an integer from 1 to 10000; got 0/);
    expect(make({ batchSize: 10_001 })).toThrow(/batchSize must be an integer from 1 to 10000/);
    expect(make({ maximumBatchingWindowMs: 300_001 })).toThrow(/maximumBatchingWindowMs must be an integer from 0 to 300000/);
    expect(make({ maximumRetryAttempts: -2 })).toThrow(/maximumRetryAttempts must be -1 \(no limit\) or an integer from 0 to 10000/);
    expect(make({ maximumRetryAttempts: 10_001 })).toThrow(/maximumRetryAttempts/);
    expect(make({ maximumRecordAgeSeconds: 59 })).toThrow(/maximumRecordAgeSeconds must be -1 \(no limit\) or an integer from 60 to 604800/);
    expect(make({ maximumRecordAgeSeconds: 604_801 })).toThrow(/maximumRecordAgeSeconds/);
    expect(make({ parallelizationFactor: 2 })).toThrow(/parallelizationFactor 2 is not emulated: leave it at 1/);
    expect(make({ functionTimeoutMs: 900_001 })).toThrow(/functionTimeoutMs must be an integer from 1 to 900000/);
    expect(make({ startingPosition: 'AT_TIMESTAMP' as never })).toThrow(/startingPosition must be 'TRIM_HORIZON' or 'LATEST'/);
    expect(make({ stream: 'missing' })).toThrow(/stream "missing" does not exist in the Kinesis model: create it first/);
    // Every problem at once, in one error.
    expect(make({ batchSize: 0, maximumRecordAgeSeconds: 1 })).toThrow(/^KinesisEventSource: batchSize .*maximumRecordAgeSeconds/);
  });

  it('stops a batch before the event would pass Lambda’s 6 MB payload limit', async () => {
    const { kinesis } = setup(1);
    // Each record is 1 MiB of data, about 1.4 MB once base64'd into the event: four fit, five do not.
    for (let i = 0; i < 6; i += 1) kinesis.putRecord({ stream: 'orders', partitionKey: 'k', data: new Uint8Array(1024 * 1024).fill(i) });
    const sizes: number[] = [];
    const es = source(kinesis, { handler: (event) => void sizes.push(event.Records.length), batchSize: 100 });
    es.start();
    expect(await es.drain({ timeoutMs: 1000 })).toBe(true);
    expect(sizes).toEqual([4, 2]);
  });

  it('waits for the batching window to fill a batch, then invokes with what it has', async () => {
    const { clock, kinesis } = setup(1);
    const batches: number[] = [];
    const es = source(kinesis, { handler: (event) => void batches.push(event.Records.length), batchSize: 3, maximumBatchingWindowMs: 2000 });
    es.start();
    kinesis.putRecord({ stream: 'orders', partitionKey: 'k', data: '1' });
    await new Promise((resolve) => setTimeout(resolve, 10));
    clock.advance(1000);
    kinesis.putRecord({ stream: 'orders', partitionKey: 'k', data: '2' });
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(batches).toEqual([]);
    clock.advance(1000);
    expect(await es.drain({ timeoutMs: 1000 })).toBe(true);
    expect(batches).toEqual([2]);
    for (const data of ['3', '4', '5']) kinesis.putRecord({ stream: 'orders', partitionKey: 'k', data });
    expect(await es.drain({ timeoutMs: 1000 })).toBe(true);
    // A full batch does not wait for the window.
    expect(batches).toEqual([2, 3]);
  });
});
