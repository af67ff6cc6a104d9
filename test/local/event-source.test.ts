import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { afterEach, describe, expect, it } from 'vitest';
import { SqsEventSource } from '../../local/event-source.js';
import type { InvocationOutcome, SqsEventHandler, SqsEventSourceOptions } from '../../local/event-source.js';
import { ManualClock } from '../../local/sqs/clock.js';
import { SqsModel } from '../../local/sqs/model.js';
import { eventually, settle } from '../support/sqs.js';

const sources: SqsEventSource[] = [];
afterEach(async () => {
  await Promise.all(sources.splice(0).map((s) => s.stop()));
});

interface Setup {
  clock: ManualClock;
  model: SqsModel;
  queue: string;
}

function setup(kind: 'standard' | 'fifo', attributes: Record<string, string> = {}): Setup {
  const clock = new ManualClock();
  const model = new SqsModel({ clock });
  const queue = kind === 'fifo' ? 'orders.fifo' : 'orders';
  model.createQueue(queue, { VisibilityTimeout: '30', ...(kind === 'fifo' ? { FifoQueue: 'true' } : {}), ...attributes });
  return { clock, model, queue };
}

function source(s: Setup, handler: SqsEventHandler, options: Partial<SqsEventSourceOptions> = {}): SqsEventSource {
  const es = new SqsEventSource({ model: s.model, queue: s.queue, handler, functionTimeoutMs: 10_000, ...options });
  sources.push(es);
  return es;
}

async function sendAll(s: Setup, bodies: string[], group?: (body: string) => string): Promise<string[]> {
  const ids: string[] = [];
  for (const body of bodies) {
    const g = group?.(body);
    const r = await s.model.sendMessage({
      queue: s.queue,
      body,
      ...(g !== undefined ? { messageGroupId: g, messageDeduplicationId: body } : {}),
    });
    ids.push(r.messageId);
  }
  return ids;
}

const remaining = (s: Setup): string[] =>
  s.model
    .peekMessages(s.queue)
    .map((m) => m.body)
    .sort();

describe('response rules', () => {
  type Respond = (records: SQSRecord[]) => unknown;
  const second = (records: SQSRecord[]): string => records[1]?.messageId ?? 'missing';
  const cases: [string, Respond, string[]][] = [
    ['no response deletes every record', () => undefined, []],
    ['a null response deletes every record', () => null, []],
    ['an empty object deletes every record', () => ({}), []],
    ['a null batchItemFailures deletes every record', () => ({ batchItemFailures: null }), []],
    ['an empty batchItemFailures deletes every record', () => ({ batchItemFailures: [] }), []],
    ['a reported failure keeps only that record', (r) => ({ batchItemFailures: [{ itemIdentifier: second(r) }] }), ['m2']],
    ['an empty itemIdentifier fails the whole batch', () => ({ batchItemFailures: [{ itemIdentifier: '' }] }), ['m1', 'm2', 'm3']],
    ['a null itemIdentifier fails the whole batch', () => ({ batchItemFailures: [{ itemIdentifier: null }] }), ['m1', 'm2', 'm3']],
    ['a misspelt itemIdentifier key fails the whole batch', (r) => ({ batchItemFailures: [{ itemIdentifer: second(r) }] }), ['m1', 'm2', 'm3']],
    [
      'an unknown itemIdentifier fails the whole batch',
      (r) => ({ batchItemFailures: [{ itemIdentifier: second(r) }, { itemIdentifier: 'nope' }] }),
      ['m1', 'm2', 'm3'],
    ],
    ['a non-list batchItemFailures fails the whole batch', () => ({ batchItemFailures: 'm2' }), ['m1', 'm2', 'm3']],
    ['a response that is not an object fails the whole batch', () => 'ok', ['m1', 'm2', 'm3']],
  ];

  it.each(cases)('%s', async (_name, respond, kept) => {
    const s = setup('standard');
    await sendAll(s, ['m1', 'm2', 'm3']);
    const outcomes: InvocationOutcome[] = [];
    const es = source(s, (event) => respond(event.Records) as SQSBatchResponse, { onInvocation: (o) => outcomes.push(o) });
    es.start();
    await eventually(() => outcomes.length === 1, 2000, 'one invocation');
    expect(outcomes[0]?.records).toHaveLength(3);
    expect(remaining(s)).toEqual(kept);
    expect(es.stats.recordsDeleted).toBe(3 - kept.length);
  });

  it('deletes nothing when the handler throws', async () => {
    const s = setup('standard');
    await sendAll(s, ['m1', 'm2']);
    const es = source(s, () => {
      throw new Error('boom');
    });
    es.start();
    await eventually(() => es.stats.handlerErrors === 1);
    expect(remaining(s)).toEqual(['m1', 'm2']);
    expect(s.model.counts(s.queue)).toEqual({ visible: 0, inFlight: 2, delayed: 0 });
  });

  it('deletes the whole batch on any normal return when ReportBatchItemFailures is off', async () => {
    const s = setup('standard');
    await sendAll(s, ['m1', 'm2']);
    const es = source(s, (event) => ({ batchItemFailures: [{ itemIdentifier: event.Records[0]?.messageId ?? '' }] }), {
      reportBatchItemFailures: false,
    });
    es.start();
    await eventually(() => es.stats.invocations === 1 && es.stats.activeInvocations === 0);
    expect(remaining(s)).toEqual([]);
  });

  it('redelivers a reported failure after its visibility timeout with a higher receive count', async () => {
    const s = setup('standard');
    await sendAll(s, ['m1', 'm2']);
    const seen: SQSRecord[] = [];
    const es = source(s, (event) => {
      seen.push(...event.Records);
      const failed = event.Records.filter((r) => r.body === 'm2' && r.attributes.ApproximateReceiveCount === '1');
      return { batchItemFailures: failed.map((r) => ({ itemIdentifier: r.messageId })) };
    });
    es.start();
    await eventually(() => es.stats.invocations === 1 && es.stats.activeInvocations === 0);
    await settle();
    expect(es.stats.invocations).toBe(1);
    s.clock.advance(30_000);
    await eventually(() => es.stats.invocations === 2 && es.stats.activeInvocations === 0);
    expect(seen.map((r) => [r.body, r.attributes.ApproximateReceiveCount])).toEqual([
      ['m1', '1'],
      ['m2', '1'],
      ['m2', '2'],
    ]);
    expect(await es.drain({ timeoutMs: 1000 })).toBe(true);
    expect(es.stats).toMatchObject({ recordsDelivered: 3, recordsDeleted: 2, recordsFailed: 1 });
  });
});

