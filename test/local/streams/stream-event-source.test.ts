import { afterEach, describe, expect, it } from 'vitest';
import { SqsModel } from '../../../local/sqs/model.js';
import type { StreamDiscard, StreamInvocationOutcome } from '../../../local/streams/types.js';
import { VARIANTS, eventually, settle, stopAll } from './harness.js';
import type { AnyRecord, Harness } from './harness.js';

afterEach(stopAll);

const BATCH_INFO = { kinesis: 'KinesisBatchInfo', dynamodb: 'DDBStreamBatchInfo', kafka: 'KafkaBatchInfo' } as const;

/** Records every invocation's bodies and outcome. */
function recorder(h: Harness) {
  const batches: string[][] = [];
  const outcomes: StreamInvocationOutcome<AnyRecord>[] = [];
  const discards: StreamDiscard<AnyRecord>[] = [];
  return {
    batches,
    outcomes,
    discards,
    seen: (records: AnyRecord[]) => batches.push(records.map((r) => h.body(r))),
    options: { onInvocation: (o: StreamInvocationOutcome<AnyRecord>) => outcomes.push(o), onDiscard: (d: StreamDiscard<AnyRecord>) => discards.push(d) },
  };
}

describe.each(VARIANTS)('$name: ordering and checkpoints', (variant) => {
  it('delivers each lane in order, one batch at a time per lane, and lanes in parallel', async () => {
    const h = variant.setup(3);
    const bodies = [0, 1, 2].flatMap((lane) => Array.from({ length: 12 }, (_, i) => ({ lane, body: `${lane}-${String(i).padStart(2, '0')}` })));
    // Interleave the writes, so that each lane's order must come from the lane, not the write order.
    bodies.sort((a, b) => a.body.slice(2).localeCompare(b.body.slice(2)) || a.lane - b.lane);
    for (const { lane, body } of bodies) h.put(body, lane);
    const active = new Map<string, boolean>();
    const processed = new Map<string, string[]>();
    let overlapInLane = false;
    let mostLanesAtOnce = 0;
    const es = h.source(
      async (records) => {
        const lanes = [...new Set(records.map((r) => h.lane(r)))];
        expect(lanes).toHaveLength(1);
        const lane = lanes[0] ?? '';
        if (active.get(lane)) overlapInLane = true;
        active.set(lane, true);
        mostLanesAtOnce = Math.max(mostLanesAtOnce, [...active.values()].filter(Boolean).length);
        await settle(3);
        processed.set(lane, [...(processed.get(lane) ?? []), ...records.map((r) => h.body(r))]);
        active.set(lane, false);
      },
      { batchSize: 5 },
    );
    es.start();
    expect(await es.drain({ timeoutMs: 60_000 })).toBe(true);
    expect(overlapInLane).toBe(false);
    expect(mostLanesAtOnce).toBeGreaterThan(1);
    for (const lane of [0, 1, 2]) {
      expect(processed.get(h.laneId(lane))).toEqual(Array.from({ length: 12 }, (_, i) => `${lane}-${String(i).padStart(2, '0')}`));
    }
  });

  it('moves the checkpoint only after the invocation succeeded', async () => {
    const h = variant.setup(1);
    h.put('a');
    h.put('b');
    let release = (): void => {};
    let calls = 0;
    const r = recorder(h);
    const es = h.source(async (records) => {
      r.seen(records);
      calls += 1;
      if (calls === 1) throw new Error('first delivery fails');
      await new Promise<void>((resolve) => (release = resolve));
    }, r.options);
    es.start();
    await eventually(() => calls === 2, 2000, 'the retry');
    expect(r.outcomes[0]?.result).toBe('error');
    expect(es.checkpoint(h.laneId(0))).toBeUndefined();
    release();
    await eventually(() => r.outcomes.length === 2, 2000, 'the second outcome');
    expect(r.outcomes[1]?.result).toBe('success');
    expect(es.checkpoint(h.laneId(0))).toBe(r.outcomes[1]?.checkpoints[h.laneId(0)]);
    expect(es.checkpoint(h.laneId(0))).toBeDefined();
    expect(r.batches).toEqual([
      ['a', 'b'],
      ['a', 'b'],
    ]);
  });

  it('starts at the tip with LATEST: records written before start() are never delivered', async () => {
    const h = variant.setup(1);
    h.put('old');
    const r = recorder(h);
    const es = h.source((records) => void r.seen(records), { startingPosition: 'LATEST', ...r.options });
    es.start();
    // Starting at the tip is not a checkpoint: nothing is stored until an invocation succeeds.
    expect(es.checkpoint(h.laneId(0))).toBeUndefined();
    h.put('new');
    expect(await es.drain({ timeoutMs: 1000 })).toBe(true);
    expect(r.batches).toEqual([['new']]);
    expect(es.checkpoint(h.laneId(0))).toBe(r.outcomes[0]?.checkpoints[h.laneId(0)]);
  });

  it('resumes from the checkpoint after stop() and start()', async () => {
    const h = variant.setup(1);
    h.put('a');
    const r = recorder(h);
    const es = h.source((records) => void r.seen(records), r.options);
    es.start();
    expect(await es.drain({ timeoutMs: 1000 })).toBe(true);
    await es.stop();
    h.put('b');
    es.start();
    expect(await es.drain({ timeoutMs: 1000 })).toBe(true);
    expect(r.batches).toEqual([['a'], ['b']]);
  });

  it('drain() resolves false when records wait and no source runs', async () => {
    const h = variant.setup(1);
    h.put('a');
    const es = h.source(() => undefined);
    const drained = es.drain({ timeoutMs: 1000 });
    await settle();
    h.clock.advance(1000);
    expect(await drained).toBe(false);
  });
});

