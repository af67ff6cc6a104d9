import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UnexpectedEventError } from '../../../lambda/inbox/errors.js';
import { kinesisInbox } from '../../../lambda/inbox/index.js';
import type { InboxMessage, InboxTransaction, KinesisInboxOptions } from '../../../lambda/inbox/index.js';
import { inboxFixture, lambdaContext, recordingLogger, recordingMetrics, sqsRecord } from '../../support/inbox.js';
import type { InboxFixture } from '../../support/inbox.js';
import { kinesisEvent, kinesisRecord } from '../../support/streams.js';
import { parkedMessages } from '../../../lambda/inbox/parked/parking.js';

type Click = { page: string; fail?: boolean };

let db: InboxFixture;
beforeAll(async () => {
  db = await inboxFixture('kinesis');
  await db.query('CREATE TABLE public.clicks (seq bigserial PRIMARY KEY, consumer text NOT NULL, page text NOT NULL)');
});
afterAll(async () => db.close());

let run = 0;
function make(extra: Partial<KinesisInboxOptions<Click>> = {}) {
  const consumer = `kinesis-${run++}`;
  const seen: InboxMessage<Click, unknown>[] = [];
  const effect = async (tx: InboxTransaction, message: InboxMessage<Click, unknown>) => {
    seen.push(message);
    await tx.execute('INSERT INTO public.clicks (consumer, page) VALUES (:consumer, :page)', { consumer, page: message.body.page });
    if (message.body.fail) throw new Error(`${message.body.page} fails`);
  };
  const metrics = recordingMetrics();
  const handler = kinesisInbox<Click>({ consumer, database: db.target, logger: recordingLogger(), metrics, apply: effect, ...extra });
  const pages = async () =>
    (await db.query<{ page: string }>('SELECT page FROM public.clicks WHERE consumer = $1 ORDER BY seq', [consumer])).map((row) => row.page);
  return { handler, seen, pages, consumer, metrics };
}