describe('timeouts', () => {
  it('abandons an invocation at the function timeout, deletes nothing, and shows the remaining time shrinking', async () => {
    const s = setup('standard');
    await sendAll(s, ['slow']);
    const remainingTimes: number[] = [];
    let release = () => {};
    const es = source(
      s,
      async (_event, context) => {
        remainingTimes.push(context.getRemainingTimeInMillis());
        await new Promise<void>((resolve) => (release = resolve));
      },
      { functionTimeoutMs: 5000 },
    );
    es.start();
    await eventually(() => remainingTimes.length === 1);
    s.clock.advance(4999);
    await settle();
    expect(es.stats.timeouts).toBe(0);
    s.clock.advance(1);
    await eventually(() => es.stats.timeouts === 1);
    expect(remainingTimes).toEqual([5000]);
    expect(s.model.counts(s.queue)).toEqual({ visible: 0, inFlight: 1, delayed: 0 });
    expect(es.stats.abandonedInvocations).toBe(1);
    release();
    await eventually(() => es.stats.abandonedInvocations === 0);
  });

  it('makes drain() wait for a timed-out handler that is still running, as Lambda would have killed it', async () => {
    const s = setup('standard');
    await sendAll(s, ['slow']);
    let calls = 0;
    let release = () => {};
    const es = source(
      s,
      async () => {
        // The first delivery hangs past the timeout; the redelivery succeeds at once.
        if (++calls === 1) await new Promise<void>((resolve) => (release = resolve));
      },
      { functionTimeoutMs: 5000 },
    );
    es.start();
    await eventually(() => calls === 1);
    s.clock.advance(5000);
    await eventually(() => es.stats.timeouts === 1);
    s.clock.advance(30_000);
    await eventually(() => es.stats.recordsDeleted === 1);
    let drained: boolean | undefined;
    void es.drain({ timeoutMs: 60_000 }).then((result) => (drained = result));
    await settle();
    expect(drained).toBeUndefined();
    release();
    await eventually(() => drained === true);
  });

  it('refuses a function timeout longer than the queue visibility timeout', () => {
    const s = setup('standard', { VisibilityTimeout: '5' });
    expect(() => source(s, () => undefined, { functionTimeoutMs: 5001 })).toThrow(/functionTimeoutMs \(5001\) exceeds the visibility timeout/);
  });
});