describe.each(VARIANTS)('$name: partial batch response', (variant) => {
  it('checkpoints before the LOWEST reported record and retries from it', async () => {
    const h = variant.setup(1);
    for (const body of ['b1', 'b2', 'b3', 'b4', 'b5']) h.put(body);
    const r = recorder(h);
    let calls = 0;
    const es = h.source((records) => {
      r.seen(records);
      calls += 1;
      if (calls > 1) return { batchItemFailures: [] };
      const byBody = new Map(records.map((rec) => [h.body(rec), rec]));
      // Reported highest first: the lowest must still win.
      return { batchItemFailures: ['b4', 'b2'].map((b) => ({ itemIdentifier: h.failure(byBody.get(b) as AnyRecord) })) };
    }, r.options);
    es.start();
    expect(await es.drain({ timeoutMs: 1000 })).toBe(true);
    expect(r.batches).toEqual([
      ['b1', 'b2', 'b3', 'b4', 'b5'],
      ['b2', 'b3', 'b4', 'b5'],
    ]);
    expect(r.outcomes.map((o) => [o.result, o.retry])).toEqual([
      ['partial', 0],
      ['success', 1],
    ]);
    expect(es.stats).toMatchObject({ partialResponses: 1, retries: 1, recordsCheckpointed: 5 });
  });

  const complete: [string, unknown][] = [
    ['no response', undefined],
    ['a null response', null],
    ['an empty object', {}],
    ['a null batchItemFailures', { batchItemFailures: null }],
    ['an empty batchItemFailures', { batchItemFailures: [] }],
  ];
  it.each(complete)('treats %s as complete success', async (_name, response) => {
    const h = variant.setup(1);
    for (const body of ['m1', 'm2', 'm3']) h.put(body);
    const r = recorder(h);
    const es = h.source((records) => {
      r.seen(records);
      return response;
    }, r.options);
    es.start();
    expect(await es.drain({ timeoutMs: 1000 })).toBe(true);
    expect(r.batches).toEqual([['m1', 'm2', 'm3']]);
    expect(r.outcomes[0]?.result).toBe('success');
  });

  const whole: [string, (records: AnyRecord[], h: Harness) => unknown][] = [
    ['an empty-string itemIdentifier', () => ({ batchItemFailures: [{ itemIdentifier: '' }] })],
    ['a null itemIdentifier', () => ({ batchItemFailures: [{ itemIdentifier: null }] })],
    ['a misspelt itemIdentifier key', (records, h) => ({ batchItemFailures: [{ itemIdentifer: h.failure(records[1] as AnyRecord) }] })],
    [
      'an itemIdentifier naming no record of the batch',
      (records, h) => ({ batchItemFailures: [{ itemIdentifier: h.failure(records[1] as AnyRecord) }, { itemIdentifier: unknownIdentifier(h, records) }] }),
    ],
    ['a batchItemFailures that is not a list', (records, h) => ({ batchItemFailures: h.failure(records[1] as AnyRecord) })],
    ['a response that is not an object', () => 'ok'],
  ];
  it.each(whole)('fails the whole batch on %s, and retries all of it', async (_name, respond) => {
    const h = variant.setup(1);
    for (const body of ['m1', 'm2', 'm3']) h.put(body);
    const r = recorder(h);
    const es = h.source((records) => {
      r.seen(records);
      return r.batches.length === 1 ? respond(records, h) : undefined;
    }, r.options);
    es.start();
    expect(await es.drain({ timeoutMs: 1000 })).toBe(true);
    expect(r.batches).toEqual([
      ['m1', 'm2', 'm3'],
      ['m1', 'm2', 'm3'],
    ]);
    expect(r.outcomes[0]?.result).toBe('invalid-response');
    expect(r.outcomes[0]?.checkpoints).toEqual({});
    expect(es.stats.wholeBatchFailures).toBe(1);
  });

  it('with ReportBatchItemFailures off, checkpoints the whole batch on any normal return', async () => {
    const h = variant.setup(1);
    for (const body of ['m1', 'm2', 'm3']) h.put(body);
    const r = recorder(h);
    const es = h.source(
      (records) => {
        r.seen(records);
        return { batchItemFailures: [{ itemIdentifier: h.failure(records[0] as AnyRecord) }] };
      },
      { reportBatchItemFailures: false, ...r.options },
    );
    es.start();
    expect(await es.drain({ timeoutMs: 1000 })).toBe(true);
    expect(r.batches).toEqual([['m1', 'm2', 'm3']]);
    expect(r.outcomes[0]?.result).toBe('success');
    expect(es.stats.recordsCheckpointed).toBe(3);
  });
});

