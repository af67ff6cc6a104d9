import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InboxConfigError, InboxError, kafkaHeaders, kafkaInbox } from '../../../lambda/inbox/index.js';
import type { InboxMessage, KafkaInboxOptions } from '../../../lambda/inbox/index.js';
import type { KafkaRecord } from '../../../lambda/inbox/sources/kafka.js';
import { inboxFixture, lambdaContext, recordingLogger, recordingMetrics, sqsRecord } from '../../support/inbox.js';
import type { InboxFixture } from '../../support/inbox.js';
import { kafkaEvent, kafkaRecord } from '../../support/streams.js';

type Payment = { id: string; fail?: boolean } | null;

let db: InboxFixture;
beforeAll(async () => {
  db = await inboxFixture('kafka');
  await db.query('CREATE TABLE public.payments_seen (seq bigserial PRIMARY KEY, consumer text NOT NULL, lane text NOT NULL, payment text)');
});
afterAll(async () => db.close());

let run = 0;
function make(extra: Partial<KafkaInboxOptions<Payment>> = {}) {
  const consumer = `kafka-${run++}`;
  const seen: InboxMessage<Payment, KafkaRecord>[] = [];
  const handler = kafkaInbox<Payment>({
    consumer,
    database: db.target,
    logger: recordingLogger(),
    metrics: recordingMetrics(),
    reportBatchItemFailures: true,
    apply: async (tx, message) => {
      seen.push(message);
      await tx.execute('INSERT INTO public.payments_seen (consumer, lane, payment) VALUES (:consumer, :lane, :payment)', {
        consumer,
        lane: message.groupId!,
        payment: message.body?.id ?? null,
      });
      if (message.body?.fail) throw new Error('fails');
    },
    ...extra,
  });
  const rows = async () =>
    (
      await db.query<{ lane: string; payment: string | null }>('SELECT lane, payment FROM public.payments_seen WHERE consumer = $1 ORDER BY seq', [consumer])
    ).map((r) => `${r.lane}:${r.payment}`);
  return { handler, seen, rows };
}