describe('kinesisInbox', () => {
  it('applies each record once, decoding data, keyed by shard and sequence number', async () => {
    const { handler, seen, pages } = make();
    const records = [kinesisRecord({ body: { page: 'a' } }), kinesisRecord({ body: { page: 'b' } })];
    expect(await handler(kinesisEvent(records), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(seen.map((m) => m.key)).toEqual(records.map((r) => r.eventID));
    expect(seen.map((m) => m.id)).toEqual(records.map((r) => r.kinesis.sequenceNumber));
    expect(seen[0]!.groupId).toBe('shardId-000000000000');
    expect(seen[0]!.record).toBe(records[0]);
    // Lambda retries the same batch (a lost checkpoint): every record is a duplicate, nothing applied again.
    expect(await handler(kinesisEvent(records), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(await pages()).toEqual(['a', 'b']);
  });

  it.each(['apply', 'applyBatch'] as const)('reports the first failed sequence number and starts nothing after it in the shard (%s)', async (mode) => {
    const effect = async (tx: InboxTransaction, message: InboxMessage<Click, unknown>) => {
      await tx.execute('INSERT INTO public.clicks (consumer, page) VALUES (:consumer, :page)', { consumer: current, page: message.body.page });
      if (message.body.fail) throw new Error('fails');
    };
    const current = `kinesis-mode-${mode}-${run++}`;
    const handler = kinesisInbox<Click>({
      consumer: current,
      database: db.target,
      logger: recordingLogger(),
      metrics: recordingMetrics(),
      ...(mode === 'apply'
        ? { apply: effect }
        : {
            applyBatch: async (tx, messages) => {
              for (const m of messages) await effect(tx, m);
            },
          }),
    });
    const records = [kinesisRecord({ body: { page: 'a' } }), kinesisRecord({ body: { page: 'b', fail: true } }), kinesisRecord({ body: { page: 'c' } })];
    expect(await handler(kinesisEvent(records), lambdaContext())).toEqual({ batchItemFailures: [{ itemIdentifier: records[1]!.kinesis.sequenceNumber }] });
    const pages = async () =>
      (await db.query<{ page: string }>('SELECT page FROM public.clicks WHERE consumer = $1 ORDER BY seq', [current])).map((row) => row.page);
    expect(await pages()).toEqual(['a']);
    // Lambda restarts from b: a is not in the retry. b now succeeds (its cause fixed): b, c applied once.
    const retried = [{ ...records[1]!, kinesis: { ...records[1]!.kinesis, data: Buffer.from(JSON.stringify({ page: 'b' })).toString('base64') } }, records[2]!];
    expect(await handler(kinesisEvent(retried), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(await pages()).toEqual(['a', 'b', 'c']);
  });

  it('parks a record whose data is not JSON and goes on with the shard', async () => {
    const { handler, pages } = make({ onPermanentError: 'park' });
    const records = [kinesisRecord({ body: { page: 'a' } }), kinesisRecord({ body: 'not json' }), kinesisRecord({ body: { page: 'c' } })];
    expect(await handler(kinesisEvent(records), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(await pages()).toEqual(['a', 'c']);
    const [parked] = await parkedMessages(handler).list();
    expect(parked).toMatchObject({
      sqsMessageId: records[1]!.kinesis.sequenceNumber,
      body: 'not json',
      errorClass: 'ParseError',
      // The data is stored once, as the payload: the record keeps an empty string in its place.
      attributes: { record: { ...records[1], kinesis: { ...records[1]!.kinesis, data: '' } } },
    });
    expect(Buffer.from(parked!.payload).toString('base64')).toBe(records[1]!.kinesis.data);
  });

  it('takes a producer key from a body field', async () => {
    const { handler, seen, pages } = make({ key: { field: 'page' } });
    await handler(kinesisEvent([kinesisRecord({ body: { page: 'p-1' } })]), lambdaContext());
    // The producer put the same click again: a new sequence number, the same key.
    await handler(kinesisEvent([kinesisRecord({ body: { page: 'p-1' } })]), lambdaContext());
    expect(seen.map((m) => m.key)).toEqual(['p-1']);
    expect(await pages()).toEqual(['p-1']);
  });

  it('fails a record without data alone, as the first failure of its shard', async () => {
    const { handler, pages } = make();
    const bad = kinesisRecord({ body: { page: 'x' } });
    delete (bad.kinesis as { data?: string }).data;
    const records = [kinesisRecord({ body: { page: 'a' } }), bad, kinesisRecord({ body: { page: 'c' } })];
    expect(await handler(kinesisEvent(records), lambdaContext())).toEqual({ batchItemFailures: [{ itemIdentifier: bad.kinesis.sequenceNumber }] });
    expect(await pages()).toEqual(['a']);
  });

  it('refuses an SQS event and a Kafka event, naming the trigger to check', async () => {
    const { handler } = make();
    await expect(handler({ Records: [sqsRecord() as never] }, lambdaContext())).rejects.toThrow(
      /kinesisInbox\(\) handles Kinesis Data Streams events; Records\[0\]\.eventSource is "aws:sqs" \(an SQS queue\), not "aws:kinesis"\. Check the function's trigger: it must be a Kinesis event source mapping/,
    );
    await expect(handler({ eventSource: 'aws:kafka', records: {} } as never, lambdaContext())).rejects.toThrow(UnexpectedEventError);
  });

  it('publishes its metrics with the source as a dimension', async () => {
    const dimensions: [string, string][] = [];
    const metrics = { ...recordingMetrics(), addDimension: (name: string, value: string) => void dimensions.push([name, value]) };
    const { handler } = make({ metrics });
    await handler(kinesisEvent([kinesisRecord({ body: { page: 'm' } })]), lambdaContext());
    expect(dimensions).toEqual([['source', 'kinesis']]);
  });

  it('looks a retried batch up in one call when this instance met its keys before; a fresh instance claims each record', async () => {
    const { handler, consumer } = make();
    const records = [kinesisRecord({ body: { page: 'f1' } }), kinesisRecord({ body: { page: 'f2' } }), kinesisRecord({ body: { page: 'f3' } })];
    await handler(kinesisEvent(records), lambdaContext());
    db.server.stats.reset();
    expect(await handler(kinesisEvent(records), lambdaContext())).toEqual({ batchItemFailures: [] });
    // One lookup settles the three duplicates: no transaction at all.
    expect(db.server.stats.total()).toBe(1);
    const fresh = kinesisInbox<Click>({ consumer, database: db.target, logger: recordingLogger(), metrics: recordingMetrics(), apply: async () => {} });
    db.server.stats.reset();
    expect(await fresh(kinesisEvent(records), lambdaContext())).toEqual({ batchItemFailures: [] });
    // Begin, claim (nothing inserted), rollback per record: nothing told this instance of a redelivery.
    expect(db.server.stats.total()).toBe(9);
  });

  it('refuses the SQS-only options', () => {
    expect(() => kinesisInbox({ consumer: 'k', database: db.target, apply: async () => {}, fifo: { onFailure: 'stop-batch' } } as never)).toThrow(
      /inbox option "fifo": is not an option of kinesisInbox\(\)/,
    );
  });
});