/** An identifier of the source's shape that names a record the batch does not hold. */
function unknownIdentifier(h: Harness, records: AnyRecord[]): unknown {
  const sample = h.failure(records[0] as AnyRecord);
  if (typeof sample === 'string') return String(BigInt(sample) + 10n ** 30n);
  return { ...(sample as object), offset: 999_999 };
}

describe.each(VARIANTS)('$name: function errors, retries and bisecting', (variant) => {
  it('retries the whole batch after a throw', async () => {
    const h = variant.setup(1);
    for (const body of ['m1', 'm2']) h.put(body);
    const r = recorder(h);
    const es = h.source((records) => {
      r.seen(records);
      if (r.batches.length === 1) throw new Error('boom');
    }, r.options);
    es.start();
    expect(await es.drain({ timeoutMs: 1000 })).toBe(true);
    expect(r.batches).toEqual([
      ['m1', 'm2'],
      ['m1', 'm2'],
    ]);
    expect(r.outcomes.map((o) => [o.result, o.retry])).toEqual([
      ['error', 0],
      ['success', 1],
    ]);
    expect((r.outcomes[0]?.error as Error).message).toBe('boom');
  });

  it('retries the whole batch after the function timeout, and drain() waits for the abandoned handler', async () => {
    const h = variant.setup(1);
    h.put('slow');
    const r = recorder(h);
    let release = (): void => {};
    const es = h.source(
      async (records) => {
        r.seen(records);
        if (r.batches.length === 1) await new Promise<void>((resolve) => (release = resolve));
      },
      { functionTimeoutMs: 5000, ...r.options },
    );
    es.start();
    await eventually(() => r.batches.length === 1);
    h.clock.advance(4999);
    await settle();
    expect(es.stats.timeouts).toBe(0);
    h.clock.advance(1);
    await eventually(() => r.outcomes.length === 2, 2000, 'the timeout and the retry');
    expect(r.outcomes.map((o) => o.result)).toEqual(['timeout', 'success']);
    expect(r.batches).toEqual([['slow'], ['slow']]);
    let drained: boolean | undefined;
    void es.drain({ timeoutMs: 60_000 }).then((result) => (drained = result));
    await settle();
    expect(drained).toBeUndefined();
    release();
    await eventually(() => drained === true, 2000, 'drain after the abandoned handler ends');
  });

  it('retries without limit when maximumRetryAttempts is -1 (the default)', async () => {
    const h = variant.setup(1);
    h.put('m1');
    const r = recorder(h);
    const es = h.source((records) => {
      r.seen(records);
      if (r.batches.length <= 50) throw new Error('not yet');
    }, r.options);
    es.start();
    expect(await es.drain({ timeoutMs: 1000 })).toBe(true);
    expect(r.batches).toHaveLength(51);
    expect(r.discards).toEqual([]);
  });

  it('bisects a failed batch: halves in order, and splitting does not count as a retry', async () => {
    const h = variant.setup(1);
    for (const body of ['g1', 'g2', 'bad', 'g4']) h.put(body);
    const r = recorder(h);
    const failures: Record<string, unknown>[] = [];
    const es = h.source(
      (records) => {
        r.seen(records);
        if (records.some((rec) => h.body(rec) === 'bad')) throw new Error('poison');
      },
      { bisectBatchOnFunctionError: true, maximumRetryAttempts: 0, onFailure: { type: 'memory', records: failures }, ...r.options },
    );
    es.start();
    expect(await es.drain({ timeoutMs: 1000 })).toBe(true);
    expect(r.batches).toEqual([['g1', 'g2', 'bad', 'g4'], ['g1', 'g2'], ['bad', 'g4'], ['bad'], ['g4']]);
    expect(r.outcomes.map((o) => o.bisected)).toEqual([true, false, true, false, false]);
    expect(r.discards.map((d) => d.records.map((rec) => h.body(rec)))).toEqual([['bad']]);
    expect(failures).toHaveLength(1);
    expect((failures[0]?.[BATCH_INFO[variant.name]] as { batchSize: number }).batchSize).toBe(1);
    expect(es.stats).toMatchObject({ bisections: 2, retries: 0, recordsDiscarded: 1, recordsCheckpointed: 3 });
  });

  it('with a partial response and bisect on, retries only the records from the reported one', async () => {
    const h = variant.setup(1);
    for (const body of ['b1', 'b2', 'b3', 'b4']) h.put(body);
    const r = recorder(h);
    const es = h.source(
      (records) => {
        r.seen(records);
        if (r.batches.length > 1) return undefined;
        return { batchItemFailures: [{ itemIdentifier: h.failure(records[2] as AnyRecord) }] };
      },
      { bisectBatchOnFunctionError: true, ...r.options },
    );
    es.start();
    expect(await es.drain({ timeoutMs: 1000 })).toBe(true);
    expect(r.batches).toEqual([
      ['b1', 'b2', 'b3', 'b4'],
      ['b3', 'b4'],
    ]);
    expect(es.stats.bisections).toBe(0);
  });
});

