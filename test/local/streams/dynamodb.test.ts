import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { DynamoDBRecord } from 'aws-lambda';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../local/sqs/clock.js';
import { DynamoDbEventSource } from '../../../local/streams/dynamodb/event-source.js';
import type { DynamoDbEventSourceOptions } from '../../../local/streams/dynamodb/event-source.js';
import { DynamoDbModel } from '../../../local/streams/dynamodb/model.js';
import type { DynamoDbModelOptions, StreamViewType } from '../../../local/streams/dynamodb/model.js';

const sources: DynamoDbEventSource[] = [];
afterEach(async () => {
  await Promise.all(sources.splice(0).map((s) => s.stop()));
});

const T0 = Date.UTC(2025, 0, 1, 12, 0, 0, 250);

function setup(shardCount = 1, options: DynamoDbModelOptions = {}, streamViewType?: StreamViewType) {
  const clock = new ManualClock(T0);
  const ddb = new DynamoDbModel({ clock, ...options });
  const table = ddb.createTable('orders', { partitionKey: 'id', shardCount, ...(streamViewType ? { streamViewType } : {}) });
  const all = () => table.shardIds.flatMap((shard) => ddb.readShard('orders', shard, undefined));
  return { clock, ddb, table, all };
}

function source(ddb: DynamoDbModel, options: Partial<DynamoDbEventSourceOptions> & Pick<DynamoDbEventSourceOptions, 'handler'>): DynamoDbEventSource {
  const es = new DynamoDbEventSource({ model: ddb, table: 'orders', startingPosition: 'TRIM_HORIZON', ...options });
  sources.push(es);
  return es;
}

describe("items through the SDK's own marshalling", () => {
  it('writes every JavaScript type as its AttributeValue, binary as base64 as Lambda delivers it, and reads it back', () => {
    const { ddb, all } = setup();
    const item = {
      id: 'o-1',
      s: 'text',
      n: 42,
      f: 1.5,
      big: 12345678901234567890n,
      yes: true,
      none: null,
      bin: new Uint8Array([1, 2, 255]),
      list: ['a', 1],
      map: { inner: 'x', bytes: new Uint8Array([9]) },
      ss: new Set(['a', 'b']),
      ns: new Set([1, 2]),
      bs: new Set([new Uint8Array([7])]),
    };
    ddb.putItem('orders', item);
    expect(all()[0]?.newImage).toEqual({
      id: { S: 'o-1' },
      s: { S: 'text' },
      n: { N: '42' },
      f: { N: '1.5' },
      big: { N: '12345678901234567890' },
      yes: { BOOL: true },
      none: { NULL: true },
      bin: { B: 'AQL/' },
      list: { L: [{ S: 'a' }, { N: '1' }] },
      map: { M: { inner: { S: 'x' }, bytes: { B: 'CQ==' } } },
      ss: { SS: ['a', 'b'] },
      ns: { NS: ['1', '2'] },
      bs: { BS: ['Bw=='] },
    });
    expect(ddb.getItem('orders', { id: 'o-1' })).toEqual(item);
    ddb.updateItem('orders', { id: 'o-1' }, { bin: new Uint8Array([3]) });
    expect(all()[1]?.newImage?.bin).toEqual({ B: 'Aw==' });
  });

  it("refuses what DynamoDB cannot store with the SDK's own errors, and writes nothing", () => {
    const { ddb, all } = setup();
    expect(() => ddb.putItem('orders', { id: 'o-1', a: undefined })).toThrow('Pass options.removeUndefinedValues=true');
    expect(() => ddb.putItem('orders', { id: 'o-1', a: { b: [Number.NaN] } })).toThrow('Special numeric value NaN is not allowed');
    expect(() => ddb.putItem('orders', { id: 'o-1', a: new Set() })).toThrow('Pass a non-empty set');
    expect(() => ddb.putItem('orders', { id: 'o-1', a: 2 ** 60 })).toThrow('is greater than Number.MAX_SAFE_INTEGER');
    expect(() => ddb.putItem('orders', { id: 'o-1', a: new Date() })).toThrow('Unsupported type passed');
    expect(all()).toEqual([]);
  });

  it('names the package and its install command when @aws-sdk/util-dynamodb is not installed, as the model is made', () => {
    // A process in which Node finds no @aws-sdk/util-dynamodb, as in a project that did not install it.
    const hide = `import Module from 'node:module'; const resolve = Module._resolveFilename; Module._resolveFilename = function (request, ...rest) { if (request === '@aws-sdk/util-dynamodb') throw Object.assign(new Error("Cannot find module '@aws-sdk/util-dynamodb'"), { code: 'MODULE_NOT_FOUND' }); return resolve.call(this, request, ...rest); };`;
    const model = new URL('../../../dist/local/streams/dynamodb/model.js', import.meta.url).href;
    if (!existsSync(new URL(model))) throw new Error('dist/ is missing: run `node scripts/build.mjs --js-only` (npm test does).');
    const script = `const { DynamoDbModel } = await import(${JSON.stringify(model)}); try { new DynamoDbModel(); console.log('made'); } catch (error) { console.log(error.name + ': ' + error.message); }`;
    const made = spawnSync(process.execPath, [`--import=data:text/javascript,${encodeURIComponent(hide)}`, '--input-type=module', '-e', script], {
      encoding: 'utf8',
    });
    expect(made.stdout.trim()).toBe(
      'LocalDependencyError: sqs-inbox/local needs the package "@aws-sdk/util-dynamodb", which is not installed. ' +
        'Fix: npm install --save-dev @aws-sdk/util-dynamodb (for the local DynamoDB table and its stream).',
    );
  });
});