describe('kafkaInbox', () => {
  it('applies each record once, keyed by topic-partition@offset, headers and tombstones readable', async () => {
    const { handler, seen, rows } = make();
    const records = [
      kafkaRecord({ partition: 0, offset: 7, body: { id: 'p-1' }, headers: { 'trace-id': 't-1' } }),
      kafkaRecord({ partition: 1, offset: 3, body: null }),
    ];
    expect(await handler(kafkaEvent(records), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(seen.map((m) => m.key).sort()).toEqual(['orders-0@7', 'orders-1@3']);
    const first = seen.find((m) => m.key === 'orders-0@7')!;
    expect(kafkaHeaders(first.record)).toEqual({ 'trace-id': 't-1' });
    expect(seen.find((m) => m.key === 'orders-1@3')!.body).toBeNull();
    // The offset commit was lost: Lambda delivers the same records again; nothing is applied twice.
    await handler(kafkaEvent(records), lambdaContext());
    expect((await rows()).sort()).toEqual(['orders-0:p-1', 'orders-1:null']);
  });

  it('reports, per failed partition, the offset to resume from; other partitions go on', async () => {
    const { handler, rows } = make();
    const records = [
      kafkaRecord({ partition: 0, offset: 10, body: { id: 'a' } }),
      kafkaRecord({ partition: 0, offset: 11, body: { id: 'b', fail: true } }),
      kafkaRecord({ partition: 0, offset: 12, body: { id: 'c' } }),
      kafkaRecord({ partition: 1, offset: 4, body: { id: 'x' } }),
      kafkaRecord({ partition: 1, offset: 5, body: { id: 'y' } }),
    ];
    expect(await handler(kafkaEvent(records), lambdaContext())).toEqual({ batchItemFailures: [{ itemIdentifier: { partition: 'orders-0', offset: 11 } }] });
    expect((await rows()).sort()).toEqual(['orders-0:a', 'orders-1:x', 'orders-1:y']);
  });

  it('without a partial batch response, fails the invocation after committing what it could; the redelivery applies only the rest', async () => {
    let failB = true;
    const consumer = `kafka-whole-${run++}`;
    const applied: string[] = [];
    const handler = kafkaInbox<{ id: string }>({
      consumer,
      database: db.target,
      logger: recordingLogger(),
      metrics: recordingMetrics(),
      reportBatchItemFailures: false,
      apply: async (_, message) => {
        if (message.body.id === 'b' && failB) throw new Error('b fails');
        applied.push(message.body.id);
      },
    });
    const records = [
      kafkaRecord({ offset: 1, body: { id: 'a' } }),
      kafkaRecord({ offset: 2, body: { id: 'b' } }),
      kafkaRecord({ offset: 3, body: { id: 'c' } }),
    ];
    const error = await handler(kafkaEvent(records), lambdaContext()).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(InboxError);
    expect((error as Error).message).toMatch(/1 topic-partition\(s\) of the batch did not commit \(first: orders-0@2\); failing the invocation/);
    failB = false;
    expect(await handler(kafkaEvent(records), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(applied).toEqual(['a', 'b', 'c']);
  });

  it('reads the partial-response setting from INBOX_REPORT_BATCH_ITEM_FAILURES, and refuses a non-boolean', async () => {
    process.env.INBOX_REPORT_BATCH_ITEM_FAILURES = 'true';
    try {
      const { handler } = make({ reportBatchItemFailures: undefined });
      const records = [kafkaRecord({ offset: 1, body: { id: 'a', fail: true } })];
      expect(await handler(kafkaEvent(records), lambdaContext())).toEqual({ batchItemFailures: [{ itemIdentifier: { partition: 'orders-0', offset: 1 } }] });
    } finally {
      delete process.env.INBOX_REPORT_BATCH_ITEM_FAILURES;
    }
    expect(() => make({ reportBatchItemFailures: 'yes' as never })).toThrow(InboxConfigError);
  });

  it.each([
    ['a header', { header: 'idempotency-key' }, (id: string) => ({ headers: { 'idempotency-key': id } })],
    ['a body field', { field: 'id' }, () => ({})],
  ] as const)('takes a producer key from %s: a re-sent record is a duplicate', async (_, key, extra) => {
    const { handler, rows } = make({ key });
    await handler(kafkaEvent([kafkaRecord({ offset: 1, body: { id: 'p-9' }, ...extra('p-9') })]), lambdaContext());
    await handler(kafkaEvent([kafkaRecord({ offset: 2, body: { id: 'p-9' }, ...extra('p-9') })]), lambdaContext());
    expect(await rows()).toEqual(['orders-0:p-9']);
  });

  it("fails a record without its header alone, as its partition's restart point", async () => {
    const { handler } = make({ key: { header: 'idempotency-key' } });
    const records = [kafkaRecord({ offset: 1, body: { id: 'a' }, headers: { 'idempotency-key': 'a' } }), kafkaRecord({ offset: 2, body: { id: 'b' } })];
    expect(await handler(kafkaEvent(records), lambdaContext())).toEqual({ batchItemFailures: [{ itemIdentifier: { partition: 'orders-0', offset: 2 } }] });
  });

  it('refuses SQS events and unknown key strategies with the fix', async () => {
    const { handler } = make();
    await expect(handler({ Records: [sqsRecord()] } as never, lambdaContext())).rejects.toThrow(
      /kafkaInbox\(\) handles Kafka events \(Amazon MSK or self-managed\), which carry "records" keyed by topic-partition; got "Records" of type array\./,
    );
    await expect(handler({ eventSource: 'aws:kinesis', records: {} } as never, lambdaContext())).rejects.toThrow(
      /eventSource is "aws:kinesis" \(a Kinesis stream\)/,
    );
    expect(() => make({ key: 'message-id' as never })).toThrow(
      /"message-id" is not a key strategy; use 'offset', \{ field: 'orderId' \}, \{ header: 'idempotency-key' \}, a function of the record/,
    );
  });
});