describe.each(VARIANTS)('$name: discarding to the on-failure destination', (variant) => {
  it('after maximumRetryAttempts, sends Lambda’s failure record to the SQS queue and moves on', async () => {
    const h = variant.setup(1);
    const sqs = new SqsModel({ clock: h.clock });
    sqs.createQueue('stream-failures');
    h.put('bad');
    h.put('also-in-batch');
    const r = recorder(h);
    const es = h.source(
      (records) => {
        r.seen(records);
        if (records.some((rec) => h.body(rec) === 'bad')) throw new Error('poison');
      },
      { maximumRetryAttempts: 2, onFailure: { type: 'sqs', model: sqs, queue: 'stream-failures' }, ...r.options },
    );
    es.start();
    expect(await es.drain({ timeoutMs: 1000 })).toBe(true);
    expect(r.batches).toHaveLength(3);
    expect(r.outcomes.map((o) => o.retry)).toEqual([0, 1, 2]);
    expect(r.outcomes[2]?.discarded?.condition).toBe('RetryAttemptsExhausted');
    const messages = sqs.peekMessages('stream-failures');
    expect(messages).toHaveLength(1);
    const failure = JSON.parse(messages[0]?.body ?? '{}') as Record<string, Record<string, unknown>>;
    expect(failure.requestContext).toEqual({
      requestId: r.outcomes[2]?.requestId,
      functionArn: expect.stringMatching(/^arn:aws:lambda:us-east-1:000000000000:function:local-\w+-consumer$/),
      condition: 'RetryAttemptsExhausted',
      approximateInvokeCount: 3,
    });
    expect(failure.responseContext).toEqual({ statusCode: 200, executedVersion: '$LATEST', functionError: 'Unhandled' });
    expect(failure.version).toBe('1.0');
    expect(failure[BATCH_INFO[variant.name]]?.batchSize).toBe(2);
    // The lane moved on: a later record is delivered and checkpointed.
    h.put('after');
    expect(await es.drain({ timeoutMs: 1000 })).toBe(true);
    expect(r.batches.at(-1)).toEqual(['after']);
  });

  it('skips records older than maximumRecordAgeSeconds at a retry, with condition RecordAgeExceeded', async () => {
    const h = variant.setup(1);
    h.put('old');
    const failures: Record<string, unknown>[] = [];
    const r = recorder(h);
    const es = h.source(
      (records) => {
        r.seen(records);
        h.clock.advance(61_000);
        throw new Error('fails while the record ages');
      },
      { maximumRecordAgeSeconds: 60, onFailure: { type: 'memory', records: failures }, ...r.options },
    );
    es.start();
    // The handler moves the clock a minute on, so the drain deadline must lie beyond it.
    expect(await es.drain({ timeoutMs: 600_000 })).toBe(true);
    expect(r.batches).toEqual([['old']]);
    expect(failures).toHaveLength(1);
    expect(failures[0]?.requestContext).toMatchObject({ condition: 'RecordAgeExceeded', approximateInvokeCount: 1 });
  });

  it('skips records already too old without invoking the function', async () => {
    const h = variant.setup(1);
    h.put('stale');
    h.clock.advance(61_000);
    h.put('fresh');
    const failures: Record<string, unknown>[] = [];
    const r = recorder(h);
    const es = h.source((records) => void r.seen(records), { maximumRecordAgeSeconds: 60, onFailure: { type: 'memory', records: failures }, ...r.options });
    es.start();
    expect(await es.drain({ timeoutMs: 1000 })).toBe(true);
    expect(r.batches).toEqual([['fresh']]);
    expect(failures).toHaveLength(1);
    expect(failures[0]?.requestContext).toMatchObject({ condition: 'RecordAgeExceeded', approximateInvokeCount: 0 });
    expect(failures[0]).not.toHaveProperty('responseContext');
    expect(r.discards[0]?.delivered).toBe(true);
  });

  it('without a destination, still skips the exhausted batch', async () => {
    const h = variant.setup(1);
    h.put('bad');
    const r = recorder(h);
    const es = h.source(
      (records) => {
        r.seen(records);
        throw new Error('poison');
      },
      { maximumRetryAttempts: 0, ...r.options },
    );
    es.start();
    expect(await es.drain({ timeoutMs: 1000 })).toBe(true);
    expect(r.discards.map((d) => [d.condition, d.delivered])).toEqual([['RetryAttemptsExhausted', false]]);
  });

  it('keeps a batch whose failure record the destination refused, and tries it again before the rest', async () => {
    const h = variant.setup(1);
    const sqs = new SqsModel({ clock: h.clock });
    sqs.createQueue('stream-failures');
    for (const body of ['g1', 'bad', 'g3', 'g4']) h.put(body);
    const r = recorder(h);
    const es = h.source(
      (records) => {
        r.seen(records);
        if (records.some((rec) => h.body(rec) === 'bad')) throw new Error('poison');
      },
      { bisectBatchOnFunctionError: true, maximumRetryAttempts: 0, onFailure: { type: 'sqs', model: sqs, queue: 'stream-failures' }, ...r.options },
    );
    sqs.deleteQueue('stream-failures');
    es.start();
    await eventually(() => es.stats.destinationErrors === 1, 2000, 'the refused failure record');
    expect(r.batches).toEqual([['g1', 'bad', 'g3', 'g4'], ['g1', 'bad'], ['g1'], ['bad']]);
    sqs.createQueue('stream-failures');
    h.clock.advance(1000);
    expect(await es.drain({ timeoutMs: 1000 })).toBe(true);
    // 'bad' again (its record must reach the destination before the lane moves past it), then the other half.
    expect(r.batches.slice(4)).toEqual([['bad'], ['g3', 'g4']]);
    expect(sqs.peekMessages('stream-failures')).toHaveLength(1);
  });

  it('refuses a destination queue that does not exist, naming the option', () => {
    const h = variant.setup(1);
    const sqs = new SqsModel({ clock: h.clock });
    expect(() => h.source(() => undefined, { onFailure: { type: 'sqs', model: sqs, queue: 'missing' } })).toThrow(/onFailure\.queue missing does not exist/);
  });
});