describe('DynamoDbModel', () => {
  it('writes INSERT, MODIFY and REMOVE records with NEW_AND_OLD_IMAGES', () => {
    const { ddb, all } = setup();
    ddb.putItem('orders', { id: 'o-1', status: 'NEW' });
    ddb.updateItem('orders', { id: 'o-1' }, { status: 'PAID' });
    ddb.deleteItem('orders', { id: 'o-1' });
    const records = all();
    expect(records.map((r) => [r.eventName, r.oldImage?.status?.S, r.newImage?.status?.S])).toEqual([
      ['INSERT', undefined, 'NEW'],
      ['MODIFY', 'NEW', 'PAID'],
      ['REMOVE', 'PAID', undefined],
    ]);
    expect(records.every((r) => /^[0-9a-f]{32}$/.test(r.eventId))).toBe(true);
    expect(records.every((r) => r.keys.id?.S === 'o-1')).toBe(true);
  });

  it('writes no record for a write that changes nothing, nor for deleting a missing item', () => {
    const { ddb, all } = setup();
    ddb.putItem('orders', { id: 'o-1', status: 'NEW', tags: { a: 1, b: 2 } });
    ddb.putItem('orders', { tags: { b: 2, a: 1 }, status: 'NEW', id: 'o-1' });
    ddb.updateItem('orders', { id: 'o-1' }, { status: 'NEW' });
    ddb.deleteItem('orders', { id: 'missing' });
    expect(all()).toHaveLength(1);
  });

  it('creates the item on an update of a missing key, as UpdateItem does', () => {
    const { ddb, all } = setup();
    ddb.updateItem('orders', { id: 'o-9' }, { status: 'NEW' }, []);
    expect(all().map((r) => r.eventName)).toEqual(['INSERT']);
    expect(ddb.getItem('orders', { id: 'o-9' })).toEqual({ id: 'o-9', status: 'NEW' });
    ddb.updateItem('orders', { id: 'o-9' }, {}, ['status']);
    expect(ddb.getItem('orders', { id: 'o-9' })).toEqual({ id: 'o-9' });
    expect(() => ddb.updateItem('orders', { id: 'o-9' }, { id: 'other' })).toThrow(/part of the key/);
    expect(() => ddb.putItem('orders', { status: 'no key' })).toThrow(/required keys was not given a value: id/);
  });

  it('keeps every change of one item on one shard, in order, and spreads items over shards', () => {
    const { ddb, table } = setup(4);
    for (let i = 0; i < 40; i += 1) ddb.putItem('orders', { id: `o-${i % 10}`, v: i });
    const perShard = table.shardIds.map((shard) => ddb.readShard('orders', shard, undefined));
    expect(perShard.filter((records) => records.length > 0).length).toBeGreaterThan(1);
    for (let item = 0; item < 10; item += 1) {
      const shards = perShard.map((records) => records.filter((r) => r.keys.id?.S === `o-${item}`));
      expect(shards.filter((records) => records.length > 0)).toHaveLength(1);
      const versions = shards.flat().map((r) => Number(r.newImage?.v?.N));
      expect(versions).toEqual([item, item + 10, item + 20, item + 30]);
    }
  });

  it('hands out increasing decimal sequence numbers and keeps records for 24 hours', () => {
    const { clock, ddb, all } = setup();
    ddb.putItem('orders', { id: 'a', v: 1 });
    clock.advance(1000);
    ddb.putItem('orders', { id: 'a', v: 2 });
    const [first, second] = all();
    expect(first?.sequenceNumber).toMatch(/^\d{21}$/);
    expect(BigInt(second?.sequenceNumber ?? '') > BigInt(first?.sequenceNumber ?? '')).toBe(true);
    clock.advance(24 * 3_600_000 - 1000);
    expect(all().map((r) => r.newImage?.v?.N)).toEqual(['2']);
  });

  it('leaves the images out as the StreamViewType says', () => {
    const { ddb, all } = setup(1, {}, 'KEYS_ONLY');
    ddb.putItem('orders', { id: 'a', v: 1 });
    ddb.putItem('orders', { id: 'a', v: 2 });
    expect(all().map((r) => [r.newImage, r.oldImage])).toEqual([
      [undefined, undefined],
      [undefined, undefined],
    ]);
  });
});