describe('FIFO', () => {
  it('runs one batch per message group at a time and keeps each group in order', async () => {
    const s = setup('fifo');
    const groups = ['a', 'b', 'c'];
    const bodies = groups.flatMap((g) => Array.from({ length: 12 }, (_, i) => `${g}-${String(i).padStart(2, '0')}`));
    // Interleave the sends so that order per group must come from the grouping, not the send order.
    bodies.sort((x, y) => x.slice(2).localeCompare(y.slice(2)) || x.localeCompare(y));
    await sendAll(s, bodies, (b) => b.slice(0, 1));
    const active = new Map<string, number>();
    const processed = new Map<string, string[]>();
    let overlapInGroup = false;
    let maxGroupsAtOnce = 0;
    const es = source(
      s,
      async (event: SQSEvent) => {
        const mine = [...new Set(event.Records.map((r) => r.attributes.MessageGroupId ?? ''))];
        for (const g of mine) {
          if (active.get(g)) overlapInGroup = true;
          active.set(g, 1);
        }
        maxGroupsAtOnce = Math.max(maxGroupsAtOnce, [...active.values()].filter(Boolean).length);
        await settle(3);
        for (const r of event.Records) {
          const g = r.attributes.MessageGroupId ?? '';
          processed.set(g, [...(processed.get(g) ?? []), r.body]);
        }
        for (const g of mine) active.set(g, 0);
      },
      { batchSize: 5, maxConcurrency: 3 },
    );
    es.start();
    expect(await es.drain({ timeoutMs: 60_000 })).toBe(true);
    expect(overlapInGroup).toBe(false);
    expect(maxGroupsAtOnce).toBeGreaterThan(1);
    for (const g of groups) {
      expect(processed.get(g)).toEqual(Array.from({ length: 12 }, (_, i) => `${g}-${String(i).padStart(2, '0')}`));
    }
  });

  it('holds back the rest of a group until a failed record has been retried', async () => {
    const s = setup('fifo');
    await sendAll(s, ['g-1', 'g-2', 'g-3'], () => 'g');
    const order: string[] = [];
    const es = source(
      s,
      (event) => {
        const failures: { itemIdentifier: string }[] = [];
        for (const r of event.Records) {
          if (failures.length > 0 || (r.body === 'g-2' && r.attributes.ApproximateReceiveCount === '1')) {
            failures.push({ itemIdentifier: r.messageId });
          } else {
            order.push(r.body);
          }
        }
        return { batchItemFailures: failures };
      },
      { batchSize: 10 },
    );
    es.start();
    await eventually(() => es.stats.invocations === 1 && es.stats.activeInvocations === 0);
    await settle();
    expect(order).toEqual(['g-1']);
    expect(es.stats.invocations).toBe(1);
    s.clock.advance(30_000);
    expect(await es.drain({ timeoutMs: 1000 })).toBe(true);
    expect(order).toEqual(['g-1', 'g-2', 'g-3']);
  });

  it('rejects a batch size over 10 and a batching window on FIFO', () => {
    const s = setup('fifo');
    expect(() => source(s, () => undefined, { batchSize: 11 })).toThrow(/batchSize must be an integer from 1 to 10 for a FIFO queue/);
    expect(() => source(s, () => undefined, { maximumBatchingWindowMs: 1000 })).toThrow(/must be 0 for a FIFO queue/);
  });
});

describe('concurrency and batching', () => {
  it('never runs more than maxConcurrency invocations at once, and reaches it under load', async () => {
    const s = setup('standard');
    await sendAll(
      s,
      Array.from({ length: 30 }, (_, i) => `m${i}`),
    );
    const es = source(s, () => settle(3), { batchSize: 1, maxConcurrency: 3 });
    es.start();
    expect(await es.drain({ timeoutMs: 60_000 })).toBe(true);
    expect(es.stats.maxConcurrentInvocations).toBe(3);
    expect(es.stats.invocations).toBe(30);
  });

  it('refuses maxConcurrency outside 2..1000 and a batch over 10 without a window', () => {
    const s = setup('standard');
    expect(() => source(s, () => undefined, { maxConcurrency: 1 })).toThrow(/maxConcurrency must be an integer from 2 to 1000/);
    expect(() => source(s, () => undefined, { batchSize: 50 })).toThrow(/at least 1000 when batchSize \(50\) is over 10/);
  });

  it('invokes a full batch at once, and a partial one only when the batching window closes', async () => {
    const s = setup('standard');
    await sendAll(
      s,
      Array.from({ length: 25 }, (_, i) => `m${i}`),
    );
    const sizes: number[] = [];
    const es = source(s, (event) => void sizes.push(event.Records.length), { batchSize: 12, maximumBatchingWindowMs: 2000, maxConcurrency: 2 });
    es.start();
    await eventually(() => sizes.length === 2);
    await settle();
    expect(sizes).toEqual([12, 12]);
    s.clock.advance(1999);
    await settle();
    expect(sizes).toEqual([12, 12]);
    s.clock.advance(1);
    await eventually(() => sizes.length === 3);
    expect(sizes).toEqual([12, 12, 1]);
  });
});