describe.each(VARIANTS)('$name: callbacks', (variant) => {
  it('stops the poller on an error thrown by onInvocation, and stop() rethrows it', async () => {
    const h = variant.setup(1);
    h.put('a');
    h.put('b');
    const seen: string[][] = [];
    const es = h.source((records) => void seen.push(records.map((rec) => h.body(rec))), {
      batchSize: 1,
      onInvocation: () => {
        throw new Error('a bug in the test');
      },
    });
    es.start();
    await eventually(() => seen.length === 1);
    await settle();
    // No retry of a batch whose checkpoint already moved: the poller stopped instead.
    expect(seen).toEqual([['a']]);
    await expect(es.stop()).rejects.toThrow('a bug in the test');
  });
});

describe.each(VARIANTS)('$name: crash before the checkpoint', (variant) => {
  it('checkpoints nothing and delivers the same records again from the last checkpoint', async () => {
    const h = variant.setup(1);
    h.put('done-before');
    h.put('m1');
    h.put('m2');
    const r = recorder(h);
    let crashes = 0;
    const es = h.source((records) => void r.seen(records), {
      batchSize: 1,
      beforeCheckpoint: (pending) => {
        if (pending.records.some((rec) => h.body(rec) === 'm1') && crashes === 0) {
          crashes += 1;
          return 'crash';
        }
        return undefined;
      },
      ...r.options,
    });
    es.start();
    expect(await es.drain({ timeoutMs: 1000 })).toBe(true);
    expect(r.batches).toEqual([['done-before'], ['m1'], ['m1'], ['m2']]);
    expect(r.outcomes.map((o) => o.result)).toEqual(['success', 'crash', 'success', 'success']);
    // The crashed invocation left the checkpoint where the previous one put it.
    expect(r.outcomes[1]?.checkpoints).toEqual(r.outcomes[0]?.checkpoints);
    expect(es.stats.crashes).toBe(1);
  });

  it('after a crash on a partial response, starts again from the checkpoint, not from the reported record', async () => {
    const h = variant.setup(1);
    for (const body of ['b1', 'b2', 'b3']) h.put(body);
    const r = recorder(h);
    const es = h.source(
      (records) => {
        r.seen(records);
        return r.batches.length === 1 ? { batchItemFailures: [{ itemIdentifier: h.failure(records[1] as AnyRecord) }] } : undefined;
      },
      { beforeCheckpoint: (pending) => (pending.result === 'partial' ? 'crash' : undefined), ...r.options },
    );
    es.start();
    expect(await es.drain({ timeoutMs: 1000 })).toBe(true);
    expect(r.batches).toEqual([
      ['b1', 'b2', 'b3'],
      ['b1', 'b2', 'b3'],
    ]);
  });
});