describe('DynamoDbEventSource', () => {
  it('delivers records in Lambda’s exact DynamoDB Streams shape', async () => {
    const { ddb, table } = setup();
    ddb.putItem('orders', { id: 'o-1', status: 'NEW' });
    ddb.updateItem('orders', { id: 'o-1' }, { status: 'PAID' });
    const seen: DynamoDBRecord[] = [];
    const es = source(ddb, { handler: (event) => void seen.push(...event.Records) });
    es.start();
    expect(await es.drain({ timeoutMs: 1000 })).toBe(true);
    expect(seen[1]).toEqual({
      eventID: expect.stringMatching(/^[0-9a-f]{32}$/),
      eventName: 'MODIFY',
      eventVersion: '1.1',
      eventSource: 'aws:dynamodb',
      awsRegion: 'us-east-1',
      dynamodb: {
        ApproximateCreationDateTime: Math.floor(T0 / 1000),
        Keys: { id: { S: 'o-1' } },
        NewImage: { id: { S: 'o-1' }, status: { S: 'PAID' } },
        OldImage: { id: { S: 'o-1' }, status: { S: 'NEW' } },
        SequenceNumber: expect.stringMatching(/^\d{21}$/),
        SizeBytes: expect.any(Number),
        StreamViewType: 'NEW_AND_OLD_IMAGES',
      },
      eventSourceARN: table.streamArn,
    });
    expect(table.streamArn).toBe('arn:aws:dynamodb:us-east-1:000000000000:table/orders/stream/2025-01-01T12:00:00.250');
    expect(seen[0]?.dynamodb).not.toHaveProperty('OldImage');
  });

  it('compares sequence numbers as numbers, not text, where they gain a digit', async () => {
    // 999999999999999999999 < 1000000000000000000000, though "9..." sorts after "1..." as text.
    const { ddb } = setup(1, { firstSequenceNumber: 10n ** 21n - 2n });
    for (let v = 1; v <= 3; v += 1) ddb.putItem('orders', { id: 'a', v });
    const batches: string[][] = [];
    const es = source(ddb, {
      handler: (event) => {
        batches.push(event.Records.map((r) => r.dynamodb?.SequenceNumber ?? ''));
        if (batches.length > 1) return undefined;
        const [, second, third] = event.Records;
        return { batchItemFailures: [{ itemIdentifier: third?.dynamodb?.SequenceNumber }, { itemIdentifier: second?.dynamodb?.SequenceNumber }] };
      },
    });
    es.start();
    expect(await es.drain({ timeoutMs: 1000 })).toBe(true);
    expect(batches).toEqual([
      ['999999999999999999998', '999999999999999999999', '1000000000000000000000'],
      ['999999999999999999999', '1000000000000000000000'],
    ]);
  });

  it('sends a failure record with DDBStreamBatchInfo, arrival times to the second', async () => {
    const { ddb, table } = setup();
    ddb.putItem('orders', { id: 'a', v: 1 });
    const failures: Record<string, unknown>[] = [];
    const es = source(ddb, {
      handler: () => {
        throw new Error('poison');
      },
      maximumRetryAttempts: 0,
      onFailure: { type: 'memory', records: failures },
    });
    es.start();
    expect(await es.drain({ timeoutMs: 1000 })).toBe(true);
    const info = failures[0]?.DDBStreamBatchInfo as Record<string, unknown>;
    expect(info).toEqual({
      shardId: table.shardIds[0],
      startSequenceNumber: info.endSequenceNumber,
      endSequenceNumber: expect.stringMatching(/^\d{21}$/),
      approximateArrivalOfFirstRecord: '2025-01-01T12:00:00Z',
      approximateArrivalOfLastRecord: '2025-01-01T12:00:00Z',
      batchSize: 1,
      streamArn: table.streamArn,
    });
    expect(table.shardIds[0]).toMatch(/^shardId-\d{20}-[0-9a-f]{8}$/);
  });

  it('refuses an unknown table, naming the fix', () => {
    const { ddb } = setup();
    expect(() => source(ddb, { handler: () => undefined, table: 'nope' })).toThrow(/table "nope" does not exist in the DynamoDB model: create it first/);
  });
});