describe('faults and redrive', () => {
  it('deletes nothing when the worker crashes after the handler returned, and redelivers after the visibility timeout', async () => {
    const s = setup('standard');
    await sendAll(s, ['m1', 'm2']);
    const handled: string[] = [];
    let crashes = 1;
    const es = source(s, (event) => void handled.push(...event.Records.map((r) => r.body)), {
      beforeDelete: () => (crashes-- > 0 ? 'crash' : undefined),
    });
    es.start();
    await eventually(() => es.stats.crashes === 1 && es.stats.activeInvocations === 0);
    expect(remaining(s)).toEqual(['m1', 'm2']);
    s.clock.advance(30_000);
    expect(await es.drain({ timeoutMs: 1000 })).toBe(true);
    expect(handled).toEqual(['m1', 'm2', 'm1', 'm2']);
    expect(es.stats).toMatchObject({ invocations: 2, crashes: 1, recordsDeleted: 2 });
  });

  it('moves a record that keeps failing to the dead-letter queue at maxReceiveCount', async () => {
    const clock = new ManualClock();
    const model = new SqsModel({ clock });
    const dlq = model.createQueue('dlq');
    model.createQueue('src', { VisibilityTimeout: '30', RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 3 }) });
    await model.sendMessage({ queue: 'src', body: 'poison' });
    const s: Setup = { clock, model, queue: 'src' };
    const es = source(s, () => {
      throw new Error('always');
    });
    es.start();
    for (let attempt = 1; attempt <= 3; attempt += 1) {
      await eventually(() => es.stats.handlerErrors === attempt && es.stats.activeInvocations === 0);
      clock.advance(30_000);
    }
    expect(await es.drain({ timeoutMs: 1000 })).toBe(true);
    expect(es.stats.invocations).toBe(3);
    expect(model.peekMessages('dlq').map((m) => [m.body, m.receiveCount])).toEqual([['poison', 3]]);
  });

  it('does not delete a record whose receipt handle was superseded after the visibility timeout expired mid-invocation', async () => {
    const s = setup('standard');
    await sendAll(s, ['m1']);
    let release: (() => void) | undefined;
    let calls = 0;
    const es = source(
      s,
      async () => {
        calls += 1;
        if (calls === 1) await new Promise<void>((r) => (release = r));
      },
      { maxConcurrency: 2, functionTimeoutMs: 30_000 },
    );
    es.start();
    await eventually(() => release !== undefined);
    // Visibility expires while the first invocation still runs (its timeout equals the visibility).
    s.clock.advance(29_999);
    await settle();
    s.model.changeMessageVisibility(s.queue, s.model.peekMessages(s.queue)[0]?.receiptHandle ?? '', 0);
    await eventually(() => calls === 2 && es.stats.activeInvocations === 1);
    release?.();
    await eventually(() => es.stats.activeInvocations === 0);
    expect(es.stats.staleDeletes).toBe(1);
    expect(es.stats.recordsDeleted).toBe(1);
  });
});

describe('event and context shape', () => {
  it('passes Lambda-shaped records and a Lambda-like context', async () => {
    const s = setup('fifo');
    await s.model.sendMessage({
      queue: s.queue,
      body: '{"a":1}',
      messageGroupId: 'g',
      messageDeduplicationId: 'd',
      messageAttributes: { kind: { dataType: 'String', stringValue: 'order' } },
    });
    let event: SQSEvent | undefined;
    let name = '';
    let requestId = '';
    const es = source(
      s,
      (e, context) => {
        event = e;
        name = context.functionName;
        requestId = context.awsRequestId;
      },
      { functionName: 'order-worker' },
    );
    es.start();
    await eventually(() => event !== undefined);
    const record = event?.Records[0];
    expect(record).toMatchObject({
      body: '{"a":1}',
      eventSource: 'aws:sqs',
      eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:orders.fifo',
      awsRegion: 'us-east-1',
      attributes: { ApproximateReceiveCount: '1', MessageGroupId: 'g', MessageDeduplicationId: 'd', SenderId: '000000000000' },
      messageAttributes: { kind: { dataType: 'String', stringValue: 'order', stringListValues: [], binaryListValues: [] } },
    });
    expect(record?.md5OfMessageAttributes).toMatch(/^[0-9a-f]{32}$/);
    expect(record?.attributes.SequenceNumber).toMatch(/^\d+$/);
    expect(name).toBe('order-worker');
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('reports drain as false when messages are still in flight at the timeout', async () => {
    const s = setup('standard');
    await sendAll(s, ['m1']);
    const es = source(s, () => {
      throw new Error('fail');
    });
    es.start();
    await eventually(() => es.stats.handlerErrors === 1);
    const drained = es.drain({ timeoutMs: 5000 });
    await settle();
    s.clock.advance(5000);
    expect(await drained).toBe(false);
  });
});
